"""Writing one source: the diff between what was loaded and what is stored.

Every way into a source (a folder of files, a Python CLI) feeds a :class:`SourceWriter`
the documents of each origin (a file, an import target). The writer inserts new
documents, lets the store rewrite only changed chunks, rejects ids that are repeated or
owned by another source, and at :meth:`SourceWriter.finish` deletes the documents whose
origin no longer produced them, except those of origins that failed: a broken edit never
loses knowledge.

**A file counts as done only when all its documents are.** Documents are written one
transaction each, so a process killed half-way through a file (a spec of 400
operations) leaves some of them stored. Every document of an origin is therefore stamped
with ``{origin hash}/{number of documents the origin produced}``, and an origin is
unchanged only when exactly that many stored documents carry exactly that stamp
and no other document of the origin is stored (:func:`done_hash`); otherwise it is
loaded and written again, and :meth:`SourceWriter.finish` deletes what it no longer
produced.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import replace

from ..errors import Conflict, GroundKBError
from ..models import FileError, IngestReport, Source, SourceKind
from ..store.base import Store, optimize_after
from .base import Loaded

log = logging.getLogger(__name__)

_KINDS: dict[str, SourceKind] = {
    "markdown": "docs",
    "html": "docs",
    "pdf": "docs",
    "docx": "docs",
    "entries": "entries",
    "openapi": "openapi",
    "catalog": "commands",
    "tldr": "commands",
    "pycli": "commands",
}


def stamp(origin_hash: str, count: int) -> str:
    """The origin hash a document is stored with: the file's hash and how many documents
    the file produced (idempotent: a stamped hash is stamped again with the new count)."""
    base = origin_hash.partition("/")[0]
    return f"{base}/{count}" if base else ""


def done_hash(hashes: Iterable[str]) -> str:
    """The origin hash of a completely written origin, given the stored hashes of its
    documents; '' when none, when they differ, or when fewer were written than produced."""
    found = list(hashes)
    if not found or any(h != found[0] for h in found):
        return ""
    base, _, count = found[0].partition("/")
    return base if count.isdigit() and int(count) == len(found) else ""


def source_kind(loaders_used: Iterable[str]) -> SourceKind:
    """``docs``, ``entries``, ``openapi`` or ``commands`` when one kind was loaded, else mixed."""
    kinds = {_KINDS.get(name, "mixed") for name in loaders_used}
    return kinds.pop() if len(kinds) == 1 else "mixed"


class SourceWriter:
    """Makes source ``source`` equal to the documents fed to it (see the module docstring)."""

    def __init__(
        self, store: Store, source: str, location: str, started: float | None = None
    ) -> None:
        self.started = time.perf_counter() if started is None else started
        self.store = store
        self.source = source
        self.location = location
        known = {info.source.name: info.source for info in store.sources()}
        self.previous = known.get(source)
        self.states = store.doc_states(source)
        self.by_origin: dict[str, list[str]] = {}
        for state in self.states.values():
            self.by_origin.setdefault(state.origin, []).append(state.id)
        hashes: dict[str, list[str]] = {}
        for state in self.states.values():
            hashes.setdefault(state.origin, []).append(state.origin_hash)
        self.done = {origin: done_hash(h) for origin, h in hashes.items()}
        self.done = {origin: h for origin, h in self.done.items() if h}
        self.errors: list[FileError] = []
        self.keep_origins: set[str] = set()  # origins that failed: their old documents stay
        self.keep_folders: set[str] = set()  # unreadable folders: their documents stay too
        self.skipped: list[str] = []  # files of unsupported types, for the report
        self.seen: dict[str, str] = {}  # doc id -> origin that produced it in this run
        self.counts = {"inserted": 0, "updated": 0, "unchanged": 0}
        self.chunks_written = 0
        self.loaders_used: set[str] = set()
        store.put_source(
            Source(
                source,
                self.previous.kind if self.previous else "mixed",
                location,
                self.previous.groups if self.previous else (),
            )
        )

    def unchanged(self, origin: str, origin_hash: str) -> bool:
        """True (and its documents kept) when every document ``origin`` produced was
        stored with this hash (see the module docstring)."""
        if not origin_hash or self.done.get(origin) != origin_hash.partition("/")[0]:
            return False
        ids = self.by_origin.get(origin, ())
        for doc_id in ids:
            self.seen[doc_id] = origin
        self.counts["unchanged"] += len(ids)
        return True

    def fail(self, origin: str, errors: Iterable[FileError]) -> None:
        """Record problems of an origin that could not be loaded; its documents stay."""
        self.errors.extend(errors)
        self.keep_origins.add(origin)

    def fail_folder(self, folder: str, error: FileError) -> None:
        """A folder that could not be read ('' for the root): the documents of every
        origin under it stay, and the error is reported."""
        self.errors.append(error)
        self.keep_folders.add(folder)

    def _kept(self, origin: str) -> bool:
        return origin in self.keep_origins or any(
            not folder or origin.startswith(folder + "/") for folder in self.keep_folders
        )

    def add(self, origin: str, loaded: list[Loaded], errors: list[FileError]) -> None:
        """Write what an origin produced; ``errors`` are that origin's problems."""
        if errors:
            self.fail(origin, errors)
        # No origin hash after errors, so the next run loads this origin again; else the
        # hash and the number of documents (the origin is done when all are stored).
        count = len(loaded)
        loaded = [
            Loaded(
                replace(item.doc, origin_hash="" if errors else stamp(item.doc.origin_hash, count)),
                item.chunks,
            )
            for item in loaded
        ]
        fresh: list[Loaded] = []
        for item in loaded:
            other = self.seen.get(item.doc.id)
            if other is not None:
                where = "earlier in this file" if other == origin else f"also in {other}"
                self.fail(
                    origin, [FileError(origin, f"duplicate id {item.doc.id!r} ({where})", "id")]
                )
                continue
            self.seen[item.doc.id] = origin
            fresh.append(item)
        owners = self.store.owners(item.doc.id for item in fresh)
        for item in fresh:
            owner = owners.get(item.doc.id)
            if owner is not None and owner != self.source:
                self.errors.append(
                    FileError(
                        origin, f"id {item.doc.id!r} already belongs to source {owner!r}", "id"
                    )
                )
                del self.seen[item.doc.id]
                continue
            try:
                result = self.store.write(item.doc, item.chunks)
            except Conflict as exc:
                self.errors.append(FileError(origin, exc.message, "id"))
                del self.seen[item.doc.id]
                continue
            except GroundKBError as exc:
                self.fail(origin, [FileError(origin, exc.message)])
                continue
            self.counts[result.status] += 1
            self.chunks_written += result.chunks_written

    def finish(self, files: int) -> IngestReport:
        """Delete what disappeared, record the source, and report."""
        stale = [
            doc_id
            for doc_id, state in self.states.items()
            if doc_id not in self.seen and not self._kept(state.origin)
        ]
        deleted = self.store.delete_documents(stale)
        optimize_after(self.store, self.chunks_written)
        self.store.put_source(
            Source(
                self.source,
                source_kind(self.loaders_used) if self.loaders_used else "mixed",
                self.location,
                self.previous.groups if self.previous else (),
            )
        )
        report = IngestReport(
            source=self.source,
            inserted=self.counts["inserted"],
            updated=self.counts["updated"],
            unchanged=self.counts["unchanged"],
            deleted=deleted,
            chunks_written=self.chunks_written,
            files=files,
            errors=tuple(self.errors),
            seconds=time.perf_counter() - self.started,
            skipped=tuple(self.skipped),
        )
        log.info(
            "ingested %s into %r: %d inserted, %d updated, %d unchanged, %d deleted, %d errors",
            self.location,
            self.source,
            report.inserted,
            report.updated,
            report.unchanged,
            report.deleted,
            len(report.errors),
        )
        return report
