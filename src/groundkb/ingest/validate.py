"""Checks over what is stored: the problems an author should fix in the sources.

:func:`validate_store` uses only the :class:`~groundkb.store.base.Store` protocol and
reports, per document:

=========  ====================  =====================================================
severity   code                  problem
=========  ====================  =====================================================
error      ``dangling_related``  a related id names no stored document
error      ``duplicate_id``      ids that differ only in case or surrounding spaces
warning    ``duplicate_command`` two command documents of one source and category
                                 with the same command name (exact look-ups pick one)
warning    ``duplicate_endpoint`` two api documents of one spec with the same
                                 method and path
warning    ``no_summary``        an api operation without a summary
warning    ``no_examples``       a command without examples (not a man page's)
=========  ====================  =====================================================

Duplicate ids themselves cannot be stored: ingestion rejects them with the file that
repeats them, so they appear in the ingest report rather than here.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from ..models import Document, Filters
from ..store.base import DocSummary, Store

Severity = Literal["error", "warning"]
ProblemCode = Literal[
    "dangling_related",
    "duplicate_id",
    "duplicate_command",
    "duplicate_endpoint",
    "no_summary",
    "no_examples",
]

_PAGE = 1000


@dataclass(frozen=True, slots=True)
class Problem:
    severity: Severity
    code: ProblemCode
    doc_id: str
    path: str  # source:origin of the document, for the author to find it
    message: str

    def __str__(self) -> str:
        return f"{self.severity}: {self.path} [{self.doc_id}]: {self.message}"


def _summaries(store: Store, filters: Filters) -> Iterator[DocSummary]:
    offset = 0
    while True:
        page = store.list_documents(filters, limit=_PAGE, offset=offset)
        yield from page
        if len(page) < _PAGE:
            return
        offset += _PAGE


def _documents(store: Store, summaries: Sequence[DocSummary]) -> Iterator[Document]:
    """The full documents, a page at a time; ones deleted meanwhile are skipped."""
    for i in range(0, len(summaries), _PAGE):
        yield from store.documents([s.id for s in summaries[i : i + _PAGE]])


def _where(doc: DocSummary | Document) -> str:
    return f"{doc.source}:{doc.origin or doc.id}"


def validate_store(store: Store, sources: Sequence[str] = ()) -> list[Problem]:
    """Problems of the documents of ``sources`` (all when empty), by severity then id.

    Related ids may point into any source; only the documents checked are limited.
    """
    every = list(_summaries(store, Filters()))
    known = {d.id for d in every}
    checked = [d for d in every if not sources or d.source in sources]
    problems: list[Problem] = []

    folded: dict[str, list[DocSummary]] = {}
    for d in checked:
        folded.setdefault(d.id.strip().casefold(), []).append(d)
    for group in folded.values():
        if len(group) > 1:
            ids = ", ".join(repr(d.id) for d in group)
            for d in group:
                problems.append(
                    Problem("error", "duplicate_id", d.id, _where(d),
                            f"ids differ only in case or spaces: {ids}")
                )  # fmt: skip

    commands: dict[tuple[str, str, str], list[Document]] = {}
    endpoints: dict[tuple[str, str, str, str], list[str]] = {}
    for doc in _documents(store, checked):
        where = _where(doc)
        for rel in doc.related_ids:
            if rel not in known:
                problems.append(
                    Problem("error", "dangling_related", doc.id, where,
                            f"related id {rel!r} names no document")
                )  # fmt: skip
        if doc.type == "command":
            if not doc.examples and "manual_section" not in doc.metadata:
                # a man page shows its usage in its own sections (SYNOPSIS, EXAMPLES)
                problems.append(
                    Problem("warning", "no_examples", doc.id, where, "command has no examples")
                )
            if doc.command:
                key = (doc.source, doc.category, " ".join(doc.command.lower().split()))
                commands.setdefault(key, []).append(doc)
        if doc.type == "api":
            meta = doc.metadata
            missing = meta.get("has_summary") is False or (
                "has_summary" not in meta and not doc.summary.strip()
            )
            if missing:
                problems.append(
                    Problem("warning", "no_summary", doc.id, where, "api operation has no summary")
                )
            method, path = str(meta.get("method", "")), str(meta.get("path", ""))
            if method and path:
                key4 = (doc.source, str(meta.get("spec", "")), method.upper(), path)
                endpoints.setdefault(key4, []).append(doc.id)
    for (_, _, name), same in commands.items():
        if len(same) > 1:
            ids = ", ".join(d.id for d in same)
            for c in same:
                problems.append(
                    Problem("warning", "duplicate_command", c.id, _where(c),
                            f"command {name!r} is defined by several documents: {ids}")
                )  # fmt: skip
    for (source, _, method, path), doc_ids in endpoints.items():
        if len(doc_ids) > 1:
            for doc_id in doc_ids:
                problems.append(
                    Problem("warning", "duplicate_endpoint", doc_id, f"{source}:{doc_id}",
                            f"{method} {path} is described by several documents: "
                            f"{', '.join(doc_ids)}")
                )  # fmt: skip
    order = {"error": 0, "warning": 1}
    problems.sort(key=lambda p: (order[p.severity], p.doc_id, p.code))
    return problems
