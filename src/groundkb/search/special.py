"""The searches that leave the ranked path: a command looked up by its name, and a
question of two to four short topics answered topic by topic."""

from __future__ import annotations

import re
from collections.abc import Callable

from ..models import Chunk, Hit, SearchResult
from ..store.base import KeywordMatch, Store
from .commands import CommandIndex, CommandMatch
from .verdict import Scored, command_verdict, multi_intent_verdict

MAX_INTENT_WORDS = 5  # longest part of a multi-intent query
_SPLIT_INTENTS = re.compile(r"\s*(?:[,;+&]|\band\b|\bplus\b|\bvs\.?|\bversus\b)\s*", re.I)

#: (scored candidate, rank, retriever, score) -> the hit
MakeHit = Callable[[Scored, int, str, float], Hit]


def command_result(
    store: Store,
    text: str,
    cm: CommandMatch,
    limit: int,
    make_hit: MakeHit,
    index: CommandIndex | None = None,
) -> SearchResult:
    """The result of a query the command index answered (exactly, by completion, or
    with suggestions): each command's first chunk as its hit. A command that is an
    alias of another (a document whose ``metadata["alias_of"]`` names it, as tldr's
    alias pages do) is followed by the page of the command it stands for, looked up in
    ``index``."""
    hits: list[Hit] = []
    shown = list(cm.docs[:limit])
    documents = {d.id: d for d in store.documents([d.id for d in shown])}
    alias_of, target = "", None
    if len({d.id for d in cm.docs}) == 1 and cm.kind in ("exact", "completed"):
        found = documents.get(shown[0].id)
        alias_of = str(found.metadata.get("alias_of", "")) if found is not None else ""
        target = index.alias_target(alias_of, shown[0]) if alias_of and index else None
        if target is not None and limit > 1:
            shown.append(target)
            documents.update((d.id, d) for d in store.documents([target.id]))
    ids = [d.id for d in shown]
    firsts: dict[str, Chunk] = {}
    for c in store.chunks(ids):
        firsts.setdefault(c.doc_id, c)
    hashes = {i: d.content_hash for i, d in documents.items()}
    words = tuple(text.lower().split())
    for rank, doc in enumerate(shown, 1):
        first = firsts.get(doc.id)
        match = KeywordMatch(
            chunk_id=first.id if first else f"{doc.id}#0",
            doc_id=doc.id,
            index=0,
            score=0.0,
            fields={},
            text=first.text if first else doc.summary,
            header_path=first.header_path if first else doc.title,
            chunk_hash=first.chunk_hash if first else "",
            doc=doc,
            content_hash=hashes.get(doc.id, ""),
        )
        score = {"exact": 1.0, "completed": 0.9}.get(cm.kind, 0.5)
        if len(cm.docs) > 1:
            score = 0.5  # several commands: which one is asked
        elif rank > 1:
            score *= 0.9  # the command an alias stands for, after the alias
        exact = "title" if cm.kind == "exact" and rank == 1 else ""
        s = Scored(
            match,
            0.0,
            score,
            words,
            True,
            exact,
            bool(exact),
            (f"command name: {doc.command}",),
        )
        hits.append(make_hit(s, rank, "command", score))
    return SearchResult(
        text,
        command_verdict(text, cm, alias_of, target, next_hit=len(shown) > len(cm.docs[:limit])),
        tuple(hits),
        suggestions=cm.suggestions,
        terms=words,
    )


def multi_intent(
    text: str, limit: int, search_part: Callable[[str], SearchResult]
) -> SearchResult | None:
    """ "workspace and widgets": when every part is answered, each by a different
    document, an answer with the best hit of each part first; else None."""
    parts = [p for p in _SPLIT_INTENTS.split(text) if p and p.strip()]
    if len(parts) < 2 or len(parts) > 4 or any(len(p.split()) > MAX_INTENT_WORDS for p in parts):
        return None  # "workspace and widgets", not a sentence that happens to say "and"
    results = []
    for part in parts:  # the first part that is not answered settles it: no more searches
        r = search_part(part)
        if r.verdict.kind != "answer" or not r.hits:
            return None
        results.append(r)
    tops = [r.hits[0].doc_id for r in results]
    if len(set(tops)) < len(tops):
        return None
    hits: list[Hit] = [r.hits[0] for r in results]  # the best hit of every part first
    for r in results:
        for h in r.hits[1:]:
            if len(hits) >= max(limit, len(results)):
                break
            if h.chunk_id not in {x.chunk_id for x in hits}:
                hits.append(h)
    confidence = min(r.verdict.confidence for r in results)
    return SearchResult(
        query=text,
        verdict=multi_intent_verdict([r.hits[0].title for r in results], confidence),
        hits=tuple(hits),
        terms=tuple(t for r in results for t in r.terms),
        multi_intent=True,
        mode=results[0].mode,
    )


__all__ = ["MAX_INTENT_WORDS", "command_result", "multi_intent"]
