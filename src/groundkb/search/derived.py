"""What a search derives from the whole index, once per change of it: the chunk count and
average length, the names the index knows (for typo correction), the command index and
the API index, and the document frequencies queries have needed so far. The engine
rebuilds it when the store's change token changes (``refreshing.py``)."""

from __future__ import annotations

import bisect
import functools
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..analyze.text import tokenize
from ..models import Filters
from ..store.base import DocSummary, Store
from .apis import ApiIndex
from .commands import CommandIndex


@dataclass
class Derived:
    """Data derived from the whole index; ``df`` fills with the document frequencies of
    the terms queries use (``Searcher._df``)."""

    token: str
    df: dict[str, int]
    n_chunks: int  # at least 1
    documents: dict[str, int]  # per source
    empty: bool  # no chunk at all
    avgdl: float
    known_terms: frozenset[str]
    commands: CommandIndex
    apis: ApiIndex
    filtered_commands: dict[Filters, CommandIndex] = field(default_factory=dict)
    # per source, the documents holding each word a question set its context with, as
    # asked so far (``Searcher._context_free``)
    docs_holding: dict[str, dict[str, int]] = field(default_factory=dict)

    @functools.cached_property
    def names_sorted(self) -> tuple[str, ...]:
        """``known_terms`` in order, for completing a prefix (sorted when first asked:
        most searches never complete a word)."""
        return tuple(sorted(self.known_terms))

    def completion(self, prefix: str) -> str | None:
        """The one name a half-typed word stands for: the shortest known name that
        starts with ``prefix``, when every other such name starts with it in turn
        ("arch" → archive, with archived and archives; "inv" → None, with invite and
        invitation); None when there is none or no single one."""
        start = bisect.bisect_left(self.names_sorted, prefix)
        found: list[str] = []
        for name in self.names_sorted[start:]:
            if not name.startswith(prefix):
                break
            if name != prefix:
                found.append(name)
        if not found:
            return None
        shortest = min(found, key=len)
        return shortest if all(n.startswith(shortest) for n in found) else None

    def commands_for(self, filters: Filters) -> CommandIndex:
        """The command index of the commands ``filters`` allow (cached per filter):
        a command of another source is neither an answer nor a suggestion."""
        if filters.is_empty():
            return self.commands
        index = self.filtered_commands.get(filters)
        if index is None:
            docs = [d for d in self.commands.docs if filters.allows(d.type, d.category, d.source)]
            index = self.filtered_commands[filters] = CommandIndex(docs)
        return index


def known_terms(docs: Sequence[DocSummary]) -> frozenset[str]:
    """The words of short titles, aliases, keywords and commands: names a typo
    correction prefers."""
    terms: set[str] = set()
    names: list[str] = []
    for d in docs:
        title = tokenize(d.title)
        if len(title) <= 4:
            terms.update(title)
        names += d.aliases
        names += d.keywords
        names.append(d.command)
    # One pass over all the names (a line break ends a word as any separator does).
    terms.update(tokenize("\n".join(names)))
    return frozenset(terms)


def build_derived(store: Store, token: str) -> Derived:
    """The derived data of ``store`` as of change token ``token``."""
    stats = store.term_stats(())
    every = store.list_documents(Filters(), limit=10**9)
    commands = [d for d in every if d.type == "command"]
    return Derived(
        token=token,
        df={},
        n_chunks=max(1, stats.chunks),
        documents=dict(Counter(d.source for d in every)),
        empty=stats.chunks == 0,
        avgdl=stats.avg_length or 1.0,
        known_terms=known_terms(every),
        commands=CommandIndex(commands),
        apis=ApiIndex.build(every, store.flagged_documents(Filters(types=("api",)), "deprecated")),
    )


__all__ = ["Derived", "build_derived", "known_terms"]
