"""MCP search over stdio on an index you give, this code against another, side by side
(keyword-only, or ``--retrieval hybrid`` on an index embedded with MiniLM).

One warm ``groundkb serve`` process per code base (this checkout, and with
``--baseline`` the ``src`` folder of another checkout, e.g. a worktree of the previous
commit), the same Python MCP client, the real questions of ``keyword_search.py``
interleaved with the first server rotating, so a busy moment hits both alike; the
warm-up asks other questions than those measured, and the servers then get ``--settle``
seconds (15) to finish warming up in the background before the measured questions.
Reported per server: ``call_tool`` round trip p50 / p95 / mean in ms and the median
response size on the wire (every text block plus the structured content), and the ratio
of medians; with ``--again`` also the p50 / p95 of every question asked a second time.

Example (the 100k-chunk index of ``keyword_search.py``, built beforehand)::

    git worktree add /tmp/before HEAD~1
    python benchmarks/mcp_stdio.py --db /tmp/k100/kb.db --baseline /tmp/before/src

A groundkb refuses an index of a newer schema than it knows, and this code migrates an
older one when it opens it. Across a schema change give the baseline an index of its
own (``--baseline-db``: a copy of the same index taken before this code opened it).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from keyword_search import DEFAULT_EVAL, real_queries  # noqa: E402


def _params(db: Path, src: Path | None, retrieval: str = "keyword") -> StdioServerParameters:
    env = {
        **os.environ,
        "GROUNDKB_EMBEDDER": "none" if retrieval == "keyword" else "minilm",
        "GROUNDKB_RETRIEVAL": retrieval,
        "GROUNDKB_FALLBACK_P95_MS": "1e12",
    }
    if src is not None:
        env["PYTHONPATH"] = str(src.resolve())
    return StdioServerParameters(
        command=sys.executable, args=["-m", "groundkb", "--db", str(db), "serve"], env=env
    )


def _size(result: Any) -> int:
    text = sum(len(getattr(b, "text", "")) for b in result.content)
    structured = result.structured_content
    return text + (len(json.dumps(structured, separators=(",", ":"))) if structured else 0)


async def _measure(
    servers: dict[str, StdioServerParameters],
    questions: list[str],
    limit: int,
    warmup: int,
    again: bool = False,
    settle: float = 0.0,
) -> dict[str, dict[str, Any]]:
    names = list(servers)
    latency: dict[str, list[float]] = {n: [] for n in names}
    repeated: dict[str, list[float]] = {n: [] for n in names}
    sizes: dict[str, list[int]] = {n: [] for n in names}
    clients = {n: Client(servers[n]) for n in names}
    for c in clients.values():
        await c.__aenter__()
    try:
        for q in questions[len(questions) - warmup :]:  # questions not measured
            for n in names:
                await clients[n].call_tool("search_knowledge", {"query": q, "limit": limit})
        await anyio.sleep(settle)  # the servers' background warm-up has finished
        asked = questions[: len(questions) - warmup]
        for i, q in enumerate(asked):
            order = names[i % len(names) :] + names[: i % len(names)]
            for n in order:
                started = anyio.current_time()
                r = await clients[n].call_tool("search_knowledge", {"query": q, "limit": limit})
                latency[n].append((anyio.current_time() - started) * 1000)
                if r.is_error:
                    raise SystemExit(f"{n}: {r.content}")
                sizes[n].append(_size(r))
        for i, q in enumerate(asked if again else []):  # each question a second time
            order = names[i % len(names) :] + names[: i % len(names)]
            for n in order:
                started = anyio.current_time()
                await clients[n].call_tool("search_knowledge", {"query": q, "limit": limit})
                repeated[n].append((anyio.current_time() - started) * 1000)
    finally:
        for c in reversed(list(clients.values())):
            await c.__aexit__(None, None, None)
    out = {}
    for n in names:
        lat = sorted(latency[n])
        out[n] = {
            "calls": len(lat),
            "p50_ms": round(statistics.median(lat), 2),
            "p95_ms": round(lat[int(0.95 * (len(lat) - 1))], 2),
            "mean_ms": round(statistics.fmean(lat), 2),
            "median_chars": int(statistics.median(sizes[n])),
        }
        if repeated[n]:
            lat = sorted(repeated[n])
            out[n]["again_p50_ms"] = round(statistics.median(lat), 2)
            out[n]["again_p95_ms"] = round(lat[int(0.95 * (len(lat) - 1))], 2)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", type=Path, required=True, help="an index built beforehand")
    ap.add_argument("--baseline", type=Path, help="src folder of the code to compare with")
    ap.add_argument(
        "--baseline-db", type=Path, help="the baseline's index (default: --db; see above)"
    )
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--limit", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument(
        "--settle",
        type=float,
        default=15.0,
        help="seconds to wait after the warm-up questions, before measuring (0: a server "
        "as it starts, its background warm-up running)",
    )
    ap.add_argument(
        "--retrieval",
        choices=("keyword", "hybrid"),
        default="keyword",
        help="hybrid needs an index embedded with MiniLM",
    )
    ap.add_argument("--again", action="store_true", help="then ask every question a second time")
    ap.add_argument("--json", type=Path, help="also write the results here")
    args = ap.parse_args()
    servers = {"this code": _params(args.db, None, args.retrieval)}
    if args.baseline:
        servers["baseline"] = _params(args.baseline_db or args.db, args.baseline, args.retrieval)
    questions = real_queries(DEFAULT_EVAL, args.queries + args.warmup)
    results = anyio.run(
        _measure, servers, questions, args.limit, args.warmup, args.again, args.settle
    )
    out: dict[str, Any] = {
        "db": str(args.db),
        "retrieval": args.retrieval,
        "limit": args.limit,
        "servers": results,
    }
    if args.baseline_db:
        out["baseline_db"] = str(args.baseline_db)
    if args.baseline:
        out["baseline_p50_over_this"] = round(
            results["baseline"]["p50_ms"] / results["this code"]["p50_ms"], 2
        )
    print(json.dumps(out, indent=2))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
