"""Meanings: which hits of one search are the same thing, and which compete.

A verdict asks whether the question singles out *one* thing. Several hits can be one
thing: chunks of one document, the same API operation in two versions of its API, the
same command documented for two platforms, or a command's entry and a page that shows
that very command (or is named like the command's entry: its title or an alias). Those
are one *meaning*; two hits of different meanings with close
scores are an ambiguity worth a question, two hits of one meaning are not.

:func:`group_meanings` walks hits in rank order and puts each hit into the first group
whose leading hit it is the same thing as (a pairwise test against the leader, not a
transitive closure: a how-to that shows three commands must not merge three meanings).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from ..analyze.text import tokenize
from ..store.base import DocSummary, KeywordMatch

T = TypeVar("T")

_MARKUP = re.compile(r"[`*_]+")


def mentions(text: str, command: str) -> bool:
    """Whether ``text`` shows ``command`` as written, as whole words (markup ignored)."""
    if not command:
        return False
    flat = " " + " ".join(_MARKUP.sub(" ", text.lower()).split()) + " "
    return f" {' '.join(command.lower().split())} " in flat


def same_meaning(
    a: KeywordMatch,
    b: KeywordMatch,
    families: Mapping[str, str],
    shown: Mapping[str, Sequence[str]] | None = None,
) -> bool:
    """Whether two hits answer with the same thing (see the module docstring); ``a`` is
    the leading hit of a meaning, ``b`` a later one.

    ``shown``: per document, the text of each of its chunks among the hits. A page that
    leads takes in a command that any of its chunks shows, not only the one that ranked
    first (the Reports page leads with its section on burndown charts, and its section
    on exporting shows ``orbit reports export``): the page answers, command included. A
    command that leads takes in a page's chunk only when that chunk shows it: the
    command's entry does not answer for the rest of the page."""
    if a.doc_id == b.doc_id:
        return True
    fa = families.get(a.doc_id)
    if fa is not None and fa == families.get(b.doc_id):
        return True
    da, db = a.doc, b.doc
    if da.type == db.type == "command":
        return bool(da.command) and da.command.lower() == db.command.lower()
    if da.type == "command" and db.type != "command":
        return mentions(b.text, da.command) or named_as(da, db.title)
    if db.type == "command" and da.type != "command":
        page = (shown or {}).get(a.doc_id) or (a.text,)
        return any(mentions(t, db.command) for t in page) or named_as(db, da.title)
    return False


def named_as(command: DocSummary, title: str) -> bool:
    """Whether a page titled ``title`` is named like the ``command``'s entry: its title
    or one of its aliases, as written ("Archive a project", the how-to, and the entry
    of ``orbit projects archive`` with that alias). The entry says the two are one
    thing, whichever part of the page matched."""
    words = tokenize(title)
    if not words or not command.command:
        return False
    return any(words == tokenize(name) for name in (command.title, *command.aliases))


@dataclass(frozen=True, slots=True)
class Meaning(Generic[T]):
    """One meaning among the hits: its leading (best-ranked) item and every item of it."""

    lead: T
    items: tuple[T, ...]


def group_meanings(
    items: Sequence[T],
    match: Callable[[T], KeywordMatch],
    families: Mapping[str, str],
    limit: int = 10,
) -> list[Meaning[T]]:
    """Group ``items`` (in rank order) into meanings, at most ``limit`` of them."""
    leads: list[T] = []
    members: list[list[T]] = []
    shown: dict[str, list[str]] = {}
    for item in items:
        m = match(item)
        shown.setdefault(m.doc_id, []).append(m.text)
    for item in items:
        m = match(item)
        for i, lead in enumerate(leads):
            if same_meaning(match(lead), m, families, shown):
                members[i].append(item)
                break
        else:
            if len(leads) >= limit:
                continue
            leads.append(item)
            members.append([item])
    return [Meaning(lead, tuple(group)) for lead, group in zip(leads, members, strict=True)]


__all__ = ["Meaning", "group_meanings", "mentions", "same_meaning"]
