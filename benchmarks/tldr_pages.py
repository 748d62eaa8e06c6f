"""tldr pages ingested through groundkb's own tldr loader, asked the DocPrompting dev
questions: nDCG@10 and hit@1 per retrieval mode.

The evaluation set ``../shared/eval/tldr_docprompting_desc_dev`` judges the same queries
against a corpus of page titles and descriptions only. Here the ~7,000 real pages of
``../shared/corpora/tldr/pages/`` are ingested as they are, examples included, so the
numbers are not comparable with that set's baselines: many questions are close to an
example's description, which the pages contain. A hit is a page whose file name is the
judged command (the same command on two platforms counts once).

    python benchmarks/tldr_pages.py [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from groundkb import KnowledgeBase, Settings
from groundkb.evaluate import ndcg_at, percentile, read_qrels, read_queries

HERE = Path(__file__).resolve().parent
SHARED = HERE.parent.parent / "shared"
PAGES = SHARED / "corpora" / "tldr" / "pages"
EVAL = SHARED / "eval" / "tldr_docprompting_desc_dev"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", type=Path, default=HERE / "results" / "tldr_pages.json")
    args = ap.parse_args()
    if not PAGES.is_dir() or not EVAL.is_dir():
        print(f"need {PAGES} and {EVAL}", file=sys.stderr)
        return 2
    qrels = read_qrels(EVAL / "qrels.tsv")
    queries = read_queries(EVAL / "queries.jsonl")
    judged = [(q, queries[q]) for q in sorted(qrels) if q in queries]
    out: dict[str, Any] = {"queries": len(judged), "modes": {}}
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(db=str(Path(tmp) / "tldr.db"), retrieval="hybrid")
        with KnowledgeBase.open(settings=settings) as kb:
            report = kb.ingest(PAGES, source="tldr")
            out["ingest"] = {
                "documents": report.inserted,
                "chunks_embedded": report.chunks_embedded,
                "seconds": round(report.seconds, 1),
                "errors": len(report.errors),
            }
            print(f"ingested {report.inserted} pages in {report.seconds:.1f} s", flush=True)
        for mode in ("keyword", "hybrid"):
            with KnowledgeBase.open(settings=settings.replace(retrieval=mode)) as kb:
                ndcg, hit1, latency = [], [], []
                for qid, text in judged:
                    started = time.perf_counter()
                    result = kb.search(text, limit=20)
                    latency.append((time.perf_counter() - started) * 1000)
                    names: list[str] = []
                    for h in result.hits:
                        name = h.doc_id.rsplit("/", 1)[-1]
                        if name not in names:
                            names.append(name)
                    ndcg.append(ndcg_at(names, qrels[qid]))
                    hit1.append(1.0 if names and qrels[qid].get(names[0], 0) > 0 else 0.0)
                out["modes"][mode] = {
                    "ndcg@10": round(statistics.fmean(ndcg), 4),
                    "hit@1": round(statistics.fmean(hit1), 4),
                    "p50_ms": round(percentile(latency, 0.5), 2),
                }
                print(f"{mode}: {out['modes'][mode]}", flush=True)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
