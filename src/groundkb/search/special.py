"""The searches that leave the ranked path: a command looked up by its name, and a
question of two to four short topics, or of things it compares, answered topic by
topic."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

from ..analyze.lexicon import base_verb
from ..analyze.text import STOP_WORDS, stem, tokenize
from ..models import Chunk, Hit, SearchResult
from ..store.base import KeywordMatch, Store
from .commands import CommandIndex, CommandMatch
from .verdict import Scored, command_verdict, multi_intent_verdict, part_of_comparison

MAX_INTENT_WORDS = 5  # longest part of a multi-intent query
_SPLIT_INTENTS = re.compile(r"\s*(?:[,;+&]|\band\b|\bplus\b|\bvs\.?|\bversus\b)\s*", re.I)
# A question that compares things asks about each: "what's the difference between
# archiving a task and archiving a project", "compare tokens with passwords", "how does a
# fork differ from a clone", "tokens compared to passwords". The words that compare say
# nothing about either thing (and a knowledge base that never says "difference" covers
# the question all the same); the engine searches the things, "X and Y".
_COMPARING = re.compile(
    r"^\W*(?:"
    r"(?:(?:what|where)(?:['’]s|\s+is|\s+are)\s+)?(?:the\s+)?(?:main\s+|key\s+|real\s+)?"
    r"differences?\s+between\s+(?P<a1>.+?)\s+and\s+(?P<b1>.+?)"
    r"|compare\s+(?P<a2>.+?)\s+(?:and|with|to|against)\s+(?P<b2>.+?)"
    r"|how\s+(?:does|do|is|are)\s+(?P<a3>.+?)\s+(?:differ|different)\s+from\s+(?P<b3>.+?)"
    r"|(?P<a4>.+?)\s+compared\s+(?:to|with)\s+(?P<b4>.+?)"
    r")\W*$",
    re.IGNORECASE,
)


def compared(text: str) -> list[str] | None:
    """The things a question compares ("the difference between tokens and passwords" →
    tokens, passwords), each as written and of at most :data:`MAX_INTENT_WORDS` words;
    None when it compares nothing."""
    m = _COMPARING.match(text)
    if m is None:
        return None
    parts = [p for c in m.groups() if c for p in _SPLIT_INTENTS.split(c) if p and p.strip()]
    if len(parts) < 2 or any(len(p.split()) > MAX_INTENT_WORDS for p in parts):
        return None  # "… have higher titers compared to controls" states, it compares nothing
    return parts


def intents(text: str) -> list[str]:
    """The topics of a question of two to four short ones ("workspace and widgets",
    "pause a rule and mute a project"), else the question alone: not a request with
    several objects ("get the current date and time" asks for the date and the time)."""
    parts = [p for p in _SPLIT_INTENTS.split(text) if p and p.strip()]
    if len(parts) < 2 or len(parts) > 4 or any(len(p.split()) > MAX_INTENT_WORDS for p in parts):
        return [text]  # "workspace and widgets", not a sentence that happens to say "and"
    if _request(parts[0]) and not all(_request(p) for p in parts[1:]):
        return [text]
    return parts


def _request(part: str) -> bool:
    """Whether a part asks for something done: two or more words, the first a verb in its
    base form ("mute a project", not "time" or "workspace")."""
    words = tokenize(part)
    return len(words) > 1 and base_verb(words[0])


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
    text: str, limit: int, search_part: Callable[[str], SearchResult], comparing: bool = False
) -> SearchResult | None:
    """ "workspace and widgets": when every part (:func:`intents`) is answered, each by
    a different document, an answer with the best hit of each part first; else None.

    ``comparing``: the parts are things the question compares (:func:`compared`). A part
    whose search asks which of several it means counts too when the other parts' answers
    are all those options but its best hit: "home" alone may be the Home page or the
    Dashboard (whose alias is home), but "the difference between home and the dashboard"
    means the Home page."""
    parts = intents(text)
    if len(parts) < 2:
        return None
    kinds = ("answer", "clarify") if comparing else ("answer",)
    results = []
    for part in parts:  # the first part that cannot count settles it: no more searches
        r = search_part(part)
        if r.verdict.kind not in kinds or not r.hits:
            return None
        if r.verdict.kind == "clarify" and r.verdict.reason != "ambiguous":
            return None
        results.append(r)
    answered = {r.hits[0].doc_id for r in results if r.verdict.kind == "answer"}
    for r in results:
        if r.verdict.kind == "clarify":
            others = {o.doc_id for o in r.verdict.options} - {r.hits[0].doc_id}
            if not others <= answered:
                return None
    tops = [r.hits[0].doc_id for r in results]
    if len(set(tops)) < len(tops):
        return None
    # the best hit of every part first; one the comparison settled is as sure as its part
    hits: list[Hit] = [
        r.hits[0] if r.verdict.kind == "answer" else replace(r.hits[0], score=_sure(r))
        for r in results
    ]
    for r in results:
        for h in r.hits[1:]:
            if len(hits) >= max(limit, len(results)):
                break
            if h.chunk_id not in {x.chunk_id for x in hits}:
                hits.append(h)
    confidence = min(
        r.verdict.confidence if r.verdict.kind == "answer" else _sure(r) for r in results
    )
    return SearchResult(
        query=text,
        verdict=multi_intent_verdict([r.hits[0].title for r in results], confidence, comparing),
        hits=tuple(hits),
        terms=tuple(t for r in results for t in r.terms),
        multi_intent=True,
        mode=results[0].mode,
    )


def compared_answer(result: SearchResult, things: list[str]) -> SearchResult:
    """The result of a comparison searched whole (its things were not each answered): an
    answer stands when its top hit matches a word of every thing compared; else the
    question asks about more than that hit, and the agent should ask before answering
    from it ("compare labels with saved views" and a page on saved views alone)."""
    if result.verdict.kind != "answer" or not result.hits:
        return result
    top = result.hits[0]
    matched = {stem(t) for term in top.matched_terms for t in tokenize(term)}
    if all(matched & _words(thing) for thing in things):
        return result
    verdict = part_of_comparison(result.verdict, top, things, result.signals.get("p_scope"))
    return replace(result, verdict=verdict)


def _words(text: str) -> set[str]:
    return {stem(t) for t in tokenize(text) if t not in STOP_WORDS}


def _sure(r: SearchResult) -> float:
    """How sure a part the comparison settled is: as sure as its search that the question
    is about something the knowledge base covers (its clarify was only which one)."""
    return round(float(r.signals.get("p_scope", r.verdict.confidence)), 4)


__all__ = [
    "MAX_INTENT_WORDS",
    "command_result",
    "compared",
    "compared_answer",
    "intents",
    "multi_intent",
]
