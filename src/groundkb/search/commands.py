"""Exact command look-up: a query shaped like a command is answered exactly or not at all.

A query is *command-shaped* when its first word is the program of a known command
(``helios``, ``git``) and it is a bare program name, has an option or hyphenated word,
or its second word is a known subcommand of that program. Such a query returns the
command it names (arguments after the name are allowed), the commands under a group
prefix (to clarify), or nothing plus did-you-mean suggestions — never a near miss.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from rapidfuzz import fuzz, process

from ..store.base import DocSummary

_PLACEHOLDER_START = ("-", "<", "[", "{", "$", "'", '"', "|", ">")


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
    kind: Literal["exact", "group", "unknown"]
    docs: tuple[DocSummary, ...]
    suggestions: tuple[str, ...] = ()


class CommandIndex:
    """Command names of every ``command`` document, for exact look-ups."""

    def __init__(self, docs: Iterable[DocSummary]) -> None:
        self.by_name: dict[tuple[str, ...], list[DocSummary]] = {}
        for doc in docs:
            main = command_name(doc.command) if doc.command else ()
            names: set[tuple[str, ...]] = {main} if main else set()
            root = main[0] if main else ""
            for alias in doc.aliases:
                words = command_name(alias)
                if root and words and words[0] == root and len(words) > 1:
                    names.add(words)
            for name in names:
                if name:
                    self.by_name.setdefault(name, []).append(doc)
        self.roots = {name[0] for name in self.by_name}
        self.subcommands: dict[str, set[str]] = {}
        for name in self.by_name:
            if len(name) > 1:
                self.subcommands.setdefault(name[0], set()).add(name[1])
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
        return rest[0] in self.subcommands.get(words[0], set())

    def lookup(self, query: str) -> CommandMatch | None:
        """None when the query is not command-shaped; otherwise the exact outcome."""
        if not self.is_command_shaped(query):
            return None
        words = tuple(query.strip().lower().split())
        for size in range(len(words), 0, -1):
            docs = self.by_name.get(words[:size])
            if docs:
                # A bare program name that is also a group prefers the group listing.
                group = self._under(words[:size]) if size == 1 else []
                if group and len(words) == 1:
                    return CommandMatch("exact", tuple(docs), self._names(group))
                return CommandMatch("exact", tuple(docs))
        group = self._under(words)
        if group:
            return CommandMatch(
                "group", tuple(d for n in group for d in self.by_name[n]), self._names(group)
            )
        return CommandMatch("unknown", (), self.suggest(query))

    def _under(self, prefix: tuple[str, ...]) -> list[tuple[str, ...]]:
        n = len(prefix)
        return sorted(name for name in self.by_name if len(name) > n and name[:n] == prefix)

    def _names(self, names: list[tuple[str, ...]], limit: int = 10) -> tuple[str, ...]:
        return tuple(self._display[n] for n in names[:limit])

    def suggest(self, query: str, limit: int = 3) -> tuple[str, ...]:
        """Known command names closest to ``query``."""
        words = query.strip().lower().split()
        pool = [d for n, d in self._display.items() if not words or n[0] == words[0]]
        if not pool:
            pool = list(self._display.values())
        found = process.extract(query.lower(), pool, scorer=fuzz.token_set_ratio, limit=limit * 3)
        ranked = sorted(found, key=lambda m: (-m[1], fuzz.ratio(query.lower(), m[0]) * -1))
        return tuple(name for name, score, _ in ranked[:limit] if score >= 40)
