"""Where the time of one MCP search goes, phase by phase.

Runs ``search_knowledge`` through a real (in-memory) MCP client session over an index
you give (keyword-only or hybrid), with the engine's phases timed by wrapping them:

* ``analysis``: parsing the query, typo correction (``Searcher.parse``);
* ``candidates``: the store's keyword candidates and chunk reads (SQL);
* ``vectors``: starting the query's vector search (``_semantic``) and waiting for it
  (``PendingVectors.result``) once the keyword candidates are ranked;
* ``vectors, in the background``: embedding the query and the nearest-neighbour search
  (``_nearest``), on another thread while keyword search runs; not part of the sum;
* ``rescoring``: BM25F rescoring and boosts of every candidate (``_rank``);
* ``evidence``: evidence scores of the ranked candidates (``score_evidence``);
* ``verdict``: measuring the signals and deciding (``measure``, ``decide``);
* ``hits``: building the hits, snippets included (``_hit``);
* ``rendering``: the result as the tool's output model, compacted and fitted to its
  token budget (``search_out``, ``compact_search``, ``fit_search``);
* ``json``: serializing the result's JSON text;
* ``server other``: the rest of the server's ``call_tool`` (argument validation,
  thread hop, the SDK);
* ``client and transport``: the client's round trip minus the server's ``call_tool``
  (request and result (de)serialization; output-schema validation in the client when
  ``mcp_structured_output`` is on).

Medians over the questions, in ms; ``--warm`` warms the index up first as ``groundkb
serve`` does (the typo vocabulary, and with it the kept candidate scores), ``--again``
asks every question a second time and reports that pass beside the first. Example::

    python benchmarks/search_breakdown.py --db /tmp/k100/kb.db --queries 300
    python benchmarks/search_breakdown.py --db /tmp/k100/hy.db --embedder minilm

Questions are the real queries of ``keyword_search.py`` (SciFact, tldr, TorchHub).
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import statistics
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from keyword_search import DEFAULT_EVAL, real_queries  # noqa: E402

from groundkb import KnowledgeBase, Settings  # noqa: E402

_times: dict[str, float] = defaultdict(float)
BACKGROUND = "vectors, in the background"
_lock = threading.Lock()


def _timed(phase: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            with _lock:
                _times[phase] += time.perf_counter() - started

    return run


def _instrument() -> None:
    from groundkb.ops import visible
    from groundkb.search import background, engine
    from groundkb.serve import mcp, mcp_output

    S = engine.Searcher
    S.parse = _timed("analysis", S.parse)  # type: ignore[method-assign]
    S._semantic = _timed("vectors", S._semantic)  # type: ignore[method-assign]
    S._nearest = _timed(BACKGROUND, S._nearest)  # type: ignore[method-assign]
    P = background.PendingVectors
    P.result = _timed("vectors", P.result)  # type: ignore[method-assign]
    S._rank = _timed("rescoring", S._rank)  # type: ignore[method-assign]
    S._hit = _timed("hits", S._hit)  # type: ignore[method-assign]
    V = visible.VisibleStore
    V.keyword_candidates = _timed("candidates", V.keyword_candidates)  # type: ignore[method-assign]
    V.chunk_matches = _timed("candidates", V.chunk_matches)  # type: ignore[method-assign]
    engine.score_evidence = _timed("evidence", engine.score_evidence)
    engine.measure = _timed("verdict", engine.measure)
    engine.decide = _timed("verdict", engine.decide)
    mcp.search_out = _timed("rendering", mcp.search_out)
    mcp.compact_search = _timed("rendering", mcp.compact_search)
    mcp.fit_search = _timed("rendering", mcp.fit_search)
    mcp_output.compact_json = _timed("json", mcp_output.compact_json)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", required=True, help="an index built beforehand")
    ap.add_argument("--embedder", default="none", help="none (keyword) or minilm (hybrid)")
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--limit", type=int, default=10)
    ap.add_argument(
        "--warm", action="store_true", help="warm the index up first, as `groundkb serve` does"
    )
    ap.add_argument("--again", action="store_true", help="then ask every question a second time")
    ap.add_argument("--json", type=Path, help="also write the results here")
    args = ap.parse_args()
    for name in ("groundkb.audit", "groundkb.queries"):  # the shells route these; off here
        logging.getLogger(name).setLevel(logging.CRITICAL)
    _instrument()
    from groundkb.serve.mcp import build_server

    retrieval = "keyword" if args.embedder == "none" else "hybrid"
    # no latency fallback: the first searches (the model loading) must not switch the
    # server to keyword-only for the measured ones
    settings = Settings(
        embedder=args.embedder, retrieval=retrieval, query_log="off", fallback_p95_ms=1e9
    )
    questions = real_queries(DEFAULT_EVAL, args.queries)
    passes: list[dict[str, list[float]]] = [defaultdict(list) for _ in range(1 + args.again)]
    modes: dict[str, int] = defaultdict(int)
    with KnowledgeBase.open(args.db, settings) as kb:
        if args.warm:
            kb.warm()
        server = build_server(kb)
        original = server.call_tool

        async def call_tool(*a: Any, **k: Any) -> Any:
            started = time.perf_counter()
            try:
                return await original(*a, **k)
            finally:
                _times["server total"] += time.perf_counter() - started

        server.call_tool = call_tool  # type: ignore[method-assign]

        async def ask(client: Client, q: str, per_phase: dict[str, list[float]]) -> None:
            _times.clear()
            started = time.perf_counter()
            r = await client.call_tool("search_knowledge", {"query": q, "limit": args.limit})
            total = time.perf_counter() - started
            data = r.structured_content or json.loads(r.content[0].text)  # type: ignore[union-attr]
            modes[str(data.get("mode"))] += 1
            timed = {k: v for k, v in _times.items() if k not in ("server total", BACKGROUND)}
            server_total = _times["server total"]
            for k, v in _times.items():
                if k != "server total":
                    per_phase[k].append(v * 1000)
            per_phase["server other"].append((server_total - sum(timed.values())) * 1000)
            per_phase["client and transport"].append((total - server_total) * 1000)
            per_phase["round trip"].append(total * 1000)

        async def run() -> None:
            async with Client(server) as client:
                for q in questions[:20]:  # warm up: derived data, the model
                    await client.call_tool("search_knowledge", {"query": q, "limit": args.limit})
                for per_phase in passes:
                    for q in questions:
                        await ask(client, q, per_phase)

        anyio.run(run)
    order = ["analysis", "candidates", BACKGROUND, "vectors", "rescoring", "evidence",
             "verdict", "hits", "rendering", "json", "server other", "client and transport",
             "round trip"]  # fmt: skip
    medians = [{k: round(statistics.median(p[k]), 3) for k in order if p.get(k)} for p in passes]
    result: dict[str, Any] = {
        "db": args.db,
        "mode": retrieval,
        "warm": args.warm,
        "queries": len(questions),
        "modes_run": dict(modes),
        "median_ms": medians[0],
    }
    if args.again:
        result["again_median_ms"] = medians[1]
    print(f"searches ran as: {dict(modes)}")
    heads = " | asked again" if args.again else ""
    print(f"| phase | median ms ({retrieval}, {len(questions)} questions){heads} |")
    print("|---|---|" + ("---|" if args.again else ""))
    for k, v in medians[0].items():
        again = f" {medians[1].get(k, '-')} |" if args.again else ""
        print(f"| {k} | {v} |{again}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
