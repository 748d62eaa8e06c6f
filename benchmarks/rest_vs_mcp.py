"""REST vs MCP over streamable HTTP: search latency on loopback, 1 and 8 concurrent clients.

One ``groundkb serve --http`` process (default settings, keyword retrieval, the query log
on stderr) answers both: ``GET /api/search`` and the MCP tool ``search_knowledge`` at
``/mcp``, for the same questions at the same limit (5). Each concurrent client has its
own HTTP connection (REST) or MCP session (opened before timing). Rounds alternate the
two transports so drift on a shared machine hits both alike; the core's own search time
(``KnowledgeBase.search`` in this process) is measured too, to show what the transport
adds. Corpus: the ~7,000 tldr pages of ``../shared/corpora/tldr`` (keyword-only), asked
the DocPrompting dev questions; without them, the example docs and a fixed question list.

    python benchmarks/rest_vs_mcp.py [--queries 300] [--rounds 3] [--json FILE] [--shared DIR]

Client and server share the machine's cores: the numbers are end-to-end on one host,
not server capacity.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client

from groundkb import KnowledgeBase, Settings

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
FALLBACK_QUERIES = [
    "explain workspace",
    "how do I share a workspace",
    "what is home",
    "list users",
    "quick links",
    "explain calendar",
    "recent notes widget",
    "how do I reorder widgets",
]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))]


def summary(latencies: list[float], seconds: float) -> dict[str, float]:
    return {
        "n": len(latencies),
        "p50_ms": round(pct(latencies, 0.5), 2),
        "p95_ms": round(pct(latencies, 0.95), 2),
        "mean_ms": round(statistics.fmean(latencies), 2),
        "requests_per_s": round(len(latencies) / seconds, 1),
    }


def start_server(db: Path) -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "GROUNDKB_EMBEDDER": "none", "GROUNDKB_RETRIEVAL": "keyword"}
    cmd = [sys.executable, "-m", "groundkb", "--db", str(db), "serve", "--http", "--port", "0"]
    proc = subprocess.Popen(
        cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env
    )
    assert proc.stderr is not None
    url = ""
    for line in proc.stderr:
        if "console" in line and not url:
            url = line.split()[-1].rstrip("/")
        if "admin" in line:
            break
    if not url:
        proc.kill()
        raise SystemExit("the server did not start")
    stream = proc.stderr
    threading.Thread(target=lambda: [None for _ in stream], daemon=True).start()  # drain logs
    return proc, url


async def run_rest(url: str, queries: list[str], clients: int) -> tuple[list[float], float, int]:
    todo = list(queries)
    latencies: list[float] = []
    errors = 0

    async def worker() -> None:
        nonlocal errors
        async with httpx2.AsyncClient(base_url=url, timeout=60) as c:
            await c.get("/api/stats")  # connect before timing
            while todo:
                q = todo.pop()
                t = time.perf_counter()
                r = await c.get("/api/search", params={"query": q, "limit": 5})
                latencies.append((time.perf_counter() - t) * 1000)
                errors += r.status_code != 200

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(clients)))
    return latencies, time.perf_counter() - started, errors


async def run_mcp(url: str, queries: list[str], clients: int) -> tuple[list[float], float, int]:
    todo = list(queries)
    latencies: list[float] = []
    errors = 0
    ready = asyncio.Event()
    opened = 0
    started = 0.0

    async def worker() -> None:
        nonlocal errors, opened, started
        async with Client(f"{url}/mcp") as client:  # the session opens before timing
            opened += 1
            if opened == clients:
                started = time.perf_counter()
                ready.set()
            await ready.wait()
            while todo:
                q = todo.pop()
                t = time.perf_counter()
                res = await client.call_tool("search_knowledge", {"query": q, "limit": 5})
                latencies.append((time.perf_counter() - t) * 1000)
                errors += bool(res.is_error)

    await asyncio.gather(*(worker() for _ in range(clients)))
    return latencies, time.perf_counter() - started, errors


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", type=Path, default=HERE / "results" / "rest_vs_mcp.json")
    ap.add_argument("--shared", type=Path, default=ROOT.parent / "shared")
    args = ap.parse_args()
    pages = args.shared / "corpora" / "tldr" / "pages"
    questions = args.shared / "eval" / "tldr_docprompting_desc_dev" / "queries.jsonl"
    if pages.is_dir() and questions.is_file():
        corpus, source = pages, "tldr pages"
        lines = questions.read_text(encoding="utf-8").splitlines()
        queries = [json.loads(x)["text"] for x in lines][: args.queries]
    else:
        corpus, source = ROOT / "examples" / "docs", "example docs"
        queries = (FALLBACK_QUERIES * (args.queries // len(FALLBACK_QUERIES) + 1))[: args.queries]
    out: dict[str, Any] = {
        "measured_at": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "corpus": source,
        "queries": len(queries),
        "rounds": args.rounds,
        "cpus": os.cpu_count(),
    }
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "kb.db"
        settings = Settings(db=str(db), embedder="none", retrieval="keyword")
        with KnowledgeBase.open(settings=settings) as kb:
            report = kb.ingest(corpus, source="docs")
            out["documents"] = kb.stats().documents
            out["chunks"] = kb.stats().chunks
            print(f"{source}: {report.inserted} documents in {report.seconds:.1f} s", flush=True)
            core: list[float] = []
            for q in queries * args.rounds:
                t = time.perf_counter()
                kb.search(q, limit=5)
                core.append((time.perf_counter() - t) * 1000)
            out["core"] = summary(core, sum(core) / 1000)
        proc, url = start_server(db)
        try:
            results: dict[str, dict[str, list[float]]] = {}
            totals: dict[str, float] = {}
            errors = 0
            for clients in (1, 8):
                asyncio.run(run_rest(url, queries[:20], clients))  # warm up both
                asyncio.run(run_mcp(url, queries[:20], clients))
                for _ in range(args.rounds):
                    for name, fn in (("rest", run_rest), ("mcp", run_mcp)):
                        lat, secs, err = asyncio.run(fn(url, queries, clients))
                        key = f"{name}@{clients}"
                        results.setdefault(key, {"lat": []})["lat"] += lat
                        totals[key] = totals.get(key, 0.0) + secs
                        errors += err
            out["errors"] = errors
            out["transports"] = {
                key: summary(v["lat"], totals[key]) for key, v in sorted(results.items())
            }
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    for clients in (1, 8):
        rest, mcp = out["transports"][f"rest@{clients}"], out["transports"][f"mcp@{clients}"]
        out[f"mcp_over_rest_p50@{clients}"] = round(mcp["p50_ms"] / rest["p50_ms"], 2)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(out, indent=2))
    return 0 if not out["errors"] else 1


if __name__ == "__main__":
    sys.exit(main())
