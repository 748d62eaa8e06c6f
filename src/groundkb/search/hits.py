"""Search hits from scored candidates: de-duplication per document, the hit itself
(snippet, citation, summary, explanation), and the order rules applied to hit lists."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..models import Hit
from ..store.base import KeywordMatch
from .evidence import citation, snippet
from .verdict import Scored

_LEAD = 80  # characters of a summary compared with the opening of a chunk


def dedupe(scored: Sequence[Scored], limit: int, per_doc: int) -> list[Scored]:
    """At most ``per_doc`` chunks of a document; one of an API operation or a command,
    which is one thing to call or run, not a page to read in parts."""
    out: list[Scored] = []
    counts: dict[str, int] = {}
    for s in scored:
        n = counts.get(s.match.doc_id, 0)
        if n >= (1 if s.match.doc.type in ("api", "command") else per_doc):
            continue
        counts[s.match.doc_id] = n + 1
        out.append(s)
        if len(out) >= limit:
            break
    return out


def copies(matches: Sequence[KeywordMatch]) -> set[str]:
    """Documents among ``matches`` (in rank order) whose every matching chunk a
    better-ranked document, itself no copy, holds too (the same hash: title, headings
    and text): copies under another id, as when a site serves one page at ``/`` and at
    ``/index.html`` or a man page is installed under each of its names. They say
    nothing the first one does not. A document with one chunk of its own is no copy."""
    first: dict[str, int] = {}
    hashes: dict[str, list[str]] = {}
    holders: dict[str, list[str]] = {}
    for i, m in enumerate(matches):
        first.setdefault(m.doc_id, i)
        hashes.setdefault(m.doc_id, []).append(m.chunk_hash)
        holders.setdefault(m.chunk_hash, []).append(m.doc_id)
    found: set[str] = set()
    for doc in first:  # in rank order of each document's best chunk
        shared: set[str] | None = None
        for h in hashes[doc]:
            if not h:
                shared = set()
            else:
                mine = {d for d in holders[h] if first[d] < first[doc] and d not in found}
                shared = mine if shared is None else shared & mine
            if not shared:
                break
        if shared:
            found.add(doc)
    return found


def hit_of(
    s: Scored,
    rank: int,
    retriever: str,
    score: float,
    snippet_chars: int,
    endpoint: Mapping[str, Any],
) -> Hit:
    """The hit of a scored candidate at ``rank``; ``endpoint``: an API operation's
    method, path, resource and whether it is deprecated (empty for other documents)."""
    m = s.match
    return Hit(
        doc_id=m.doc_id,
        chunk_id=m.chunk_id,
        title=m.doc.title,
        type=m.doc.type,
        category=m.doc.category,
        source=m.doc.source,
        snippet=snippet(m.text, s.matched, max(40, snippet_chars)),
        score=score,
        matched_terms=s.matched,
        header_path=m.header_path,
        content_hash=m.content_hash,
        chunk_hash=m.chunk_hash,
        citation=citation(m.doc, m.header_path),
        explanation=(*s.explanation, f"bm25 {m.score:.2f}, rank {rank}"),
        ranks={retriever: rank},
        retriever=retriever,
        command=m.doc.command,
        summary=summary_beside(m),
        **endpoint,
    )


def monotone(hits: Sequence[Hit]) -> tuple[Hit, ...]:
    """Scores never rise down the list (a hit is never worth more than one above it)."""
    out: list[Hit] = []
    for h in hits:
        if out and h.score > out[-1].score:
            h = replace(h, score=out[-1].score)
        out.append(h)
    return tuple(out)


def lead_first(scored: list[Scored]) -> list[Scored]:
    """A definition is answered by the top document's lead: its first matching chunk."""
    top = scored[0].match.doc_id
    same = sorted((s for s in scored if s.match.doc_id == top), key=lambda s: s.match.index)
    return [*same, *(s for s in scored if s.match.doc_id != top)]


def summary_beside(m: KeywordMatch) -> str:
    """The document's summary for a hit on chunk ``m``, unless it is just the opening of
    that chunk (a page's first paragraph, derived at ingest): the snippet is a window of
    the same passage, and the whole passage is one ``get_document`` away."""
    summary = m.doc.summary
    lead = summary.rstrip("…").strip()[:_LEAD]
    if m.index == 0 and lead and " ".join(m.text[: 2 * _LEAD].split()).startswith(lead):
        return ""
    return summary


def distinct_titles(
    scored: Sequence[Scored], n: int, words: frozenset[str] | None = None
) -> tuple[str, ...]:
    """The first ``n`` distinct titles of the candidates, in rank order; with ``words``
    (index terms of the question), only titles that hold one of them: a did-you-mean
    names pages the question names, not whatever matched its body text."""
    out: list[str] = []
    for s in scored:
        title = s.match.doc.title
        if title in out:
            continue
        if words is not None and words.isdisjoint(s.match.fields["title"].split()):
            continue
        out.append(title)
        if len(out) >= n:
            break
    return tuple(out)


__all__ = [
    "copies",
    "dedupe",
    "distinct_titles",
    "hit_of",
    "lead_first",
    "monotone",
    "summary_beside",
]
