"""Keyword search benchmark: quality on the eval sets, speed on synthetic corpora.

Reports, in one run on this machine:

* on every BEIR-format set in ``../shared/eval/``: nDCG@10, Recall@10, hit@1 and query
  latency of keyword search (the same ``groundkb eval`` code path);
* on synthetic corpora of 10k and 100k chunks built from real text (SciFact abstracts
  and tldr descriptions, re-cut into Markdown pages with headings): first ingest
  throughput (chunks/s), re-ingest of the unchanged corpus (and its speed-up), and
  search latency p50/p95 at the default limit over real queries.

Run from the repository root (``make bench`` runs it)::

    python benchmarks/keyword_search.py [--eval DIR] [--sizes 10000,100000] [--json FILE]

Results go to ``benchmarks/results/keyword.json`` and are printed as Markdown.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from groundkb import GroundKBError, KnowledgeBase, Settings, __version__
from groundkb.evaluate import evaluate, percentile

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_EVAL = ROOT.parent / "shared" / "eval"
SECTIONS_PER_PAGE = 10


def real_paragraphs(eval_dir: Path) -> list[tuple[str, str]]:
    """(title, text) pairs of real prose: SciFact abstracts and tldr command descriptions."""
    out: list[tuple[str, str]] = []
    for name in ("beir_scifact", "tldr_docprompting_desc_dev", "gorilla_tensorflowhub"):
        path = eval_dir / name / "corpus.jsonl"
        if not path.is_file():
            continue
        with path.open(encoding="utf-8") as f:
            for line in f:
                rec = json.loads(line)
                text = " ".join(str(rec.get("text", "")).split())
                if len(text) > 40:
                    out.append((str(rec.get("title") or rec["id"]), text))
    if not out:
        sys.exit(f"no eval corpora under {eval_dir}")
    return out


def real_queries(eval_dir: Path, n: int = 300) -> list[str]:
    out: list[str] = []
    for name in ("beir_scifact", "tldr_docprompting_desc_dev", "gorilla_torchhub"):
        path = eval_dir / name / "queries.jsonl"
        if path.is_file():
            with path.open(encoding="utf-8") as f:
                out += [json.loads(line)["text"] for line in f if line.strip()][: n // 3]
    return out


def build_corpus(folder: Path, paragraphs: list[tuple[str, str]], chunks: int) -> None:
    """Markdown pages of SECTIONS_PER_PAGE sections, one section = one chunk.

    Sections reuse real paragraphs; past the first pass through them, each paragraph's
    sentences are re-shuffled so every chunk is distinct text.
    """
    rng = random.Random(chunks)
    folder.mkdir(parents=True, exist_ok=True)
    made = 0
    page = 0
    while made < chunks:
        lines = [f"# Page {page}: {paragraphs[page % len(paragraphs)][0]}", ""]
        for _ in range(min(SECTIONS_PER_PAGE, chunks - made)):
            title, text = paragraphs[made % len(paragraphs)]
            if made >= len(paragraphs):
                sentences = text.split(". ")
                rng.shuffle(sentences)
                text = ". ".join(sentences)
            lines += [f"## {title[:80]}", "", text[:1600], ""]
            made += 1
        sub = folder / f"{page // 1000:03d}"
        sub.mkdir(exist_ok=True)
        (sub / f"page-{page:06d}.md").write_text("\n".join(lines), encoding="utf-8")
        page += 1


def synthetic(eval_dir: Path, size: int, queries: list[str]) -> dict[str, Any]:
    paragraphs = real_paragraphs(eval_dir)
    with tempfile.TemporaryDirectory(prefix="groundkb-bench-") as tmp:
        docs = Path(tmp) / "docs"
        build_corpus(docs, paragraphs, size)
        settings = Settings(db=str(Path(tmp) / "bench.db"), embedder="none", retrieval="keyword")
        with KnowledgeBase.open(settings=settings) as kb:
            first = kb.ingest(docs, source="bench")
            stats = kb.stats()
            again = kb.ingest(docs, source="bench")
            kb.warm()  # as `groundkb serve` does at start (the typo vocabulary, derived data)
            for q in queries[:20]:  # warm the caches the way a running server has them
                kb.search(q)
            latency = []
            for q in queries:
                started = time.perf_counter()
                kb.search(q)
                latency.append((time.perf_counter() - started) * 1000)
            repeated = []  # the same questions once more: their candidate scores are kept
            for q in queries:
                started = time.perf_counter()
                kb.search(q)
                repeated.append((time.perf_counter() - started) * 1000)
            size_mb = stats.size_bytes / 1e6
            hybrid = hybrid_latency(kb, settings, queries)
        shutil.rmtree(docs, ignore_errors=True)
    return {
        "chunks": stats.chunks,
        "documents": stats.documents,
        "ingest_s": round(first.seconds, 2),
        "ingest_chunks_per_s": round(stats.chunks / first.seconds, 1),
        "reingest_unchanged_s": round(again.seconds, 3),
        "reingest_speedup": round(first.seconds / again.seconds, 1) if again.seconds else None,
        "reingest_unchanged_docs": again.unchanged,
        "queries": len(latency),
        "search_p50_ms": round(percentile(latency, 0.5), 2),
        "search_p95_ms": round(percentile(latency, 0.95), 2),
        "search_mean_ms": round(statistics.fmean(latency), 2),
        "search_again_p50_ms": round(percentile(repeated, 0.5), 2),
        "search_again_p95_ms": round(percentile(repeated, 0.95), 2),
        "db_mb": round(size_mb, 1),
        **hybrid,
    }


def hybrid_latency(kb: KnowledgeBase, settings: Settings, queries: list[str]) -> dict[str, Any]:
    """Hybrid search latency with the local model embedding each query.

    Embedding 100k chunks takes ~20 minutes on 2 cores, so the stored vectors here are
    random unit vectors: the cost of the search hardly depends on their values (from
    5k chunks the int8 scan computes exactly the rows within its error bound of the
    k-th best score, a few dozen more with real vectors or random ones;
    ``search_breakdown.py`` runs an index of real ones). The query embedding is real
    (all-MiniLM-L6-v2 int8).
    """
    try:
        import numpy as np

        from groundkb.embed import open_embedder

        emb = open_embedder("minilm")
    except GroundKBError as exc:
        return {"hybrid": f"skipped: {exc.message}"}
    assert emb is not None
    rng = np.random.default_rng(0)
    kb.store.set_embedder(emb.name, emb.dimension)
    while todo := kb.store.chunks_to_embed(5000):
        vectors = rng.standard_normal((len(todo), emb.dimension)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        kb.store.put_vectors(
            [(cid, v.tobytes()) for (cid, _), v in zip(todo, vectors, strict=True)]
        )
    embed_ms = []
    for q in queries[:100]:
        started = time.perf_counter()
        emb.embed_query(q)
        embed_ms.append((time.perf_counter() - started) * 1000)
    hybrid = settings.replace(embedder="minilm", retrieval="hybrid")
    with KnowledgeBase.open(settings=hybrid) as hkb:
        for q in queries[:20]:
            hkb.search(q)
        latency = []
        for q in queries:
            started = time.perf_counter()
            r = hkb.search(q)
            latency.append((time.perf_counter() - started) * 1000)
            assert r.mode == "hybrid", r.notice
    return {
        "query_embed_p50_ms": round(percentile(embed_ms, 0.5), 2),
        "hybrid_p50_ms": round(percentile(latency, 0.5), 2),
        "hybrid_p95_ms": round(percentile(latency, 0.95), 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--eval", type=Path, default=DEFAULT_EVAL, help="folder of BEIR sets")
    ap.add_argument("--sizes", default="10000,100000", help="synthetic corpus sizes (chunks)")
    ap.add_argument("--sets", default="", help="comma-separated eval sets (default: all)")
    ap.add_argument("--skip-eval", action="store_true")
    ap.add_argument("--json", type=Path, default=ROOT / "benchmarks/results/keyword.json")
    args = ap.parse_args()

    result: dict[str, Any] = {
        "groundkb": __version__,
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {platform.system()}",
        "eval": {},
        "synthetic": {},
    }
    if not args.skip_eval:
        wanted = [s for s in args.sets.split(",") if s]
        sets = sorted(p for p in args.eval.iterdir() if (p / "qrels.tsv").is_file())
        for path in sets:
            if wanted and path.name not in wanted:
                continue
            r = evaluate(path, Settings(embedder="none"), mode="keyword")
            result["eval"][path.name] = {
                "ndcg@10": r.ndcg_at_10,
                "recall@10": r.recall_at_10,
                "recall@100": r.recall_at_100,
                "mrr@10": r.mrr_at_10,
                "hit@1": r.hit_at_1,
                "p50_ms": r.latency_p50_ms,
                "p95_ms": r.latency_p95_ms,
                "ingest_chunks_per_s": r.ingest_chunks_per_s,
                "queries": r.queries,
            }
            print(f"eval {path.name}: {result['eval'][path.name]}", flush=True)
    queries = real_queries(args.eval)
    for size in (int(s) for s in args.sizes.split(",") if s):
        result["synthetic"][str(size)] = synthetic(args.eval, size, queries)
        print(f"synthetic {size}: {result['synthetic'][str(size)]}", flush=True)

    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(render(result))


def render(result: dict[str, Any]) -> str:
    lines = [
        "| set | nDCG@10 | R@10 | R@100 | hit@1 | p50 ms | p95 ms |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, r in result["eval"].items():
        lines.append(
            f"| {name} | {r['ndcg@10']:.4f} | {r['recall@10']:.4f} | {r['recall@100']:.4f}"
            f" | {r['hit@1']:.4f} | {r['p50_ms']} | {r['p95_ms']} |"
        )
    lines += [
        "",
        "| chunks | ingest chunks/s | unchanged re-ingest s | speed-up | keyword p50 / p95 ms"
        " | asked again p50 / p95 ms | hybrid p50 / p95 ms | query embed p50 ms | db MB |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["synthetic"].values():
        lines.append(
            f"| {r['chunks']} | {r['ingest_chunks_per_s']} | {r['reingest_unchanged_s']}"
            f" | {r['reingest_speedup']}× | {r['search_p50_ms']} / {r['search_p95_ms']}"
            f" | {r.get('search_again_p50_ms', '-')} / {r.get('search_again_p95_ms', '-')}"
            f" | {r.get('hybrid_p50_ms', '-')} / {r.get('hybrid_p95_ms', '-')}"
            f" | {r.get('query_embed_p50_ms', '-')} | {r['db_mb']} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
