"""Ingestion: find files, load them with the loader for their suffix, write what changed.

A source is a set. Ingesting a path into a source inserts new documents, rewrites only
changed chunks, skips unchanged files without parsing them (by a hash of their bytes),
and deletes documents that disappeared. Documents of a file that failed to load are
kept as they were, so a broken edit never loses knowledge.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from ..errors import Conflict, GroundKBError, InvalidInput
from ..models import FileError, IngestReport, Source, SourceKind
from ..store.base import Store
from .base import LoadContext, Loaded, Loader
from .entries import EntriesLoader
from .markdown import MarkdownLoader
from .records import RecordsLoader

log = logging.getLogger(__name__)

LOADERS: tuple[Loader, ...] = (MarkdownLoader(), EntriesLoader(), RecordsLoader())
MAX_FILE_BYTES = 64 * 1024 * 1024

Progress = Callable[[int, int, str], None]


def loader_for(path: str) -> Loader | None:
    low = path.lower()
    for loader in LOADERS:
        if low.endswith(loader.suffixes):
            return loader
    return None


def discover(root: Path) -> Iterator[tuple[Path, str]]:
    """(file, path relative to root) for every loadable file; hidden entries skipped."""
    if root.is_file():
        yield root, root.name
        return
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "_")))
        for name in sorted(filenames):
            if name.startswith(".") or loader_for(name) is None:
                continue
            full = Path(dirpath) / name
            yield full, full.relative_to(root).as_posix()


def _kind(loaded_by: set[str]) -> SourceKind:
    if loaded_by == {"markdown"}:
        return "docs"
    if loaded_by == {"entries"}:
        return "entries"
    return "mixed"


def ingest_path(
    store: Store,
    path: str | os.PathLike[str],
    source: str,
    *,
    max_chunk_tokens: int = 500,
    progress: Progress | None = None,
) -> IngestReport:
    started = time.perf_counter()
    root = Path(path)
    if not root.exists():
        raise InvalidInput(f"{root} does not exist")
    if not source or not source.strip():
        raise InvalidInput("a source name is required")
    if root.is_file() and loader_for(root.name) is None:
        suffixes = sorted({s for loader in LOADERS for s in loader.suffixes})
        raise InvalidInput(f"{root}: unsupported file type; expected one of {' '.join(suffixes)}")
    files = list(discover(root))
    previous = store.get_source(source)
    states = store.doc_states(source)
    by_origin: dict[str, list[str]] = {}
    for state in states.values():
        by_origin.setdefault(state.origin, []).append(state.id)
    origin_hash = {s.origin: s.origin_hash for s in states.values()}

    errors: list[FileError] = []
    keep_origins: set[str] = set()  # files that failed: their old documents stay
    seen: dict[str, str] = {}  # doc id -> origin that produced it in this run
    counts = {"inserted": 0, "updated": 0, "unchanged": 0}
    chunks_written = 0
    loaders_used: set[str] = set()
    store.put_source(
        Source(
            source,
            previous.kind if previous else "mixed",
            str(root.resolve()),
            previous.groups if previous else (),
        )
    )

    for n, (file, rel) in enumerate(files, 1):
        if progress:
            progress(n, len(files), rel)
        loader = loader_for(rel)
        assert loader is not None
        loaders_used.add(loader.name)
        try:
            size = file.stat().st_size
            if size > MAX_FILE_BYTES:
                raise OSError(f"file is larger than {MAX_FILE_BYTES // 2**20} MiB")
            data = file.read_bytes()
        except OSError as exc:
            errors.append(FileError(rel, f"cannot read: {exc.strerror or exc}"))
            keep_origins.add(rel)
            continue
        fhash = hashlib.sha1(
            f"{loader.name}:{loader.version}:{max_chunk_tokens}:".encode() + data
        ).hexdigest()[:16]
        if origin_hash.get(rel) == fhash and fhash:
            for doc_id in by_origin.get(rel, ()):
                seen[doc_id] = rel
            counts["unchanged"] += len(by_origin.get(rel, ()))
            continue
        ctx = LoadContext(source, rel, fhash, max_chunk_tokens)
        loaded, file_errors = loader.load(data, ctx)
        if file_errors:
            errors.extend(file_errors)
            keep_origins.add(rel)
            # Record no origin hash, so the next run parses this file again.
            loaded = [_without_origin_hash(item) for item in loaded]
        fresh: list[Loaded] = []
        for item in loaded:
            other = seen.get(item.doc.id)
            if other is not None:
                where = "earlier in this file" if other == rel else f"also in {other}"
                errors.append(FileError(rel, f"duplicate id {item.doc.id!r} ({where})", "id"))
                keep_origins.add(rel)
                continue
            seen[item.doc.id] = rel
            fresh.append(item)
        owners = store.owners(item.doc.id for item in fresh)
        for item in fresh:
            owner = owners.get(item.doc.id)
            if owner is not None and owner != source:
                errors.append(
                    FileError(rel, f"id {item.doc.id!r} already belongs to source {owner!r}", "id")
                )
                del seen[item.doc.id]
                continue
            try:
                result = store.write(item.doc, item.chunks)
            except Conflict as exc:
                errors.append(FileError(rel, exc.message, "id"))
                del seen[item.doc.id]
                continue
            except GroundKBError as exc:
                errors.append(FileError(rel, exc.message))
                keep_origins.add(rel)
                continue
            counts[result.status] += 1
            chunks_written += result.chunks_written

    stale = [
        doc_id
        for doc_id, state in states.items()
        if doc_id not in seen and state.origin not in keep_origins
    ]
    deleted = store.delete_documents(stale)
    store.put_source(
        Source(
            source,
            _kind(loaders_used) if loaders_used else "mixed",
            str(root.resolve()),
            previous.groups if previous else (),
        )
    )
    report = IngestReport(
        source=source,
        inserted=counts["inserted"],
        updated=counts["updated"],
        unchanged=counts["unchanged"],
        deleted=deleted,
        chunks_written=chunks_written,
        files=len(files),
        errors=tuple(errors),
        seconds=time.perf_counter() - started,
    )
    log.info(
        "ingested %s into %r: %d inserted, %d updated, %d unchanged, %d deleted, %d errors",
        root,
        source,
        report.inserted,
        report.updated,
        report.unchanged,
        report.deleted,
        len(errors),
    )
    return report


def _without_origin_hash(item: Loaded) -> Loaded:
    from dataclasses import replace

    return Loaded(replace(item.doc, origin_hash=""), item.chunks)


__all__ = ["LOADERS", "LoadContext", "Loaded", "Loader", "discover", "ingest_path", "loader_for"]
