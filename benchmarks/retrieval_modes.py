"""Every evaluation set in keyword, vector and hybrid mode, on one index per set.

For each BEIR-format folder under ``../shared/eval/`` the corpus is ingested and
embedded once (all-MiniLM-L6-v2 int8, the local default), then evaluated with
``groundkb``'s evaluation code in each retrieval mode and fusion variant. Reports
nDCG@10, Recall@10, Recall@100, MRR@10, hit@1 and query latency (limit 100), and how
the verdicts came out.

    python benchmarks/retrieval_modes.py [--eval DIR] [--sets a,b] [--json FILE]

Writes ``benchmarks/results/retrieval_modes.json`` and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
from pathlib import Path
from typing import Any

from groundkb import Settings, __version__
from groundkb.evaluate import evaluate_modes

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_EVAL = ROOT.parent / "shared" / "eval"
MODES: list[Any] = [
    "keyword",
    "vector",
    ("hybrid", {"fusion": "rrf"}),
    ("hybrid", {"fusion": "weighted"}),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--eval", type=Path, default=DEFAULT_EVAL, help="folder of BEIR sets")
    ap.add_argument("--sets", default="", help="comma-separated set names (default: all)")
    ap.add_argument("--embedder", default="minilm")
    ap.add_argument("--json", type=Path, default=ROOT / "benchmarks/results/retrieval_modes.json")
    args = ap.parse_args()
    wanted = [s for s in args.sets.split(",") if s]
    results: dict[str, Any] = {
        "groundkb": __version__,
        "python": platform.python_version(),
        "embedder": args.embedder,
        "sets": {},
    }
    for path in sorted(p for p in args.eval.iterdir() if (p / "qrels.tsv").is_file()):
        if wanted and path.name not in wanted:
            continue
        reports = evaluate_modes(path, Settings(embedder=args.embedder), MODES)
        results["sets"][path.name] = [dataclasses.asdict(r) for r in reports]
        for r in reports:
            print(f"{path.name} {r.mode}: nDCG@10 {r.ndcg_at_10} R@10 {r.recall_at_10}"
                  f" hit@1 {r.hit_at_1} p50 {r.latency_p50_ms} ms", flush=True)  # fmt: skip
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(render(results))


def render(results: dict[str, Any]) -> str:
    lines = [
        "| set | mode | nDCG@10 | R@10 | R@100 | MRR@10 | hit@1 | p50 / p95 ms |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, reports in results["sets"].items():
        for r in reports:
            lines.append(
                f"| {name} | {r['mode']} | {r['ndcg_at_10']:.4f} | {r['recall_at_10']:.4f}"
                f" | {r['recall_at_100']:.4f} | {r['mrr_at_10']:.4f} | {r['hit_at_1']:.4f}"
                f" | {r['latency_p50_ms']} / {r['latency_p95_ms']} |"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
