"""Verdicts from calibrated evidence: answer, ask for clarification, or say there is
no match.

For every search the engine measures a few signals (:class:`Signals`):

- ``known``     share of the question (idf-weighted clauses) the index has ever seen,
                as written or after typo correction; a word it never saw is the
                strongest sign of no match
- ``typo``      share found only after typo correction
- ``cover``     how much of the question the top hit covers, and in which fields
                (its evidence score, see ``evidence.py``)
- ``name``      share covered by the top hit's title, aliases, keywords or headings
- ``lead``      relative lead of the top hit's rank score over the best hit of a
                *different meaning* (``meaning.py``: chunks of one document, one
                operation in two API versions, one command on two platforms, a command
                and the page that shows it are one meaning)
- ``cosine``    cosine of the top meaning (hybrid), and ``cosine_lead`` its lead over
                the next meaning
- ``agree``     hybrid: keyword search and meaning search, each on its own, put a
                document of the top meaning first (two independent retrievers that
                agree are right far more often than either alone)
- ``exact``     the question is exactly the top hit's title or alias
- ``single``    the question is one word, and does not ask what it is
- ``dominant``  the next two meanings match only words the top meaning matches too, and
                cover less of the question: the top is the one that explains it

Two small logistic models turn them into probabilities (weights are declared settings
fitted by ``benchmarks/fit_verdict.py``; keyword and hybrid search have their own):

- ``P(scope)``: the question is about something the knowledge base covers;
- ``P(answer)``: the top hit answers it.

Then: no question words → no_match (empty_query); nothing matched → no_match
(no_hits); ``P(scope)`` below its threshold → no_match (unknown_terms when unseen words
decided, else below_threshold); the question is exactly one meaning's title or alias, or
defines a thing titled so → answer (exact_title, definition); ``P(answer)`` at or above its
threshold → answer (strong_match, or semantic_match when the cosine decided); a dominant
top meaning with ``P(answer)`` at or above the lower ``dominant`` threshold → answer
(dominant_match: the other candidates explain only part of what it explains);
else clarify: ambiguous with the competing meanings as options, or weak ("is this what
you mean?"), or no_title_or_keyword_hit when only body text matched. An answer from an
API operation that does another action than the question's verb asks, names none of
the resources the question names, does the verb to something the named resource holds,
or does it to another thing its title or path names the object only as part of (a
"workflow run" for "delete a workflow") or as where that thing goes ("Pins an item to a
channel" for "pin a channel"), becomes a clarify (near_miss): the shape of an operation
the API does not have.
The thresholds are chosen so that false answers on unanswerable development questions
stay at or below 2 %.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace

from ..analyze.text import STOP_WORDS, ParsedQuery, below_title, singular, stem, tokenize
from ..apinames import operation_in_id
from ..bounds import excerpt
from ..errors import ConfigError
from ..models import Hit, Option, Verdict, VerdictReason
from ..settings import Settings
from ..store.base import DocSummary, KeywordMatch
from .commands import CommandMatch, command_name
from .meaning import Meaning, group_meanings


@dataclass(frozen=True, slots=True)
class Scored:
    """A ranked candidate with its evidence."""

    match: KeywordMatch
    rank: float  # the score the candidate is ranked by (fused in hybrid mode)
    score: float  # evidence: idf-weighted share of the question it covers, in [0, 1]
    matched: tuple[str, ...]
    guard: bool  # some clause matched in a title, alias, keyword or heading
    exact: str  # "title" or "alias" when the query phrase equals one, else ""
    phrase_in_title: bool
    explanation: tuple[str, ...]
    name_share: float = 0.0  # idf-weighted share matched in names and headings
    cosine: float | None = None


FEATURES: tuple[str, ...] = (
    "known",
    "typo",
    "cover",
    "name",
    "phrase",
    "lead",
    "cover_lead",
    "cosine",
    "cosine_lead",
    "exact",
    "single",
    "terms",
    "agree",
)

_KEYWORD_EVIDENCE = ("cover", "name", "phrase", "lead", "cover_lead", "exact")

_LABELS = {
    "known": "question words the index knows",
    "typo": "words found only after typo correction",
    "cover": "question covered by the top hit",
    "name": "question covered by its title, aliases or headings",
    "phrase": "longest run of the question's words in the top hit",
    "lead": "lead over the next meaning",
    "cover_lead": "coverage lead over the next meaning",
    "cosine": "meaning similarity",
    "cosine_lead": "similarity lead over the next meaning",
    "exact": "exact title or alias",
    "single": "one-word question",
    "terms": "question length",
    "agree": "keyword and meaning search agree on the top hit",
}


@dataclass(frozen=True, slots=True)
class Logistic:
    """A logistic model over named signals: ``P = 1 / (1 + exp(-(bias + Σ w·x)))``."""

    weights: Mapping[str, float]
    threshold: float = 0.5  # the probability from which the model says yes

    @classmethod
    def parse(cls, text: str, setting: str = "model") -> Logistic:
        """``"threshold=0.6 bias=-2.1 cover=1.3 lead=2.0"``; unknown names are a
        ConfigError."""
        weights: dict[str, float] = {}
        for part in text.replace(",", " ").split():
            name, sep, value = part.partition("=")
            if not sep or (name not in ("bias", "threshold") and name not in FEATURES):
                raise ConfigError(
                    f"setting {setting!r}: expected name=weight pairs over bias, "
                    f"{', '.join(FEATURES)}; got {part!r}"
                )
            try:
                weights[name] = float(value)
            except ValueError:
                raise ConfigError(f"setting {setting!r}: {part!r} is not a number") from None
        threshold = weights.pop("threshold", 0.5)
        if not 0.0 < threshold < 1.0:
            raise ConfigError(f"setting {setting!r}: threshold must be between 0 and 1")
        return cls(weights, threshold)

    def logit(self, x: Mapping[str, float]) -> float:
        return self.weights.get("bias", 0.0) + sum(
            w * x.get(k, 0.0) for k, w in self.weights.items() if k != "bias"
        )

    def probability(self, x: Mapping[str, float]) -> float:
        z = max(-30.0, min(30.0, self.logit(x)))
        return 1.0 / (1.0 + math.exp(-z))

    def contributions(self, x: Mapping[str, float]) -> list[tuple[str, float]]:
        """Each signal's share of the logit, largest magnitude first."""
        parts = [(k, w * x.get(k, 0.0)) for k, w in self.weights.items() if k != "bias"]
        return sorted((p for p in parts if p[1]), key=lambda p: -abs(p[1]))


@dataclass(frozen=True, slots=True)
class VerdictModel:
    """The calibrated decision: two models, each with its threshold."""

    scope: Logistic
    answer: Logistic
    option_lead: float  # meanings within this relative lead of the top are options
    dominant: float = 1.0  # P(answer) from which a dominant top meaning answers


@dataclass(frozen=True, slots=True)
class ClauseStat:
    """What the index knows of one clause of the question."""

    weight: float  # idf of its rarest-but-present alternative (max idf if unseen)
    known: bool  # found as written (or as its stem or a synonym)
    typo: bool  # found only after typo correction


@dataclass(frozen=True, slots=True)
class Signals:
    """The measured evidence of one search and how the verdict used it."""

    values: Mapping[str, float]
    meanings: tuple[Meaning[Scored], ...] = ()
    scope: float = 0.0
    answer: float = 0.0
    unknown: tuple[str, ...] = field(default_factory=tuple)


def measure(
    parsed: ParsedQuery,
    stats: Sequence[ClauseStat],
    scored: Sequence[Scored],
    families: Mapping[str, str],
    keyword_matched: bool,
    firsts: Sequence[str] = (),
    meanings: Sequence[Meaning[Scored]] | None = None,
) -> Signals:
    """The signals of a search (see the module docstring); ``scored`` in rank order;
    ``firsts``: the document each retriever put first (hybrid search, else empty);
    ``meanings``: ``scored`` grouped already (else grouped here)."""
    total = sum(s.weight for s in stats) or 1.0
    values = {
        "known": sum(s.weight for s in stats if s.known or s.typo) / total,
        "typo": sum(s.weight for s in stats if s.typo) / total,
        # a bare word ("blueprint") may mean anything it names; "what is a blueprint?"
        # asks what the page on it says
        "single": 1.0 if len(stats) == 1 and not parsed.definitional else 0.0,
        "terms": math.log(1 + len(stats)) / math.log(11),
    }
    unknown = tuple(
        c.original for c, s in zip(parsed.clauses, stats, strict=True) if not s.known and not s.typo
    )
    if not scored:
        return Signals(values, unknown=unknown)
    if meanings is None:
        meanings = group_meanings(scored, lambda s: s.match, families)
    top = meanings[0]
    lead = top.lead
    values["cosine"] = max((s.cosine or 0.0) for s in top.items)
    if firsts:
        docs = {s.match.doc_id for s in top.items}
        values["agree"] = 1.0 if all(d in docs for d in firsts) else 0.0
    if keyword_matched:
        values["cover"] = max(s.score for s in top.items)
        values["name"] = max(s.name_share for s in top.items)
        values["exact"] = 1.0 if lead.exact else 0.0
        values["phrase"] = max(longest_run(parsed.asked, s.match) for s in top.items[:3])
    values["dominant"] = 1.0 if keyword_matched and dominates(top, meanings[1:3]) else 0.0
    if len(meanings) > 1:
        second = meanings[1].lead
        r1, r2 = lead.rank, second.rank
        values["lead"] = (r1 - r2) / r1 if r1 > 0 else 0.0
        c2 = max((s.cosine or 0.0) for s in meanings[1].items)
        values["cover_lead"] = values.get("cover", 0.0) - max(s.score for s in meanings[1].items)
        values["cosine_lead"] = values["cosine"] - c2
    else:
        values["lead"] = 1.0 if lead.rank > 0 else 0.0
        values["cosine_lead"] = values["cosine"]
        values["cover_lead"] = values.get("cover", 0.0)
    return Signals(values, tuple(meanings), unknown=unknown)


def dominates(top: Meaning[Scored], others: Sequence[Meaning[Scored]]) -> bool:
    """Whether every one of ``others`` matches only words ``top`` matches too, and covers
    less of the question: "tag a task as a bug" finds Task labels (tag, task, bug) before
    Create a Task (task) and Tasks (task); each of those explains part of what the first
    explains, so they are no alternative to it. Two meanings that match the same words
    equally ("delete": a task or a project) are."""
    words = {w for s in top.items for w in s.matched}
    cover = max(s.score for s in top.items)
    return all(
        {w for s in m.items for w in s.matched} <= words and max(s.score for s in m.items) < cover
        for m in others
    )


def longest_run(tokens: Sequence[str], m: KeywordMatch) -> float:
    """Share of the question's words (stop words included) in the longest run of them
    that a field of the hit holds word for word: the question's own wording in a
    document is strong evidence."""
    if not tokens:
        return 0.0
    words = [stem(t) for t in tokens]
    fields = [f" {v} " for v in m.fields.values() if v]
    best = 0
    n = len(words)
    for i in range(n):
        j = i + best + 1  # only longer runs matter
        while j <= n and any(f" {' '.join(words[i:j])} " in f for f in fields):
            best = j - i
            j += 1
    return best / n


NO_MATCH_MESSAGE = (
    "No documentation matches this. Say you do not know rather than guessing; "
    "ask which part the user means."
)


def option_of(d: DocSummary, header_path: str = "") -> Option:
    """An option naming a document; a command by its name (without example arguments);
    a page by its title and, when ``header_path`` (of the chunk that found it) is a
    section below the page's top, that section's heading."""
    return Option(
        d.id,
        d.title,
        d.category,
        d.type,
        " ".join(command_name(d.command)),
        section=section_of(d, header_path),
    )


def section_of(d: DocSummary, header_path: str) -> str:
    """The last heading of ``header_path`` when it names a section below the top of
    page ``d``; '' for the top, and for commands and API operations (each is one
    meaning whatever chunk found it)."""
    if not header_path or d.command or d.type in ("command", "api"):
        return ""
    below = below_title(header_path, d.title)
    last = below.rsplit(" > ", 1)[-1] if below else ""
    return last if last != d.title else ""


def _distinct(options: Sequence[Option], sources: Sequence[str]) -> tuple[Option, ...]:
    """``options`` as a question can offer them: each with its source (``sources``, in
    order) when they come from more than one (two APIs' "Create an assistant" differ by
    whose API it is), and with its document's id where two would still read the same,
    deprecated or not (one API's three "Create a refund" operations differ by method and
    path)."""
    if len(set(sources)) > 1:
        options = [replace(o, source=src) for o, src in zip(options, sources, strict=True)]
    # a deprecated operation still needs its method and path beside a current one
    labels = Counter(replace(o, deprecated=False).label for o in options)
    return tuple(
        replace(o, detail=operation_in_id(o.doc_id) or o.doc_id)
        if labels[replace(o, deprecated=False).label] > 1
        else o
        for o in options
    )


def _option(s: Scored, deprecated: Collection[str] = ()) -> Option:
    """The option a candidate offers: its page's section too when the section's heading
    holds a word of the question that the page's title does not ("Automations > Limits
    and loop protection" for "limits"), so not a heading every page has ("SYNOPSIS",
    "Details"), and not when the question names the page itself (its title holds the
    question, or is it); marked deprecated when its document is in ``deprecated`` (the
    API operations their spec marks so)."""
    option = option_of(s.match.doc, "" if s.exact or s.phrase_in_title else s.match.header_path)
    if option.section and not _adds_asked(option.section, option.title, s.matched):
        option = replace(option, section="")
    return replace(option, deprecated=True) if s.match.doc_id in deprecated else option


def _adds_asked(heading: str, title: str, matched: Sequence[str]) -> bool:
    """Whether ``heading`` holds a word of the question's ``matched`` (singular or not)
    that ``title`` does not."""
    asked = {singular(t) for m in matched for t in tokenize(m)}
    asked -= {singular(t) for t in tokenize(title)}
    return any(singular(t) in asked for t in tokenize(heading) if t not in STOP_WORDS)


def _short(option: Option, width: int = 72) -> str:
    """An option as the clarify message names it: a long title cut at a word (the
    options themselves keep the whole title), then its section."""
    if option.command or len(option.title) <= width:
        return option.label
    title = option.title[:width].rsplit(" ", 1)[0].rstrip(",;:") + "…"
    name = f"{title} > {option.section}" if option.section else title
    return f"{name} ({option.where})" if option.where else name


def _why(model: Logistic, values: Mapping[str, float]) -> tuple[str, ...]:
    return tuple(
        f"{_LABELS.get(k, k)} {values.get(k, 0.0):.2f} ({'+' if c > 0 else '−'})"
        for k, c in model.contributions(values)[:3]
    )


def _short_of(model: Logistic, values: Mapping[str, float]) -> tuple[str, ...]:
    """Why a model said no: the three signals whose shortfall cost the most (a signal
    that counts for it, times how far it is from 1; one that counts against, times its
    value)."""
    costs = []
    for k, w in model.weights.items():
        if k == "bias" or not w:
            continue
        v = values.get(k, 0.0)
        cost = w * (1.0 - min(v, 1.0)) if w > 0 else -w * v
        if cost > 0:
            costs.append((cost, k))
    costs.sort(key=lambda c: -c[0])
    return tuple(f"{_LABELS.get(k, k)} {values.get(k, 0.0):.2f} (−)" for _, k in costs[:3])


# Answers the calibrated models decided (not an exact name, a command or a definition):
# the ones a later look may doubt.
SCORED_ANSWERS = frozenset({"strong_match", "semantic_match", "dominant_match"})


def model_doubts(
    verdict: Verdict, top: Scored, signals: Signals, deprecated: Collection[str] = ()
) -> Verdict:
    """The clarify that replaces an answer when the rerank model says none of the
    results answers: ask before answering from the top hit."""
    return _doubted(
        verdict,
        top,
        signals,
        "weak",
        "I think you mean {option} — is that right? The rerank model found no result that "
        "answers; ask the user before answering from it.",
        "rerank model: no result answers",
        deprecated,
    )


def near_miss(
    verdict: Verdict, top: Scored, signals: Signals, why: str, deprecated: Collection[str] = ()
) -> Verdict:
    """The clarify that replaces an answer from an API operation that does not do what
    the question asks (``apis.near_miss``: another action, no resource the question
    names, or something the named resource holds): the API may have no such operation,
    and its nearest one is no answer."""
    return _doubted(
        verdict,
        top,
        signals,
        "near_miss",
        "The nearest operation is {option}, but " + why + ": the API may have no operation "
        "that does what was asked. Ask the user before answering from it.",
        f"near miss: {why}",
        deprecated,
    )


def _doubted(
    verdict: Verdict,
    top: Scored,
    signals: Signals,
    reason: VerdictReason,
    message: str,
    doubt: str,
    deprecated: Collection[str],
) -> Verdict:
    """An answer turned into a clarify that offers its top hit (``{option}`` in
    ``message``), as sure as a clarify ``decide`` gives: P(scope) · (1 − P(answer)),
    with ``doubt`` added to its evidence."""
    option = _option(top, deprecated)
    return Verdict(
        "clarify",
        round(signals.scope * (1 - signals.answer), 4),
        reason,
        message.replace("{option}", option.label),
        (option,),
        (*verdict.evidence, doubt),
    )


def part_of_comparison(
    verdict: Verdict, top: Hit, things: Sequence[str], scope: float | None = None
) -> Verdict:
    """The clarify that replaces an answer to a question comparing ``things`` when its
    top hit matches only some of them: ask before answering from it. As sure as a
    clarify ``decide`` gives: P(scope) (``scope``, else the answer's confidence) × (1 −
    P(answer))."""
    confidence = round(
        (verdict.confidence if scope is None else scope) * (1 - verdict.confidence), 4
    )
    return Verdict(
        "clarify",
        confidence,
        "weak",
        f"The question compares {' and '.join(things)}; {top.title} matches only part of "
        "it. Ask the user before answering from it.",
        (Option(top.doc_id, top.title, top.category, top.type, top.command),),
        (*verdict.evidence, "the top hit does not match every thing compared"),
    )


def decide(
    parsed: ParsedQuery,
    signals: Signals,
    model: VerdictModel,
    keyword_matched: bool,
    deprecated: Collection[str] = (),
) -> tuple[Verdict, Signals]:
    """The verdict for a search, and the signals with the two probabilities filled in;
    ``deprecated``: the API operations their spec marks so (an answer or option from one
    says it)."""
    if not parsed.clauses:
        return (
            Verdict(
                "no_match",
                1.0,
                "empty_query",
                "The question names nothing to look up. " + NO_MATCH_MESSAGE,
            ),
            signals,
        )
    x = signals.values
    p_scope = model.scope.probability(x)
    p_answer = model.answer.probability(x)
    out = Signals(x, signals.meanings, p_scope, p_answer, signals.unknown)
    meanings = signals.meanings
    # the words it never saw, named whatever decided ("how do I deploy to Heroku": the
    # agent can say the docs do not mention Heroku)
    # (each quoted short: a question may be one 2,000-character token)
    words = ", ".join(excerpt(w, 40) for w in signals.unknown[:3])
    detail = f" The knowledge base never mentions {words}." if words else ""
    if not meanings:
        return Verdict("no_match", 1.0, "no_hits", NO_MATCH_MESSAGE + detail), out
    if p_scope < model.scope.threshold:
        unseen = x.get("known", 0.0) < 0.5 and signals.unknown
        reason: VerdictReason = "unknown_terms" if unseen else "below_threshold"
        return (
            Verdict(
                "no_match",
                round(1 - p_scope, 4),
                reason,
                NO_MATCH_MESSAGE + detail,
                evidence=_short_of(model.scope, x),
            ),
            out,
        )
    top = meanings[0].lead
    title = top.match.doc.title
    if top.match.doc_id in deprecated:
        title += " (deprecated in its API spec)"
    named = [m for m in meanings if m.lead.exact and len(m.lead.matched) == len(parsed.clauses)]
    titled = [m for m in named if m.lead.exact == "title"]
    # "what is X" is defined by the one document titled X (an alias does not define);
    # a question that is exactly one meaning's title or alias names it.
    definition = parsed.definitional and top.exact == "title" and len(titled) == 1
    if keyword_matched and (definition or (top.exact and len(named) == 1)):
        exact: VerdictReason = "definition" if definition else "exact_title"
        p_answer = round(max(p_answer, 0.9), 4)
        out = Signals(x, signals.meanings, p_scope, p_answer, signals.unknown)
        return (
            Verdict(
                "answer",
                p_answer,
                exact,
                f"Answer from {title}.",
                evidence=(f"exact {top.exact}",),
            ),
            out,
        )
    if p_answer >= model.answer.threshold and len(named) <= 1:
        parts = dict(model.answer.contributions(x))
        semantic = parts.get("cosine", 0.0) + parts.get("cosine_lead", 0.0)
        keyword = sum(parts.get(k, 0.0) for k in _KEYWORD_EVIDENCE)
        by_meaning = not keyword_matched or semantic > keyword
        kind: VerdictReason = "semantic_match" if by_meaning else "strong_match"
        section = _option(top).section  # the part of a long page that answers
        message = f"Answer from {f'{title} > {section}' if section else title}." + (
            " (matched by meaning; check it fits)" if kind == "semantic_match" else ""
        )
        return (
            Verdict("answer", round(p_answer, 4), kind, message, evidence=_why(model.answer, x)),
            out,
        )
    if x.get("dominant") and p_answer >= model.dominant and len(named) <= 1:
        section = _option(top).section
        return (
            Verdict(
                "answer",
                round(p_answer, 4),
                "dominant_match",
                f"Answer from {f'{title} > {section}' if section else title} (no other "
                "result matches more than part of what it matches).",
                evidence=(
                    "no other result matches more than part of what it matches",
                    *_why(model.answer, x),
                ),
            ),
            out,
        )
    confidence = round(p_scope * (1 - p_answer), 4)
    floor = (1 - model.option_lead) * top.rank
    close = [m.lead for m in meanings[:3] if m.lead.rank >= floor and m.lead.rank > 0]
    if len(named) > 1:
        close = [m.lead for m in named[:3]]
    evidence = _why(model.answer, x)
    if len(close) > 1:
        options = _distinct(
            [_option(s, deprecated) for s in close], [s.match.doc.source for s in close]
        )
        listed = " or ".join(_short(o) for o in options)
        return (
            Verdict(
                "clarify",
                confidence,
                "ambiguous",
                f"Ambiguous: do you mean {listed}? Ask the user which one.",
                options,
                evidence,
            ),
            out,
        )
    body_only = keyword_matched and not (top.guard or top.phrase_in_title)
    return (
        Verdict(
            "clarify",
            confidence,
            "no_title_or_keyword_hit" if body_only else "weak",
            f"I think you mean {_option(top, deprecated).label} — is that right? "
            "Ask the user before answering from it.",
            (_option(top, deprecated),),
            evidence,
        ),
        out,
    )


def command_verdict(
    query: str,
    cm: CommandMatch,
    alias_of: str = "",
    target: DocSummary | None = None,
    next_hit: bool = False,
) -> Verdict:
    """The verdict of a query the command index answered; ``alias_of``: the command the
    one command found is an alias of, ``target`` that command's document (None when the
    knowledge base does not have it), ``next_hit``: whether it follows as a hit."""
    if cm.kind in ("exact", "completed") and len({d.id for d in cm.docs}) == 1:
        doc = cm.docs[0]
        alias = ""
        if target is not None:
            where = "documented in the next hit" if next_hit else "a documented command"
            alias = f" It is an alias of `{target.command or alias_of}`, {where}."
        elif alias_of:
            alias = (
                f" It is an alias of `{alias_of}`, which the knowledge base does not "
                "document; do not describe that command's options from memory."
            )
        if cm.kind == "completed":
            return Verdict(
                "answer",
                0.9,
                "completed_command",
                f"`{query}` completes only to `{doc.command}`, a documented command." + alias,
                (option_of(doc),),
            )
        return Verdict(
            "answer",
            1.0,
            "exact_command",
            f"`{doc.command or query}` is a documented command." + alias,
        )
    if cm.kind in ("exact", "group", "completed"):
        options = _distinct([option_of(d) for d in cm.docs[:5]], [d.source for d in cm.docs[:5]])
        names = ", ".join(f"`{n}`" for n in cm.suggestions[:5]) or "several commands"
        return Verdict(
            "clarify", 0.5, "ambiguous", f"`{query}` covers {names}; which one?", options
        )
    hint = f" Did you mean {', '.join(f'`{s}`' for s in cm.suggestions)}?" if cm.suggestions else ""
    return Verdict(
        "no_match",
        1.0,
        "unknown_command",
        f"No command `{query}` exists; do not present it as one.{hint}",
    )


def multi_intent_verdict(
    titles: Sequence[str], confidence: float, compared: bool = False
) -> Verdict:
    """The answer to a question of several topics, or (``compared``) one that compares
    them."""
    if compared:
        message = "Compared: " + "; ".join(titles) + ". Answer from each and say how they differ."
    else:
        message = (
            "Several topics asked: "
            + "; ".join(titles)
            + ". Summarize each briefly and ask which one to go deeper on."
        )
    return Verdict("answer", confidence, "multi_intent", message)


def model_from_settings(settings: Settings, mode: str) -> VerdictModel:
    """The verdict model for ``mode`` (keyword, or else the hybrid one) from settings."""
    if mode == "keyword":
        scope, answer = settings.verdict_scope_keyword, settings.verdict_answer_keyword
        dominant = settings.verdict_dominant_keyword
        names = ("verdict_scope_keyword", "verdict_answer_keyword", "verdict_dominant_keyword")
    else:
        scope, answer = settings.verdict_scope_hybrid, settings.verdict_answer_hybrid
        dominant = settings.verdict_dominant_hybrid
        names = ("verdict_scope_hybrid", "verdict_answer_hybrid", "verdict_dominant_hybrid")
    if not 0.0 <= dominant <= 1.0:
        raise ConfigError(f"{names[2]} must be a probability between 0 and 1, not {dominant}")
    return VerdictModel(
        scope=Logistic.parse(scope, names[0]),
        answer=Logistic.parse(answer, names[1]),
        option_lead=settings.option_lead,
        dominant=dominant,
    )


__all__ = [
    "FEATURES",
    "ClauseStat",
    "Logistic",
    "Scored",
    "Signals",
    "VerdictModel",
    "command_verdict",
    "decide",
    "dominates",
    "measure",
    "model_doubts",
    "model_from_settings",
    "multi_intent_verdict",
    "option_of",
    "part_of_comparison",
]
