"""Ranking on one large index that mixes the development sets.

Every development set alone is an index of at most 14,025 chunks, below the size from
which the engine treats a large index's common words differently (``COMMON_MIN_CHUNKS``
in ``search/candidates.py``, 20,000). This benchmark puts six of them into one index of
28,676 chunks, each set a source of its own, and asks each set's questions of the whole
index: the other sets are distractors, as another product's pages would be.

* SciFact, TF Hub, TorchHub, tldr descriptions (BEIR format): nDCG@10 and hit@1;
* Kubernetes and Twilio (``api_questions_dev``, answerable questions): hit@1 and hit@5;
* the Python docs (``data/python_docs_verdicts.jsonl``, answerable questions): hit@1
  and hit@5;
* the median search time over every question.

The index is built by copying the indexes of ``fit_verdict.py``
(``benchmarks/results/tmp/verdict-*.db``, built there once),
vectors included, so keyword and hybrid mode are both measured without embedding
anything. ``--baseline SRC`` measures another version's code (``SRC`` is its ``src``
folder) on the same index in the same run, alternating with this code::

    python benchmarks/mixed_index.py [--modes keyword,hybrid] [--baseline /tmp/base/src]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from verdicts import BEIR, CACHE, beir_questions, ndcg10, verdict_questions  # noqa: E402

from groundkb import KnowledgeBase, Settings  # noqa: E402

PARTS = ("scifact", "tfhub", "torchhub", "tldr", "pydocs", "api")
PYDOCS = HERE / "data" / "python_docs_verdicts.jsonl"


def build(target: Path) -> None:
    """Copy every part's index into ``target``; a part's ``eval`` source takes the part's
    name."""
    from groundkb.models import Filters
    from groundkb.store import open_store

    missing = [p for p in PARTS if not (CACHE / f"verdict-{p}.db").exists()]
    if missing:
        raise SystemExit(f"missing indexes {missing}: run benchmarks/fit_verdict.py once")
    part = target.with_suffix(".part")
    part.unlink(missing_ok=True)
    store = open_store(str(part))
    seen: set[str] = set()
    for name in PARTS:
        origin = open_store(str(CACHE / f"verdict-{name}.db"), read_only=True)
        embedder = origin.embedder()
        if embedder is not None and store.embedder() is None:
            store.set_embedder(*embedder)
        for info in origin.sources():
            source = info.source.name if info.source.name != "eval" else name
            store.put_source(dataclasses.replace(info.source, name=source))
            offset = 0
            while page := origin.list_documents(
                Filters(sources=(info.source.name,)), limit=500, offset=offset
            ):
                offset += len(page)
                ids = [d.id for d in page]
                if seen & set(ids):
                    raise SystemExit(f"{name}: document ids clash with another set's")
                seen.update(ids)
                chunks: dict[str, list[Any]] = {}
                for c in origin.chunks(ids):
                    chunks.setdefault(c.doc_id, []).append(c)
                for doc in origin.documents(ids):
                    store.write(dataclasses.replace(doc, source=source), chunks.get(doc.id, []))
                if embedder is not None:
                    wanted = [c.id for cs in chunks.values() for c in cs]
                    store.put_vectors(sorted(origin.get_vectors(wanted).items()))
        origin.close()
        print(f"  copied {name}: {len(seen)} documents so far", file=sys.stderr, flush=True)
    store.close()
    part.rename(target)


def evaluate(db: str, mode: str) -> dict[str, Any]:
    settings = Settings(
        db=db,
        retrieval=mode,
        embedder="minilm" if mode == "hybrid" else "none",
        max_chunks_per_doc=1,
        fallback_p95_ms=1e12,
    )
    times: list[float] = []
    out: dict[str, Any] = {}
    with KnowledgeBase.open(settings=settings) as kb:

        def ask(query: str, limit: int) -> list[str]:
            started = time.perf_counter()
            r = kb.search(query[:2000], limit=limit)
            times.append((time.perf_counter() - started) * 1000)
            if r.notice:
                raise SystemExit(f"search fell back: {r.notice}")
            return list(dict.fromkeys(h.doc_id for h in r.hits))

        for name in ("scifact", "tfhub", "torchhub", "tldr"):
            ndcg, hit1 = [], 0
            for query, rels in beir_questions(BEIR[name]):
                ranked = ask(query, 10)
                ndcg.append(ndcg10(ranked, rels))
                hit1 += bool(ranked) and rels.get(ranked[0], 0) > 0
            n = len(ndcg)
            out[name] = {"ndcg@10": round(sum(ndcg) / n, 4), "hit@1": round(hit1 / n, 4)}
        api = [(q, rel) for q, expect, rel, _ in verdict_questions("api") if expect == "answer"]
        py = [json.loads(line) for line in PYDOCS.read_text().splitlines()]
        pages = [(q["query"], set(q["relevant"])) for q in py if q["expect"] == "answer"]
        for name, questions, key in (
            ("api", api, lambda d: d),
            ("pydocs", pages, lambda d: urlsplit(d).path.lstrip("/")),
        ):
            hit1 = hit5 = 0
            for query, rel in questions:
                ranked = [key(d) for d in ask(query, 5)]
                hit1 += bool(ranked) and ranked[0] in rel
                hit5 += bool(rel & set(ranked))
            n = len(questions)
            out[name] = {"hit@1": round(hit1 / n, 4), "hit@5": round(hit5 / n, 4)}
    out["p50_ms"] = round(statistics.median(times), 3)
    out["questions"] = len(times)
    return out


def run_other(src: str, db: str, mode: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": src}
    done = subprocess.run(
        [sys.executable, __file__, "--db", db, "--evaluate", mode],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument(
        "--db", default=str(CACHE / "mixed.db"), help="the mixed index (or a copy's URL)"
    )
    ap.add_argument("--fresh", action="store_true", help="rebuild the mixed index")
    ap.add_argument("--modes", default="keyword,hybrid")
    ap.add_argument("--baseline", help="another version's src folder, measured alike")
    ap.add_argument("--evaluate", help=argparse.SUPPRESS)
    ap.add_argument("--json", type=Path, default=HERE / "results" / "mixed_index.json")
    args = ap.parse_args()
    if args.evaluate:
        print(json.dumps(evaluate(args.db, args.evaluate)))
        return 0
    if "://" not in args.db and (args.fresh or not Path(args.db).exists()):
        Path(args.db).unlink(missing_ok=True)
        print(f"building {args.db}", file=sys.stderr)
        build(Path(args.db))
    where = args.db.rsplit("@", 1)[-1]  # never a URL's password
    results: dict[str, Any] = {"db": where, "baseline": args.baseline, "modes": {}}
    for mode in args.modes.split(","):
        row: dict[str, Any] = {}
        if args.baseline:
            row["before"] = run_other(args.baseline, args.db, mode)
        row["after"] = run_other(str(HERE.parent / "src"), args.db, mode)
        results["modes"][mode] = row
        for label, res in row.items():
            print(mode, label, json.dumps(res), flush=True)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
