"""Verdicts on real documentation sites: the Python 3 HTML documentation (``--site
python``, the default) and Git's (``--site git``), crawled from loopback, and Flask's
reStructuredText sources (``--site flask``), ingested as files.

``benchmarks/data/python_docs_verdicts.jsonl`` holds 66 questions written before any
result was looked at: 36 answerable (16 from ``python_docs_questions.yaml``, 20 more),
each with the pages that answer it; 22 the docs do not cover (other languages,
products and libraries, general knowledge, a feature Python does not have) that still
share common words with them; and 8 one-word questions with several meanings
("queue": ``queue``, ``asyncio`` queues, ``multiprocessing``). The hybrid verdict
models have since been fitted on them too (``fit_verdict.py``), so they are no longer
held out in hybrid mode.

``benchmarks/data/git_docs_verdicts.jsonl`` holds 54 questions about Git's manual
(Debian's ``git-doc``, 206 pages and the howtos), written before Git's docs were ever
indexed and used by nothing else: 34 answerable (tasks, definitions, a deep fact,
typos, paraphrases, exact commands, error messages), 8 short ones with several
meanings ("undo changes", "remove", "history") and 12 the manual does not cover (other
products, general knowledge, features Git lacks, commands Git does not have).

``benchmarks/data/flask_docs_verdicts.jsonl`` holds 44 questions about Flask's
documentation (``flask_docs.tar.xz``: the 76 ``.rst`` files of ``docs/`` and the
BSD-3-Clause ``LICENSE.txt`` of pallets/flask at 2ac89889f4cc, 2026-04-08), written
before any of them was asked and used by nothing else: 28 answerable (tasks, a
definition, a deep fact, a typo, a paraphrase), 6 one-word questions with several
meanings ("templates": the templating page, the tutorial's and template inheritance)
and 10 the docs do not cover (other products, general knowledge, features Flask lacks,
``flask`` commands it does not have).

A verdict is right when it is the expected one, and an answer only when its top hit is
a listed page. Reported per mode: accuracy, the confusion matrix, false answers
(answers to questions the docs do not cover), the share of answerable questions
answered right, the precision of the answers, and hit@1 / hit@5. Only
``KnowledgeBase.open/ingest_url/search`` is used, so an earlier version can be measured
on the same indexes (``PYTHONPATH=other/src``). Indexes are built once into
``benchmarks/results/tmp/{pydocs,gitdocs,flaskdocs}-{keyword,hybrid}.db`` (the hybrid crawl
embeds every chunk: minutes on 2 cores) and reused; ``--fresh`` rebuilds them.

    apt-get update && apt-get install -y python3-doc git-doc
    python benchmarks/python_docs_verdicts.py [--site python|git|flask] [--modes keyword,hybrid]
        [--fresh] [--json FILE] [--ask-end WORDS] [--before WORDS] [--british] [--gerund]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tarfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import api_questions
from web_sources import CANDIDATES, crawl, serve

from groundkb import KnowledgeBase, Settings

HERE = Path(__file__).resolve().parent
CACHE = HERE / "results" / "tmp"


@dataclass(frozen=True)
class Site:
    roots: tuple[Path, ...]  # where Debian's package puts it (the first that exists)
    questions: Path
    cache: str  # index file prefix
    package: str
    archive: Path | None = None  # source files to ingest, instead of a site to crawl


SITES = {
    "python": Site(
        tuple(CANDIDATES), HERE / "data" / "python_docs_verdicts.jsonl", "pydocs", "python3-doc"
    ),
    "git": Site(
        (Path("/usr/share/doc/git/html"),),
        HERE / "data" / "git_docs_verdicts.jsonl",
        "gitdocs",
        "git-doc",
    ),
    "flask": Site(
        (),
        HERE / "data" / "flask_docs_verdicts.jsonl",
        "flaskdocs",
        "",
        HERE / "data" / "flask_docs.tar.xz",
    ),
}


def page(doc_id: str) -> str:
    """``http://127.0.0.1:PORT/library/re.html#flags`` → ``library/re.html``."""
    return urlsplit(doc_id).path.lstrip("/")


def index(mode: str, root: Path, fresh: bool, prefix: str = "pydocs", files: bool = False) -> Path:
    """The index of the site at ``root`` for ``mode``: crawled from loopback, or with
    ``files`` its source files ingested as they are."""
    db = CACHE / f"{prefix}-{mode}.db"
    if db.exists() and not fresh:
        return db
    CACHE.mkdir(parents=True, exist_ok=True)
    part = db.with_suffix(".part")
    part.unlink(missing_ok=True)
    embedder = "none" if mode == "keyword" else "minilm"
    with KnowledgeBase.open(part, Settings(embedder=embedder)) as kb:
        if files:
            print(f"{mode} ingest:", kb.ingest(root, source="docs"), file=sys.stderr, flush=True)
        else:
            with serve(root) as base:
                print(f"{mode} crawl:", crawl(kb, base, 5000), file=sys.stderr, flush=True)
    part.rename(db)
    return db


def unpack(archive: Path) -> Path:
    """The ``docs`` folder of a vendored source archive, unpacked into the cache once."""
    folder = CACHE / archive.name.removesuffix(".tar.xz")
    if not (folder / "docs").is_dir():
        CACHE.mkdir(parents=True, exist_ok=True)
        with tarfile.open(archive) as tar:
            tar.extractall(CACHE, filter="data")
    return folder / "docs"


def score(
    kb: KnowledgeBase,
    questions: list[dict[str, Any]],
    end: str = "",
    before: str = "",
    product: str = "",
) -> dict[str, Any]:
    confusion: Counter[str] = Counter()
    right = answered = answered_right = false = 0
    hit1: list[float] = []
    hit5: list[float] = []
    rows = []
    for q in questions:
        query = q["query"]
        query = api_questions.gerund(query, product) if api_questions.GERUND else query
        query = f"{query.rstrip('?. ')} {end}" if end else query
        query = api_questions.british(query) if api_questions.BRITISH else query
        r = kb.search(f"{before} {query}" if before else query, limit=5)
        pages = [page(h.doc_id) for h in r.hits]
        relevant = set(q["relevant"])
        top_ok = bool(pages) and pages[0] in relevant
        kind = r.verdict.kind
        confusion[f"{q['expect']}→{kind}"] += 1
        ok = kind == q["expect"] and (kind != "answer" or top_ok)
        right += ok
        answered += kind == "answer"
        answered_right += kind == "answer" and q["expect"] == "answer" and top_ok
        false += kind == "answer" and q["expect"] == "no_match"
        if q["expect"] == "answer":
            hit1.append(float(top_ok))
            hit5.append(float(bool(relevant & set(pages))))
        rows.append({"id": q["id"], "query": q["query"], "expect": q["expect"], "verdict": kind,
                     "reason": r.verdict.reason, "right": ok, "top": pages[:3]})  # fmt: skip
    n_none = sum(q["expect"] == "no_match" for q in questions)
    n_answerable = sum(q["expect"] == "answer" for q in questions)
    return {
        "questions": len(questions),
        "accuracy": round(right / len(questions), 3),
        "false_answers": round(false / n_none, 3) if n_none else 0.0,
        "answered_right": round(answered_right / n_answerable, 3),
        "precision": round(answered_right / answered, 3) if answered else None,
        "hit@1": round(statistics.fmean(hit1), 3),
        "hit@5": round(statistics.fmean(hit5), 3),
        "confusion": dict(sorted(confusion.items())),
        "rows": rows,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--site", choices=sorted(SITES), default="python")
    ap.add_argument("--modes", default="keyword,hybrid")
    ap.add_argument("--fresh", action="store_true", help="crawl and index again")
    ap.add_argument("--verbose", action="store_true", help="print every wrong verdict")
    ap.add_argument("--json", type=Path, help="default: results/{python,git}_docs_verdicts.json")
    ap.add_argument(
        "--ask-end",
        default="",
        help="words to end every question with, {product} standing for the site's "
        "('in {product}': '… in Python'); the verdicts must not change",
    )
    ap.add_argument(
        "--before",
        default="",
        help="a sentence to put before every question ('Quick question:', \"I'm new to "
        '{product}.")',
    )
    ap.add_argument(
        "--british",
        action="store_true",
        help="ask every question in British spelling (organisation, cancelled, centre)",
    )
    ap.add_argument(
        "--gerund",
        action="store_true",
        help="ask every request that opens with a verb as its gerund ('archiving a project')",
    )
    args = ap.parse_args()
    api_questions.BRITISH, api_questions.GERUND = args.british, args.gerund
    site = SITES[args.site]
    if site.archive is not None:
        root: Path | None = unpack(site.archive)
    else:
        root = next((c for c in site.roots if (c / "index.html").is_file()), None)
    if root is None:
        print(f"skipped: run `apt-get install -y {site.package}` first", file=sys.stderr)
        return 0
    lines = site.questions.read_text(encoding="utf-8").splitlines()
    questions = [json.loads(line) for line in lines]
    out: dict[str, Any] = {}
    for mode in args.modes.split(","):
        db = index(mode, root, args.fresh, site.cache, files=site.archive is not None)
        embedder = "none" if mode == "keyword" else "minilm"
        settings = Settings(embedder=embedder, retrieval=mode, fallback_p95_ms=1e12)
        with KnowledgeBase.open(db, settings, create=False) as kb:
            product = args.site.capitalize()
            end = args.ask_end.replace("{product}", product)
            before = args.before.replace("{product}", product)
            out[mode] = score(kb, questions, end, before, product)
        summary = {k: v for k, v in out[mode].items() if k != "rows"}
        print(mode, summary, flush=True)
        if args.verbose:
            for row in out[mode]["rows"]:
                if not row["right"]:
                    print(f"  {row['expect']:8} → {row['verdict']:8} ({row['reason']}) "
                          f"{row['query']}  {row['top']}")  # fmt: skip
    path = args.json or HERE / "results" / f"{args.site}_docs_verdicts.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
