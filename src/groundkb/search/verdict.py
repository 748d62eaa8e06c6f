"""Verdicts: answer, ask for clarification, or say there is no match.

Rules, in order, on the top chunk and the best chunk of any *other* document
(``s1``, ``s2`` their evidence scores; ``confidence = (s1 - s2) / s1``):

1. no query words left after stop words                → no_match (empty_query)
2. no chunk matched                                    → no_match (no_hits)
3. no match in title, aliases, keywords or header path → clarify (no_title_or_keyword_hit)
4. fewer matched terms than ``min_matched_terms``       → clarify (few_matched_terms)
   (a query phrase found in the title or an alias counts as two)
5. ``s1 < min_score``                                   → clarify (weak)
6. the query asks to define a thing ("what is X", "explain X") and exactly one
   document is titled X                                → answer (definition)
7. the query is exactly the title or an alias of the top document and of no other
   document                                            → answer (exact_title)
8. the query is exactly the title or alias of several documents → clarify (ambiguous)
9. ``confidence < min_confidence``                      → clarify (ambiguous)
10. otherwise                                          → answer (strong_match)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from ..analyze.text import ParsedQuery
from ..models import Verdict
from ..settings import Settings
from ..store.base import KeywordMatch
from .commands import CommandMatch


@dataclass(frozen=True, slots=True)
class Scored:
    match: KeywordMatch
    rank: float
    score: float
    matched: tuple[str, ...]
    guard: bool
    exact: str  # "title" or "alias" when the query phrase equals one, else ""
    phrase_in_title: bool
    explanation: tuple[str, ...]


NO_MATCH_MESSAGE = (
    "No documentation matches this. Say you do not know rather than guessing; "
    "ask which part the user means."
)


def _label(s: Scored) -> str:
    doc = s.match.doc
    return f"{doc.title} ({doc.category})" if doc.category else doc.title


def decide(scored: Sequence[Scored], parsed: ParsedQuery, settings: Settings) -> Verdict:
    if not parsed.clauses:
        return Verdict(
            "no_match",
            0.0,
            "empty_query",
            "The question names nothing to look up. " + NO_MATCH_MESSAGE,
        )
    if not scored:
        return Verdict("no_match", 0.0, "no_hits", NO_MATCH_MESSAGE)
    top = scored[0]
    others = [s for s in scored if s.match.doc_id != top.match.doc_id]
    s1 = top.score
    s2 = max((s.score for s in others), default=0.0)
    confidence = round(max(0.0, (s1 - s2) / s1), 4) if s1 > 0 else 0.0
    matched = len(top.matched) + (1 if top.phrase_in_title else 0)
    weak = (
        f"Not sure this is what was asked. Is the question about {_label(top)}? "
        "If not, ask the user for the feature name."
    )
    if settings.require_title_or_keyword and not (top.guard or top.phrase_in_title):
        return Verdict("clarify", confidence, "no_title_or_keyword_hit", weak)
    if matched < min(settings.min_matched_terms, len(parsed.clauses) + 1):
        return Verdict("clarify", confidence, "few_matched_terms", weak)
    if s1 < settings.min_score:
        return Verdict("clarify", confidence, "weak", weak)
    titled = {s.match.doc_id for s in scored if s.exact == "title"}
    if parsed.definitional and top.exact == "title" and len(titled) == 1:
        return Verdict(
            "answer", max(confidence, s1), "definition", f"Answer from {top.match.doc.title}."
        )
    named = {s.match.doc_id: s for s in scored if s.exact}
    if top.exact and len(named) == 1:
        return Verdict(
            "answer", max(confidence, s1), "exact_title", f"Answer from {top.match.doc.title}."
        )
    if len(named) > 1:
        a, b = list(named.values())[:2]
        return Verdict(
            "clarify",
            confidence,
            "ambiguous",
            f"Ambiguous: do you mean {_label(a)} or {_label(b)}?",
        )
    if confidence < settings.min_confidence and others:
        second = max(others, key=lambda s: s.score)
        return Verdict(
            "clarify",
            confidence,
            "ambiguous",
            f"Ambiguous: do you mean {_label(top)} or {_label(second)}?",
        )
    return Verdict("answer", confidence, "strong_match", f"Answer from {top.match.doc.title}.")


def command_verdict(query: str, cm: CommandMatch) -> Verdict:
    if cm.kind == "exact" and len({d.id for d in cm.docs}) == 1:
        return Verdict(
            "answer",
            1.0,
            "exact_command",
            f"`{cm.docs[0].command or query}` is a documented command.",
        )
    if cm.kind in ("exact", "group"):
        names = ", ".join(f"`{n}`" for n in cm.suggestions[:5]) or "several commands"
        return Verdict("clarify", 0.5, "ambiguous", f"`{query}` covers {names}; which one?")
    hint = f" Did you mean {', '.join(f'`{s}`' for s in cm.suggestions)}?" if cm.suggestions else ""
    return Verdict(
        "no_match",
        0.0,
        "unknown_command",
        f"No command `{query}` exists; do not present it as one.{hint}",
    )


def multi_intent_verdict(titles: Sequence[str], confidence: float) -> Verdict:
    return Verdict(
        "answer",
        confidence,
        "multi_intent",
        "Several topics asked: "
        + "; ".join(titles)
        + ". Summarize each briefly and ask which one to go deeper on.",
    )


def semantic_verdict(
    verdict: Verdict, scored: Sequence[Scored], cosines: Mapping[str, float], settings: Settings
) -> Verdict:
    """The verdict with the vector evidence added.

    A keyword ``answer`` stands; its confidence averages the keyword lead with the cosine
    lead of the top document. A top hit that keyword evidence alone cannot answer (weak,
    too few terms, nothing in a title) becomes an ``answer`` only when its cosine clears
    ``min_vector_score`` and leads the next document by ``min_vector_margin``. An
    ambiguous or empty query is never turned into an answer by cosine.
    """
    if not scored:
        return verdict
    top = scored[0]
    c1 = cosines.get(top.match.chunk_id, 0.0)
    c2 = max(
        (cosines.get(s.match.chunk_id, 0.0) for s in scored if s.match.doc_id != top.match.doc_id),
        default=0.0,
    )
    lead = round(max(0.0, (c1 - c2) / c1), 4) if c1 > 0 else 0.0
    if verdict.kind == "answer":
        return replace(verdict, confidence=round((verdict.confidence + lead) / 2, 4))
    upgradable = ("weak", "few_matched_terms", "no_title_or_keyword_hit", "no_hits")
    if verdict.reason in upgradable and (
        c1 >= settings.min_vector_score and c1 - c2 >= settings.min_vector_margin
    ):
        return Verdict(
            "answer",
            round(c1 - c2, 4),
            "semantic_match",
            f"Answer from {top.match.doc.title} (matched by meaning; check it fits).",
        )
    return verdict
