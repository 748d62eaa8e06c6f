"""A real documentation site crawled from loopback: the Python 3 HTML documentation.

Debian's ``python3-doc`` package installs the docs (about 530 pages, 51 MB of HTML)
under /usr/share/doc/python3/html; Python's own ``http.server`` serves them on
127.0.0.1 (it answers If-Modified-Since with 304, and sends no ETag). Measured:

- pages/s crawled and ingested, keyword-only and hybrid (local MiniLM embeddings);
- the unchanged re-crawl against the first crawl (conditional requests, nothing parsed);
- hit@1 / hit@5 on the questions in ``benchmarks/data/python_docs_questions.yaml``,
  written before any result was seen (a hit is a page the question lists);
- how many section citations (page URL + heading anchor) name an anchor that exists on
  the page, over every chunk of the index;
- HTML to Markdown alone (no network, no store), for comparison.

The crawl runs with ``rate`` 1000 requests/s and 4 in flight (no politeness delay: it
is our own server on loopback); the defaults (4/s) would make any site take pages/4 s.

    apt-get update && apt-get install -y python3-doc
    python benchmarks/web_sources.py [--hybrid-pages N] [--skip-hybrid] [--json FILE]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import yaml

from groundkb import KnowledgeBase, Settings
from groundkb.ingest.crawl import CrawlOptions
from groundkb.models import Filters

HERE = Path(__file__).resolve().parent
QUESTIONS = HERE / "data" / "python_docs_questions.yaml"
CANDIDATES = [
    Path("/usr/share/doc/python3/html"),
    *sorted(Path("/usr/share/doc").glob("python3.*-doc/html"), reverse=True),
]


class _Quiet(SimpleHTTPRequestHandler):
    statuses: ClassVar[Counter[int]] = Counter()

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def send_response(self, code: int, message: str | None = None) -> None:
        _Quiet.statuses[code] += 1
        super().send_response(code, message)


@contextmanager
def serve(root: Path) -> Iterator[str]:
    handler = functools.partial(_Quiet, directory=str(root))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def crawl(kb: KnowledgeBase, base: str, max_pages: int) -> dict[str, Any]:
    options = CrawlOptions(
        allow_networks=("127.0.0.1/32",), rate=1000.0, concurrency=4, max_pages=max_pages
    )
    _Quiet.statuses.clear()
    started = time.perf_counter()
    r = kb.ingest_url(base, "python", options=options)
    wall = time.perf_counter() - started
    return {
        "load_average": round(os.getloadavg()[0], 1),  # the machine is shared
        "pages_visited": r.files,
        "documents": r.inserted + r.updated + r.unchanged,
        "inserted": r.inserted,
        "updated": r.updated,
        "unchanged": r.unchanged,
        "deleted": r.deleted,
        "chunks_written": r.chunks_written,
        "chunks_embedded": r.chunks_embedded,
        "errors": [str(e) for e in r.errors],
        "notice": r.notice,
        "seconds": round(wall, 2),
        "pages_per_s": round(r.files / wall, 1),
        "http_statuses": {str(k): v for k, v in sorted(_Quiet.statuses.items())},
    }


def quality(kb: KnowledgeBase, base: str, questions: list[dict[str, Any]]) -> dict[str, Any]:
    hit1, hit5, latency, rows = [], [], [], []
    for item in questions:
        started = time.perf_counter()
        result = kb.search(item["q"], limit=5)
        latency.append((time.perf_counter() - started) * 1000)
        pages = [h.doc_id.removeprefix(base).split("#")[0] for h in result.hits]
        relevant = set(item["relevant"])
        hit1.append(1.0 if pages[:1] and pages[0] in relevant else 0.0)
        hit5.append(1.0 if relevant & set(pages[:5]) else 0.0)
        rows.append(
            {
                "q": item["q"],
                "verdict": result.verdict.kind,
                "top": [h.citation.removeprefix(base) for h in result.hits[:5]],
            }
        )
    return {
        "questions": len(questions),
        "hit@1": round(statistics.fmean(hit1), 3),
        "hit@5": round(statistics.fmean(hit5), 3),
        "p50_ms": round(statistics.median(latency), 1),
        "results": rows,
    }


def anchors(kb: KnowledgeBase, base: str, root: Path) -> dict[str, Any]:
    """Share of section citations whose anchor exists as an id on the page."""
    import lxml.html

    from groundkb.search.evidence import citation

    ids: dict[str, set[str]] = {}
    checked = found = 0
    for doc in kb.store.list_documents(Filters(), limit=10**6):
        for chunk in kb.store.chunks([doc.id]):
            cite = citation(doc, chunk.header_path)
            if "#" not in cite:
                continue
            page, anchor = cite.split("#", 1)
            rel = page.removeprefix(base) or "index.html"
            if rel not in ids:
                tree = lxml.html.parse(str(root / rel)).getroot()
                ids[rel] = {str(e.get("id")) for e in tree.iter() if e.get("id")}
            checked += 1
            found += anchor in ids[rel]
    return {"section_citations": checked, "anchor_exists": found,
            "share": round(found / max(checked, 1), 4)}  # fmt: skip


def convert_only(root: Path) -> dict[str, Any]:
    from groundkb.ingest.html import parse_html

    files = sorted(root.rglob("*.html"))
    size = sum(f.stat().st_size for f in files)
    started = time.perf_counter()
    for f in files:
        parse_html(f.read_bytes(), "http://127.0.0.1/" + f.relative_to(root).as_posix())
    wall = time.perf_counter() - started
    return {
        "load_average": round(os.getloadavg()[0], 1),
        "pages": len(files),
        "mb": round(size / 1e6, 1),
        "seconds": round(wall, 2),
        "pages_per_s": round(len(files) / wall, 1),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", type=Path, default=HERE / "results" / "web_sources.json")
    ap.add_argument("--hybrid-pages", type=int, default=5000, help="max_pages of the hybrid crawl")
    ap.add_argument("--skip-hybrid", action="store_true")
    args = ap.parse_args()
    root = next((c for c in CANDIDATES if (c / "index.html").is_file()), None)
    if root is None:
        print(
            "skipped: the Python HTML documentation is not installed; run "
            "`apt-get update && apt-get install -y python3-doc` (Debian/Ubuntu)",
            file=sys.stderr,
        )
        return 0
    questions = yaml.safe_load(QUESTIONS.read_text(encoding="utf-8"))["questions"]
    out: dict[str, Any] = {"docs_root": str(root.resolve())}
    out["convert_only"] = convert_only(root)
    print("convert only:", out["convert_only"], flush=True)
    with serve(root) as base, tempfile.TemporaryDirectory() as tmp:
        keyword = Settings(db=str(Path(tmp) / "kw.db"), embedder="none", retrieval="keyword")
        with KnowledgeBase.open(settings=keyword) as kb:
            out["keyword_crawl"] = crawl(kb, base, 5000)
            print("keyword crawl:", out["keyword_crawl"], flush=True)
            out["unchanged_recrawl"] = crawl(kb, base, 5000)
            out["recrawl_speedup"] = round(
                out["keyword_crawl"]["seconds"] / out["unchanged_recrawl"]["seconds"], 1
            )
            print("unchanged re-crawl:", out["unchanged_recrawl"], flush=True)
            out["keyword_quality"] = quality(kb, base, questions)
            print("keyword quality:", {k: v for k, v in out["keyword_quality"].items()
                                       if k != "results"}, flush=True)  # fmt: skip
            out["anchors"] = anchors(kb, base, root)
            print("anchors:", out["anchors"], flush=True)
            out["index_mb"] = round(kb.stats().size_bytes / 1e6, 1)
            out["chunks"] = kb.stats().chunks
        if not args.skip_hybrid:
            hybrid = Settings(db=str(Path(tmp) / "hy.db"), embedder="minilm", retrieval="hybrid")
            with KnowledgeBase.open(settings=hybrid) as kb:
                out["hybrid_crawl"] = crawl(kb, base, args.hybrid_pages)
                print("hybrid crawl:", out["hybrid_crawl"], flush=True)
                if out["hybrid_crawl"]["pages_visited"] == out["keyword_crawl"]["pages_visited"]:
                    out["hybrid_quality"] = quality(kb, base, questions)
                    print("hybrid quality:", {k: v for k, v in out["hybrid_quality"].items()
                                              if k != "results"}, flush=True)  # fmt: skip
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
