"""The evidence for a hit: its score, matched terms and explanation, the snippet around
its matched terms, and its citation.

Evidence score, in [0, 1] and comparable across corpora:

    score(chunk)    = Σ_clauses idf(c) · field_factor(c) · match_factor(c) / Σ_clauses idf(c)
    field_factor    = 1.0 title or alias, 0.8 keywords, 0.7 header path, 0.4 body, 0 absent
                      (title and alias: 0.7 + 0.3 × the share of the name the query covers)
    match_factor    = 1.0 the word or its stem, 0.9 the stem of a known term or another
                      form of its verb in a name (title, alias, keyword, heading:
                      "Archive Tasks" for "archiving tasks"), 0.8 typo fix, 0.5 synonym
                      or another form of a verb in the body (keyword search)
    score           = 1.0 × match_factor when the query phrase equals the title or an alias
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import lru_cache

from ..analyze.text import Alternative, ParsedQuery, stem, tokenize
from ..store.base import DocSummary, KeywordMatch
from .verdict import Scored

FIELD_FACTOR = {"title": 1.0, "aliases": 1.0, "keywords": 0.8, "header": 0.7, "body": 0.4}
MATCH_FACTOR = {"exact": 1.0, "plural": 0.9, "inflection": 0.5, "typo": 0.8, "synonym": 0.5}
# Another form of the question's verb in a name counts as a plural does: titles and
# headings say "Archive Tasks" or "Uploading Files" whichever way the question is put.
NAME_FORM_FACTOR = 0.9
# the bits of the name fields in FIELD_FACTOR's order: title, aliases, keywords, header
_NAME_BITS = 0b1111
_NO_WORDS: frozenset[str] = frozenset()
_RUN = re.compile(r"[^\W_]+")  # a run of letters and digits: the words a snippet counts
# a Markdown code fence line (its info string too): no words, only noise in one line
_FENCE = re.compile(r"^[ \t]*(?:`{3,}|~{3,})[^`\n]*$", re.M)
# an API entry's name as a heading: a dotted identifier (a section's anchor never has a
# dot: Sphinx writes "formatter_class" and "ttk.Widget" sections as formatter-class and
# ttk-widget)
_HTML = (".html", ".htm", ".xhtml")
_ENTRY_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")


def contains(haystack: str, needle: tuple[str, ...]) -> bool:
    """Whether the analyzed field ``haystack`` holds the token sequence ``needle``."""
    if len(needle) == 1:
        return needle[0] in haystack.split()
    return f" {' '.join(needle)} " in f" {haystack} "


def stemmed_aliases(m: KeywordMatch) -> tuple[str, ...]:
    """The document's aliases as stems, for comparing with a (stemmed) query phrase; a
    title of the form "name — what it is" names the page by its name too ("json — JSON
    encoder and decoder", "git-rm - Remove files from the working tree")."""
    return _names(m.doc.title, m.doc.aliases)


# "json — JSON encoder and decoder", "Widgets – Overview", "git-rm - Remove files": a
# name, a dash between spaces, what it is
_DASH = re.compile(r" [—–-] ")


def title_name(title: str) -> str:
    """The name a title of the form "name — what it is" gives ("" for any other)."""
    if " - " not in title and " — " not in title and " – " not in title:
        return ""  # most titles: three substring tests, no pattern
    m = _DASH.search(title)
    if m is None:
        return ""
    name, rest = title[: m.start()].strip(), title[m.end() :].strip()
    return name if name and rest else ""


@lru_cache(maxsize=16384)
def _names(title: str, aliases: tuple[str, ...]) -> tuple[str, ...]:
    # every candidate of every question asks again (a document's title and aliases: one
    # look-up, their strings' hashes kept by Python)
    name = title_name(title)
    names = (*aliases, name) if name else aliases
    return tuple(" ".join(stem(t) for t in tokenize(a)) for a in names)


def score_evidence(
    rank: float,
    m: KeywordMatch,
    exact: str,
    in_title: bool,
    parsed: ParsedQuery,
    clause_weights: Sequence[float],
    stop_words: frozenset[str],
    holding: Callable[[tuple[str, ...]], int] | None = None,
    forms: Sequence[frozenset[str]] = (),
    terms: frozenset[str] | None = None,
) -> Scored:
    """The evidence for a ranked candidate: score, matched terms, explanation (above).

    ``holding``: the fields that hold an alternative's tokens, as bits in
    ``FIELD_FACTOR``'s order, when rescoring found them already (``Prepared.located``);
    otherwise each field's words are looked at here. ``forms``: per clause, the other
    forms of its verb as index terms (``rescore.clause_forms``), looked for in names.
    ``terms``: :func:`asked_terms` of ``parsed`` and ``forms``, when the caller has them
    already (``Prepared.terms``, once per query); otherwise collected here."""
    total = 0.0
    got = 0.0
    named = 0.0
    matched: list[str] = []
    explain: list[str] = []
    guard = False
    best_kind_factor = 1.0
    if terms is None:
        terms = asked_terms(parsed, forms)
    name_factor = _name_factor(m, terms, stop_words)
    # the fields that have text, each with its bit, its factor and its words (split once)
    fields = [
        (
            1 << bit,
            f,
            name_factor if f in ("title", "aliases") else factor,
            text,
            frozenset(text.split()) if holding is None else _NO_WORDS,
        )
        for bit, (f, factor) in enumerate(FIELD_FACTOR.items())
        if (text := m.fields[f])
    ]

    name_words: dict[str, frozenset[str]] = {}
    names_text: str | None = None
    # the most a verb's other form in a name can give a clause
    form_cap = max(name_factor, FIELD_FACTOR["keywords"]) * NAME_FORM_FACTOR
    for i, (clause, weight) in enumerate(zip(parsed.clauses, clause_weights, strict=True)):
        total += weight
        best = 0.0
        where = ""
        via: Alternative | None = None
        used = 1.0  # the match factor of the best match
        for alt in clause.alternatives:
            if via is not None and alt.kind == "inflection":
                break  # the other forms of a verb count where the word itself is absent
            kind = MATCH_FACTOR[alt.kind]
            tokens = alt.tokens
            held = holding(tokens) if holding is not None else 0
            for bit, field, factor, text, words in fields:
                if factor * kind <= best:
                    continue
                if holding is not None:
                    found = bool(held & bit)
                else:
                    found = tokens[0] in words if len(tokens) == 1 else contains(text, tokens)
                if found:
                    best, used = factor * kind, kind
                    where, via = field, alt
        if i < len(forms) and forms[i] and best < form_cap:
            # The forms that are the clause's own alternatives (keyword search) were
            # located by rescoring already: their fields are bits, no text to read.
            # (a clause's forms are its inflection alternatives when it has any, and
            # those come last: ``rescore.clause_forms``, ``analyze.text``)
            placed: dict[str, int] = {}
            unplaced = forms[i]
            if holding is not None and clause.alternatives[-1].kind == "inflection":
                for f in unplaced:
                    if bits := holding((f,)) & _NAME_BITS:
                        placed[f] = bits
                unplaced = _NO_WORDS
            if unplaced:  # most candidates' names hold no form: one look at them all
                if names_text is None:
                    names_text = " ".join(t for b, _, _, t, _ in fields if b & _NAME_BITS)
                if not any(f in names_text for f in unplaced):
                    unplaced = frozenset()
            if placed or unplaced:
                for bit, field, factor, text, words in fields:
                    if not bit & _NAME_BITS or factor * NAME_FORM_FACTOR <= best:
                        continue
                    in_name = [f for f, bits in placed.items() if bits & bit]
                    if unplaced and (words or any(f in text for f in unplaced)):
                        if not words:  # a name holds the start of a form: read its words
                            words = name_words.get(field) or name_words.setdefault(
                                field, frozenset(text.split())
                            )
                        in_name += unplaced & words
                    if in_name:
                        best, used = factor * NAME_FORM_FACTOR, NAME_FORM_FACTOR
                        where, via = field, Alternative((min(in_name),), "inflection")
        if via is not None:
            got += weight * best
            matched.append(clause.original)
            if where in ("title", "aliases", "keywords", "header"):
                guard = True
                named += weight
            shown = " ".join(via.tokens)
            note = (
                f"{where}: {clause.original}"
                if via.kind == "exact"
                and all(a.kind == "inflection" for a in clause.alternatives[1:])
                else (f"{where}: {clause.original} → {shown} ({via.kind})")
            )
            explain.append(note)
            best_kind_factor = min(best_kind_factor, used)
    score = got / total if total else 0.0
    if exact and len(matched) == len(parsed.clauses):
        score = max(score, best_kind_factor)
        explain.insert(0, f"exact {exact}")
    elif in_title:
        explain.insert(0, "query phrase in title")
    return Scored(
        match=m,
        rank=rank,
        score=round(min(score, 1.0), 4),
        matched=tuple(matched),
        guard=guard,
        exact=exact,
        phrase_in_title=in_title or bool(exact),
        explanation=tuple(explain),
        name_share=round(named / total, 4) if total else 0.0,
    )


def asked_terms(parsed: ParsedQuery, forms: Sequence[frozenset[str]] = ()) -> frozenset[str]:
    """The index terms of the question's alternatives and of ``forms`` (per clause, the
    other forms of its verb): the words of a name the question covers."""
    terms = {t for c in parsed.clauses for a in c.alternatives for t in a.tokens}
    terms.update(*forms)
    return frozenset(terms)


def _name_factor(m: KeywordMatch, terms: frozenset[str], stop_words: frozenset[str]) -> float:
    """0.7 + 0.3 × the share of the title's (or best alias's) words the query covers
    (``terms``: a word in another form of the question's verb included)."""
    best = 0.0
    for name in (m.fields["title"], *stemmed_aliases(m)):
        words = [t for t in name.split() if t not in stop_words]
        if words:
            best = max(best, sum(1 for t in words if t in terms) / len(words))
    return 0.7 + 0.3 * best


def snippet(text: str, terms: Sequence[str], width: int = 240) -> str:
    """The window of ``text`` with the most matched terms, about ``width`` characters,
    on one line (code fences left out; the code itself stays)."""
    if "```" in text or "~~~" in text:
        text = _FENCE.sub("", text)
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    words = {w for t in terms for w in tokenize(t)}
    if not words:
        return flat[:width].rsplit(" ", 1)[0] + "…"
    forms = {f.lower() for f in words | {w + "s" for w in words}}
    # Offsets of matched words; the best window starts at one of them. A form made of
    # letters and digits matches a whole run of them: found with str.find, then checked
    # for a non-alphanumeric (or no) character on each side.
    lowered = flat.lower()
    if len(lowered) == len(flat) and all(_RUN.fullmatch(f) for f in forms):
        starts = sorted(_runs_at(lowered, forms))
    else:
        alternation = "|".join(map(re.escape, sorted(forms, key=len, reverse=True)))
        pattern = re.compile(r"(?<![^\W_])(?:" + alternation + r")(?![^\W_])", re.I)
        starts = [m.start() for m in pattern.finditer(flat)]
    best, best_at = 0, 0
    j = 0
    for i, start in enumerate(starts):
        j = max(j, i)
        while j < len(starts) and starts[j] < start + width:
            j += 1
        if j - i > best:
            best, best_at = j - i, start
    if best_at:  # begin at a word boundary a little before the first match
        back = flat.rfind(" ", 0, max(0, best_at - 40))
        best_at = back + 1 if back >= 0 else 0
    cut = flat[best_at : best_at + width].rsplit(" ", 1)[0]
    return ("…" if best_at else "") + cut + "…"


def _runs_at(text: str, forms: set[str]) -> list[int]:
    """Where each form occurs in ``text`` as a whole run of letters and digits."""
    found = []
    end = len(text)
    for form in forms:
        at = text.find(form)
        while at >= 0:
            after = at + len(form)
            if (at == 0 or not text[at - 1].isalnum()) and (
                after == end or not text[after].isalnum()
            ):
                found.append(at)
            at = text.find(form, at + 1)
    return found


def citation(doc: DocSummary, header_path: str) -> str:
    """Where a hit is: the document's URI (or source and path) and, below its top, the
    anchor of its section: the heading's words joined by hyphens, or on a web page (or an
    HTML file) an API entry's dotted name (``os.path.ismount``, ``object.__init__``: the
    id a Sphinx page gives it, see ``ingest/html.py``)."""
    base = doc.uri or f"{doc.source}:{doc.origin or doc.id}"
    last = header_path.rsplit(" > ", 1)[-1] if header_path else ""
    if last and last != doc.title and "#" not in base:  # an entry's uri already has one
        web = base.endswith(_HTML) or base.startswith(("http://", "https://"))
        if web and _ENTRY_NAME.fullmatch(last):
            return f"{base}#{last}"
        return f"{base}#{'-'.join(tokenize(last))}"
    return base


__all__ = [
    "FIELD_FACTOR",
    "MATCH_FACTOR",
    "NAME_FORM_FACTOR",
    "asked_terms",
    "citation",
    "contains",
    "score_evidence",
    "snippet",
    "stemmed_aliases",
    "title_name",
]
