"""Search time of this code and another, side by side in time: questions interleaved.

Two processes open the same index, one with this checkout's ``src`` and one with
``--base`` (the ``src`` folder of another checkout, e.g. ``git worktree add /tmp/base
HEAD~1``), and warm up as ``groundkb serve`` does (``KnowledgeBase.warm``, then
``--warmup`` questions, then ``--settle`` seconds). Then every question is asked of
both, one after the other, the order alternating question by question; only one search
runs at a time. Each process times its own ``KnowledgeBase.search`` (in process: no
transport), so the two sides see the same machine from one question to the next.
Separate runs of each side do not: on a shared machine they differ by more than most
changes at stake (docs/benchmarks.md, "The query's embedding starts at once").

Reported: p50 / p95 of each side's first askings, the ratio of the medians, on how
many questions this code was the faster, and whether the two gave the same answers
(the verdict and the hits' ids, question by question). ``--again`` asks every question
a second time and reports that pass too. Two processes of the same code still differ
by a few per cent, and so do the questions each wins (an unchanged path: p50 ratios of
0.957–1.083, 182–244 of 400 questions won, in three runs on the tldr pages): so
``--pairs`` (3) pairs of fresh processes run one after the other, and each pair's ratio
and count are reported beside those of all questions together.

``--after-warmup RUNS`` measures instead what a server's first searches cost right after
its warm-up: RUNS fresh processes per side, one at a time, alternating, each timing
``KnowledgeBase.warm`` and then its first ``--max`` questions (no warm-up questions, no
settling; one process at a time, so work one side starts in the background does not
slow the other).

    python benchmarks/side_by_side.py --base /tmp/base/src --db /tmp/sf/hybrid.db \\
        --mode hybrid --questions scifact

``--questions``: scifact, tldr or torchhub (their ``queries.jsonl`` in the shared
evaluation sets), api (the development and held-out API questions) or a JSONL file of
``{"text": …}`` or ``{"query": …}`` lines. Build the index first (``groundkb --db DB
ingest …``; with ``--mode hybrid`` it needs the local model's vectors).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parents[1]
SHARED = next(
    (p / "shared" for p in ROOT.parents if (p / "shared" / "eval").is_dir()),
    ROOT.parent / "shared",
)
SETS = {
    "scifact": "beir_scifact",
    "tldr": "tldr_docprompting_desc_dev",
    "torchhub": "gorilla_torchhub",
}


def questions(name: str) -> list[str]:
    """The questions of a named set or a JSONL file, in file order."""
    if name == "api":
        files = sorted((SHARED / "eval" / "api_questions_dev").glob("*.jsonl"))
        for folder in sorted((ROOT / "benchmarks" / "data").glob("api_questions*")):
            files += sorted(folder.glob("*.jsonl"))
    elif name in SETS:
        files = [SHARED / "eval" / SETS[name] / "queries.jsonl"]
    else:
        files = [Path(name)]
    out = []
    for path in files:
        if not path.is_file():
            raise SystemExit(f"{path}: no such file")
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                out.append(str(row.get("text") or row["query"]))
    return out


# ------------------------------------------------------------------ the two processes
def child(db: str, mode: str) -> None:
    """Serve searches over stdin/stdout, one JSON line each way."""
    for name in ("groundkb.audit", "groundkb.queries"):  # the shells route these; off here
        logging.getLogger(name).setLevel(logging.CRITICAL)
    import groundkb
    from groundkb import KnowledgeBase, Settings

    settings = Settings(
        embedder="none" if mode == "keyword" else "minilm",
        retrieval=mode,
        query_log="off",
        fallback_p95_ms=1e12,  # never switch to keyword-only because a search was slow
    )
    out = sys.stdout
    with KnowledgeBase.open(db, settings) as kb:
        started = time.perf_counter()
        kb.warm()
        warm_s = time.perf_counter() - started
        _reply(out, {"code": str(Path(groundkb.__file__).resolve().parent), "warm_s": warm_s})
        for line in sys.stdin:
            ask = json.loads(line)
            started = time.perf_counter()
            r = kb.search(ask["q"], limit=ask["limit"])
            ms = (time.perf_counter() - started) * 1000
            answer = [r.mode, r.verdict.kind, [h.chunk_id for h in r.hits]]
            _reply(out, {"ms": ms, "answer": answer})


def _reply(out: IO[str], data: dict[str, Any]) -> None:
    out.write(json.dumps(data) + "\n")
    out.flush()


class Side:
    """One of the two processes."""

    def __init__(self, name: str, src: Path, db: Path, mode: str) -> None:
        self.name = name
        env = {**os.environ, "PYTHONPATH": str(src), "HF_HUB_OFFLINE": "1"}
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--child", "--db", str(db), "--mode", mode],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            text=True,
        )
        started = self._read()
        self.code, self.warm_s = str(started["code"]), float(started["warm_s"])
        if Path(self.code).parent.resolve() != src.resolve():
            raise SystemExit(f"{name}: imported groundkb from {self.code}, not from {src}")

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"{self.name}: the search process ended (exit {self.proc.wait()})")
        data: dict[str, Any] = json.loads(line)
        return data

    def ask(self, q: str, limit: int) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"q": q, "limit": limit}) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)


def _pass(sides: list[Side], asked: list[str], limit: int) -> dict[str, Any]:
    """Every question asked of both sides, the order alternating: each side's times,
    the questions this code was the faster on, those answered differently."""
    times: dict[str, list[float]] = {s.name: [] for s in sides}
    faster = 0
    differ: list[str] = []
    for n, q in enumerate(asked):
        order = sides if n % 2 == 0 else sides[::-1]
        got = {s.name: s.ask(q, limit) for s in order}
        for s in sides:
            times[s.name].append(got[s.name]["ms"])
        this, base = got["this code"], got["base"]
        faster += this["ms"] < base["ms"]
        if this["answer"] != base["answer"]:
            differ.append(q)
    return {"times": times, "faster": faster, "differ": differ}


def _summary(passes: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians and p95 over the passes' questions together, and each pair's own."""
    out: dict[str, Any] = {}
    for name in ("this code", "base"):
        ms = sorted(t for p in passes for t in p["times"][name])
        out[name] = {
            "p50_ms": round(statistics.median(ms), 3),
            "p95_ms": round(ms[int(0.95 * (len(ms) - 1))], 3),
        }
    out["base_p50_over_this"] = round(out["base"]["p50_ms"] / out["this code"]["p50_ms"], 3)
    asked = sum(len(p["times"]["base"]) for p in passes)
    out["this_code_faster_on"] = f"{sum(p['faster'] for p in passes)} of {asked}"
    differ = [q for p in passes for q in p["differ"]]
    out["different_answers"] = len(differ)
    out["first_different"] = differ[:5]
    out["pairs"] = [
        {
            "base_p50_over_this": round(
                statistics.median(p["times"]["base"]) / statistics.median(p["times"]["this code"]),
                3,
            ),
            "this_code_faster_on": f"{p['faster']} of {len(p['times']['base'])}",
        }
        for p in passes
    ]
    return out


def _after_warmup(
    db: Path, base: Path, mode: str, asked: list[str], runs: int, limit: int
) -> dict[str, Any]:
    per: dict[str, list[dict[str, float]]] = {"this code": [], "base": []}
    sources = {"this code": ROOT / "src", "base": base}
    for run in range(runs):
        order = ["this code", "base"] if run % 2 else ["base", "this code"]
        for name in order:
            side = Side(name, sources[name], db, mode)
            try:
                ms = [side.ask(q, limit)["ms"] for q in asked]
            finally:
                side.close()
            per[name].append(
                {
                    "warm_s": round(side.warm_s, 3),
                    "sum_ms": round(sum(ms), 1),
                    "p50_ms": round(statistics.median(ms), 3),
                    "max_ms": round(max(ms), 1),
                }
            )
    out: dict[str, Any] = {}
    for name, rows in per.items():
        out[name] = {
            "median_of_runs": {k: statistics.median(r[k] for r in rows) for k in rows[0]},
            "runs": rows,
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", type=Path, required=True, help="an index built beforehand")
    ap.add_argument("--base", type=Path, help="the src folder of the other checkout")
    ap.add_argument("--mode", default="keyword", choices=("keyword", "hybrid", "vector"))
    ap.add_argument("--questions", default="scifact", help="scifact, tldr, torchhub, api or FILE")
    ap.add_argument("--max", type=int, default=400, help="most questions measured")
    ap.add_argument("--warmup", type=int, default=30, help="questions asked before measuring")
    ap.add_argument("--settle", type=float, default=5.0, help="seconds to wait after warm-up")
    ap.add_argument("--limit", type=int, default=10)
    ap.add_argument("--again", action="store_true", help="then ask every question again")
    ap.add_argument(
        "--pairs", type=int, default=3, help="pairs of fresh processes, one after the other"
    )
    ap.add_argument(
        "--after-warmup",
        type=int,
        default=0,
        metavar="RUNS",
        help="fresh processes per side: each warms up, then asks its first --max questions",
    )
    ap.add_argument("--json", type=Path, help="also write the results here")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(str(args.db), args.mode)
        return
    if args.base is None:
        ap.error("--base is required")
    if not args.db.is_file():
        ap.error(f"{args.db}: no such index")
    asked = questions(args.questions)
    result: dict[str, Any]
    if args.after_warmup:
        result = {
            "db": str(args.db),
            "mode": args.mode,
            "questions": args.questions,
            "asked": len(asked[: args.max]),
            "after_warmup": _after_warmup(
                args.db, args.base, args.mode, asked[: args.max], args.after_warmup, args.limit
            ),
        }
        print(json.dumps(result, indent=2))
        if args.json:
            args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        return
    warm, asked = asked[: args.warmup], asked[args.warmup :][: args.max]
    if not asked:
        ap.error("no questions left after the warm-up ones")
    firsts: list[dict[str, Any]] = []
    agains: list[dict[str, Any]] = []
    code: dict[str, str] = {}
    for _ in range(args.pairs):  # each pair: two fresh processes
        sides = [
            Side("this code", ROOT / "src", args.db, args.mode),
            Side("base", args.base, args.db, args.mode),
        ]
        try:
            code = {s.name: s.code for s in sides}
            for q in warm:
                for s in sides:
                    s.ask(q, args.limit)
            time.sleep(args.settle)
            firsts.append(_pass(sides, asked, args.limit))
            if args.again:
                agains.append(_pass(sides, asked, args.limit))
        finally:
            for s in sides:
                s.close()
    result = {
        "db": str(args.db),
        "mode": args.mode,
        "questions": args.questions,
        "asked": len(asked),
        "pairs": args.pairs,
        "code": code,
        "first": _summary(firsts),
    }
    if args.again:
        result["again"] = _summary(agains)
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
