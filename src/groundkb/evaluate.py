"""Retrieval evaluation on BEIR-format datasets (corpus.jsonl, queries.jsonl, qrels.tsv).

Builds a throwaway index of the corpus, runs every judged query through the same
``KnowledgeBase.search`` agents use, and reports ranking quality (nDCG@10, Recall@10,
Recall@100, MRR@10, hit@1, computed per document), latency and ingest throughput.
"""

from __future__ import annotations

import json
import math
import statistics
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .api import KnowledgeBase
from .errors import GroundKBError, InvalidInput
from .models import IngestReport, Stats
from .settings import Settings

NO_FALLBACK_MS = 1e12  # fallback_p95_ms that never trips: evaluations measure one mode


@dataclass(frozen=True, slots=True)
class EvalReport:
    dataset: str
    mode: str
    documents: int
    chunks: int
    queries: int
    ndcg_at_10: float
    recall_at_10: float
    recall_at_100: float
    mrr_at_10: float
    hit_at_1: float
    latency_p50_ms: float
    latency_p95_ms: float
    ingest_seconds: float
    ingest_chunks_per_s: float
    verdicts: Mapping[str, int] = field(default_factory=dict)
    # answered_correctly / answered_wrongly (the top hit is relevant or not; a query with
    # no relevant document is wrong whenever answered), clarified, abstained, and failed
    # (the query was refused, e.g. blank: it counts as a miss)
    outcomes: Mapping[str, int] = field(default_factory=dict)
    reasons: Mapping[str, int] = field(default_factory=dict)


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8") as f:
        header = f.readline().split()
        if header[:2] != ["query-id", "corpus-id"]:
            raise InvalidInput(f"{path}: expected a 'query-id corpus-id score' header")
        for line in f:
            parts = line.split()
            if len(parts) >= 2:
                score = int(float(parts[2])) if len(parts) > 2 else 1
                qrels.setdefault(parts[0], {})[parts[1]] = score
    return qrels


def read_queries(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    with path.open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                rec = json.loads(line)
                out[str(rec.get("id", rec.get("_id")))] = str(rec["text"])
    return out


def ndcg_at(ranked: list[str], rels: Mapping[str, int], k: int = 10) -> float:
    dcg = sum(rels.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted((r for r in rels.values() if r > 0), reverse=True)[:k]
    idcg = sum(r / math.log2(i + 2) for i, r in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at(ranked: list[str], rels: Mapping[str, int], k: int) -> float:
    relevant = {d for d, r in rels.items() if r > 0}
    return len(relevant & set(ranked[:k])) / len(relevant) if relevant else 0.0


def mrr_at(ranked: list[str], rels: Mapping[str, int], k: int = 10) -> float:
    for i, d in enumerate(ranked[:k]):
        if rels.get(d, 0) > 0:
            return 1.0 / (i + 1)
    return 0.0


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def evaluate(
    dataset: str | Path,
    settings: Settings | None = None,
    *,
    mode: str = "keyword",
    max_queries: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> EvalReport:
    """Evaluate one retrieval mode on a BEIR-format folder (see :func:`evaluate_modes`)."""
    return evaluate_modes(dataset, settings, [mode], max_queries=max_queries, progress=progress)[0]


def evaluate_modes(
    dataset: str | Path,
    settings: Settings | None,
    modes: Sequence[str | tuple[str, Mapping[str, object]]],
    *,
    max_queries: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[EvalReport]:
    """Evaluate several modes on one throwaway index (the corpus is embedded once).

    A mode is ``keyword``, ``vector`` or ``hybrid``, or ``(mode, {setting: value})`` to
    evaluate a variant such as ``("hybrid", {"fusion": "weighted"})``.
    """
    root = Path(dataset)
    for name in ("corpus.jsonl", "queries.jsonl", "qrels.tsv"):
        if not (root / name).is_file():
            raise InvalidInput(f"{root} is not a BEIR dataset: {name} is missing")
    variants = [(m, {}) if isinstance(m, str) else (m[0], dict(m[1])) for m in modes]
    for mode, _ in variants:
        if mode not in ("keyword", "vector", "hybrid"):
            raise InvalidInput(f"unknown mode {mode!r}; expected keyword, vector or hybrid")
    qrels = read_qrels(root / "qrels.tsv")
    queries = read_queries(root / "queries.jsonl")
    # A judged query with no relevant document (all scores 0) is unanswerable: the right
    # verdict for it is clarify or no_match.
    judged = [(qid, queries[qid]) for qid in sorted(qrels) if qid in queries]
    if max_queries:
        judged = judged[:max_queries]
    base = settings or Settings()
    semantic = any(mode != "keyword" for mode, _ in variants)
    reports = []
    with tempfile.TemporaryDirectory(prefix="groundkb-eval-") as tmp:
        s = base.replace(
            db=str(Path(tmp) / "eval.db"),
            max_chunks_per_doc=1,
            retrieval="hybrid" if semantic else "keyword",
            # a measurement of one mode: no automatic fall back on a busy machine
            fallback_p95_ms=NO_FALLBACK_MS,
        )
        with KnowledgeBase.open(settings=s) as kb:
            if semantic and kb.embedder() is None:
                raise InvalidInput("vector and hybrid modes need an embedder (setting `embedder`)")
            report = kb.ingest(root / "corpus.jsonl", source="eval")
            if report.errors:
                raise InvalidInput(f"{report.errors[0]} ({len(report.errors)} problems)")
            stats = kb.stats()
        for mode, overrides in variants:
            with KnowledgeBase.open(settings=s.replace(retrieval=mode, **overrides)) as kb:
                label = mode + "".join(f" {k}={v}" for k, v in overrides.items())
                reports.append(_run(kb, root.name, label, judged, qrels, stats, report, progress))
    return reports


def _run(
    kb: KnowledgeBase,
    dataset: str,
    mode: str,
    judged: list[tuple[str, str]],
    qrels: Mapping[str, Mapping[str, int]],
    stats: Stats,
    report: IngestReport,
    progress: Callable[[int, int], None] | None,
) -> EvalReport:
    ndcg: list[float] = []
    r10: list[float] = []
    r100: list[float] = []
    mrr: list[float] = []
    hit1: list[float] = []
    latency: list[float] = []
    verdicts: dict[str, int] = {}
    outcomes: dict[str, int] = {}
    reasons: dict[str, int] = {}
    for n, (qid, text) in enumerate(judged, 1):
        started = time.perf_counter()
        rels = qrels[qid]
        try:
            result = kb.search(text, limit=100)
        except GroundKBError:  # one bad query (a blank one) is a miss, never the end
            outcomes["failed"] = outcomes.get("failed", 0) + 1
            if any(r > 0 for r in rels.values()):
                for metric in (ndcg, r10, r100, mrr, hit1):
                    metric.append(0.0)
            continue
        if result.fallback:  # a long query cut to the limit is fine; a fallback is not
            raise InvalidInput(f"search fell back to keyword ({result.fallback}): {result.notice}")
        latency.append((time.perf_counter() - started) * 1000)
        ranked = [h.doc_id for h in result.hits]
        if any(r > 0 for r in rels.values()):  # ranking metrics: answerable only
            ndcg.append(ndcg_at(ranked, rels))
            r10.append(recall_at(ranked, rels, 10))
            r100.append(recall_at(ranked, rels, 100))
            mrr.append(mrr_at(ranked, rels))
            hit1.append(1.0 if ranked and rels.get(ranked[0], 0) > 0 else 0.0)
        verdicts[result.verdict.kind] = verdicts.get(result.verdict.kind, 0) + 1
        top_ok = bool(ranked) and rels.get(ranked[0], 0) > 0
        outcome = {
            "answer": "answered_correctly" if top_ok else "answered_wrongly",
            "clarify": "clarified",
            "no_match": "abstained",
        }[result.verdict.kind]
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        reasons[result.verdict.reason] = reasons.get(result.verdict.reason, 0) + 1
        if progress:
            progress(n, len(judged))
    mean = statistics.fmean
    return EvalReport(
        dataset=dataset,
        mode=mode,
        documents=stats.documents,
        chunks=stats.chunks,
        queries=len(judged),
        ndcg_at_10=round(mean(ndcg), 4) if ndcg else 0.0,
        recall_at_10=round(mean(r10), 4) if r10 else 0.0,
        recall_at_100=round(mean(r100), 4) if r100 else 0.0,
        mrr_at_10=round(mean(mrr), 4) if mrr else 0.0,
        hit_at_1=round(mean(hit1), 4) if hit1 else 0.0,
        latency_p50_ms=round(percentile(latency, 0.5), 2),
        latency_p95_ms=round(percentile(latency, 0.95), 2),
        ingest_seconds=round(report.seconds, 2),
        ingest_chunks_per_s=round(stats.chunks / report.seconds, 1) if report.seconds else 0.0,
        verdicts=verdicts,
        outcomes=outcomes,
        reasons=reasons,
    )
