"""Exact command look-up: a query shaped like a command is answered exactly or not at all.

A query is *command-shaped* when its first word is the program of a known command
(``helios``, ``git``) and it is a bare program name, has an option or hyphenated word,
its second word is a known subcommand of that program (or its singular or plural), or
at least half of its command words are words of that program's commands (``orbit
boards list``). Such a query returns the command it names (options and values after the
name are allowed; a plain word after a name that has subcommands is an unknown
subcommand, ``git sync --all``), the one command a half-typed last word completes to
(``orbit users inv`` → ``orbit users invite``), the commands under a group prefix or a
shared completion (to clarify), or nothing plus did-you-mean suggestions — never a near
miss.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from ..store.base import DocSummary

_PLACEHOLDER_START = ("-", "<", "[", "{", "$", "'", '"', "|", ">")


def _known(word: str, vocab: set[str]) -> bool:
    """``word`` or its plural or singular is in ``vocab``."""
    return word in vocab or word + "s" in vocab or (word.endswith("s") and word[:-1] in vocab)


def _copy(a: DocSummary, b: DocSummary) -> bool:
    """Whether ``a`` says what ``b`` says under another id (``egrep.1`` beside
    ``grep.1``, ``/`` beside ``/git.html``): one command to answer with, not two."""
    return (a.source, a.type, a.category, a.title, a.summary, a.aliases, a.keywords) == (
        b.source, b.type, b.category, b.title, b.summary, b.aliases, b.keywords
    )  # fmt: skip


def command_name(invocation: str) -> tuple[str, ...]:
    """The command words of an invocation: up to the first option, placeholder or value."""
    words: list[str] = []
    for word in invocation.strip().lower().split():
        if word.startswith(_PLACEHOLDER_START) or "=" in word or "/" in word or "." in word:
            break
        words.append(word)
    return tuple(words)


@dataclass(frozen=True, slots=True)
class CommandMatch:
    kind: Literal["exact", "completed", "group", "unknown"]
    docs: tuple[DocSummary, ...]
    suggestions: tuple[str, ...] = ()


class CommandIndex:
    """Command names of every ``command`` document, for exact look-ups."""

    def __init__(self, docs: Iterable[DocSummary]) -> None:
        self.docs = list(docs)
        self.by_name: dict[tuple[str, ...], list[DocSummary]] = {}
        for doc in self.docs:
            main = command_name(doc.command) if doc.command else ()
            names: set[tuple[str, ...]] = {main} if main else set()
            root = main[0] if main else ""
            for alias in doc.aliases:
                words = command_name(alias)
                if root and words and words[0] == root and len(words) > 1:
                    names.add(words)
            for name in names:
                if name:
                    found = self.by_name.setdefault(name, [])
                    if not any(_copy(doc, d) for d in found):
                        found.append(doc)
        self.roots = {name[0] for name in self.by_name}
        self.subcommands: dict[str, set[str]] = {}
        self.words: dict[str, set[str]] = {}  # every word of a program's command names
        for name in self.by_name:
            if len(name) > 1:
                self.subcommands.setdefault(name[0], set()).add(name[1])
                self.words.setdefault(name[0], set()).update(name[1:])
        self._display = {name: " ".join(name) for name in self.by_name}

    def __len__(self) -> int:
        return len(self.by_name)

    def is_command_shaped(self, query: str) -> bool:
        words = query.strip().lower().split()
        if not words or words[0] not in self.roots:
            return False
        if len(words) == 1:
            return True
        rest = words[1:]
        if any(w.startswith("-") or ("-" in w.strip("-")) for w in rest):
            return True
        subs = self.subcommands.get(words[0], set())
        if _known(rest[0], subs):
            return True
        names = command_name(query)[1:]
        vocab = self.words.get(words[0], set())
        return bool(names) and 2 * sum(1 for w in names if _known(w, vocab)) >= len(names)

    def lookup(self, query: str) -> CommandMatch | None:
        """None when the query is not command-shaped; otherwise the exact outcome."""
        if not self.is_command_shaped(query):
            return None
        words = tuple(query.strip().lower().split())
        typed = command_name(query)
        for size in range(len(words), 0, -1):
            docs = self.by_name.get(words[:size])
            if docs:
                group = self._under(words[:size])
                if group and len(typed) > size:
                    # A command with subcommands, then a word that is no option or
                    # value: a subcommand no document names (git sync --all).
                    break
                if group and len(words) == 1:
                    # A bare program name that is also a group prefers the group listing.
                    return CommandMatch("exact", tuple(docs), self._names(group))
                return CommandMatch("exact", tuple(docs))
        group = self._under(words)
        if group:
            return CommandMatch(
                "group", tuple(d for n in group for d in self.by_name[n]), self._names(group)
            )
        completed = self._complete(command_name(query))
        if completed:
            hits = tuple(d for n in completed for d in self.by_name[n])
            kind: Literal["completed", "group"] = "completed" if len(completed) == 1 else "group"
            return CommandMatch(kind, hits, self._names(completed))
        return CommandMatch("unknown", (), self.suggest(query))

    def _complete(self, words: tuple[str, ...]) -> list[tuple[str, ...]]:
        """Command names that the half-typed last word completes to (at least two
        letters typed, every earlier word exact): ``orbit users inv`` → invite."""
        if len(words) < 2 or len(words[-1]) < 2:
            return []
        head, part = words[:-1], words[-1]
        n = len(head)
        found = sorted(
            name
            for name in self.by_name
            if len(name) > n and name[:n] == head and name[n].startswith(part)
        )
        return [name for name in found if len(name) == n + 1] or found

    def _under(self, prefix: tuple[str, ...]) -> list[tuple[str, ...]]:
        n = len(prefix)
        return sorted(name for name in self.by_name if len(name) > n and name[:n] == prefix)

    def _names(self, names: list[tuple[str, ...]], limit: int = 10) -> tuple[str, ...]:
        return tuple(self._display[n] for n in names[:limit])

    def alias_target(self, alias_of: str, alias: DocSummary) -> DocSummary | None:
        """The command ``alias_of`` names, for the command document ``alias`` that says it
        is an alias of it: on the alias's own platform (category) first, then on the one
        every page is on ("common"), then any; None when there is no such command (or
        only the alias itself)."""
        found = [d for d in self.by_name.get(command_name(alias_of), []) if d.id != alias.id]
        for category in (alias.category, "common"):
            for d in found:
                if d.category == category:
                    return d
        return found[0] if found else None

    def suggest(self, query: str, limit: int = 3) -> tuple[str, ...]:
        """Known command names closest to ``query``: to its command words (options and
        values are not part of the name), never one it already typed past (``git`` for
        ``git sync --all``)."""
        words = command_name(query) or tuple(query.strip().lower().split())
        typed = " ".join(words)
        pool = [
            d
            for n, d in self._display.items()
            if (not words or n[0] == words[0])
            and not (len(n) < len(words) and words[: len(n)] == n)
        ]
        if not pool:
            pool = list(self._display.values())
        from rapidfuzz import fuzz, process  # only a search that suggests needs it

        found = process.extract(typed, pool, scorer=fuzz.token_set_ratio, limit=limit * 3)
        ranked = sorted(found, key=lambda m: (-m[1], fuzz.ratio(typed, m[0]) * -1))
        return tuple(name for name, score, _ in ranked[:limit] if score >= 40)
