"""Hybrid fusion: keyword and vector candidates merged into one order.

``rrf``: Σ 1 / (rrf_k + rank) over the lists a candidate is in. ``weighted``:
keyword_weight × BM25 + (1 − keyword_weight) × cosine, each min-max normalized over all
candidates (every candidate gets both scores; each chunk of an API operation the best
cosine of any of its chunks). Vector mode orders by cosine alone. In hybrid mode a
candidate whose title or alias is exactly the query comes first.

An API operation's fit to the question (``apis.operation_factor``: the action it asks
for, the resource it names) is part of its keyword rank, and so of the keyword side of
the fusion; the cosine is left as the embedder gives it. Multiplying the fused score by
the fit as well let the keyword side's reading of the question overrule the vector side
wherever the two disagreed: the question's verb decided even when it was a paraphrase
the fit misreads ("put a track into a playlist", "mark myself as away", "report
metered usage for a subscription item"). Measured on the eight APIs of
``benchmarks/api_questions.py``, six of them never tuned on (docs/benchmarks.md,
"Operation fit once in hybrid fusion").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..settings import Settings
from .rescore import Ranked


def fuse(
    ranked: list[Ranked],
    semantic: Sequence[tuple[str, float]],
    mode: str,
    settings: Settings,
    rank_missing: Callable[[list[str], bool], list[Ranked]],
) -> tuple[list[Ranked], dict[str, float], dict[str, dict[str, int]]]:
    """The candidates in fused order (each carrying its fused score as its rank), the
    cosine of every candidate that has one, and each candidate's rank per retriever.

    ``rank_missing(chunk_ids, keyword)`` ranks the vector candidates keyword search did
    not find (``keyword``: give them their BM25, which weighted fusion needs).
    """
    cosines = dict(semantic)
    by_id = {r[1].chunk_id: r for r in ranked}
    missing = [cid for cid, _ in semantic if cid not in by_id]
    weighted = mode == "hybrid" and settings.fusion == "weighted"
    for r in rank_missing(missing, weighted):
        by_id[r[1].chunk_id] = r
    ranks: dict[str, dict[str, int]] = {}
    for i, r in enumerate(ranked, 1):
        ranks.setdefault(r[1].chunk_id, {})["keyword"] = i
    for i, (cid, _) in enumerate(semantic, 1):
        ranks.setdefault(cid, {})["vector"] = i
    fused: dict[str, float] = {}
    if mode == "vector":
        fused = {cid: cos for cid, cos in semantic}
    elif settings.fusion == "weighted":
        if hasattr(semantic, "cosine"):
            cosines.update(semantic.cosine([c for c in by_id if c not in cosines]))
        own = {cid: cosines.get(cid, 0.0) for cid in by_id}
        if hasattr(semantic, "document_cosine"):
            # An API operation is one meaning however many chunks it has: each of its
            # chunks counts with the operation's best cosine, so that the chunk that
            # matches the words (its parameters, say) and the one that matches the
            # meaning (its summary) add up. The scale stays the chunks' own.
            ops = sorted({r[1].doc_id for r in by_id.values() if r[1].doc.operation_kind})
            best = semantic.document_cosine(ops)
            for cid, r in by_id.items():
                if r[1].doc_id in best:
                    cosines[cid] = max(own[cid], best[r[1].doc_id])
        kw = min_max({cid: r[0] for cid, r in by_id.items()})
        vec = min_max(own, {cid: cosines.get(cid, 0.0) for cid in by_id})
        w = settings.keyword_weight
        fused = {cid: w * kw[cid] + (1 - w) * vec[cid] for cid in by_id}
    else:
        k = settings.rrf_k
        for cid, rr in ranks.items():
            fused[cid] = sum(1.0 / (k + n) for n in rr.values())
    if mode == "hybrid":  # a query that names a document exactly finds it first
        fused = {c: f + (1.0 if by_id[c][2] else 0.0) for c, f in fused.items() if c in by_id}
    order = sorted((cid for cid in fused if cid in by_id), key=lambda c: -fused[c])
    # Each candidate carries the score it is ranked by: the fused one.
    out: list[Ranked] = []
    for c in order:
        _, m, exact, in_title, bm25 = by_id[c]
        out.append((fused[c], m, exact, in_title, bm25))
    return out, cosines, ranks


def min_max(scores: dict[str, float], values: dict[str, float] | None = None) -> dict[str, float]:
    """``values`` (default: ``scores``) scaled so that the lowest of ``scores`` is 0 and
    the highest 1 (capped at 1)."""
    if not scores:
        return {}
    lo, hi = min(scores.values()), max(scores.values())
    span = hi - lo
    return {
        k: min((v - lo) / span, 1.0) if span > 0 else 1.0
        for k, v in (scores if values is None else values).items()
    }


__all__ = ["fuse", "min_max"]
