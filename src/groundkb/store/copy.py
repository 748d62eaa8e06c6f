"""Copy a knowledge base between stores (SQLite ⇄ PostgreSQL) without re-embedding.

Only the :class:`~groundkb.store.base.Store` protocol is used, so any two backends
work. For every source of the origin, the target's source becomes equal to it:
documents are written with their chunks (unchanged ones are left alone, as in a
re-ingest), documents the origin's source no longer has are deleted, and the stored
vectors are copied as they are, with the embedder's name and dimension, and so is
whether each source is disabled. Sources the target has and the origin does not are
left alone.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import InvalidInput
from ..models import Chunk, Filters
from .base import Store, optimize_after, read_disabled, write_disabled

BATCH = 200


@dataclass(frozen=True, slots=True)
class CopyReport:
    sources: int
    documents: int
    chunks: int
    vectors: int
    deleted: int
    seconds: float


def copy_store(
    origin: Store,
    target: Store,
    progress: Callable[[int, int, str], None] | None = None,
    batch: int = BATCH,
) -> CopyReport:
    """Make every source of ``target`` that ``origin`` has equal to it (module docstring)."""
    if origin.backend == target.backend and origin.location == target.location:
        raise InvalidInput(f"cannot copy {origin.location} onto itself")
    started = time.perf_counter()
    embedder = origin.embedder()
    if embedder is not None and target.embedder() != embedder:
        target.set_embedder(*embedder)
    infos = origin.sources()
    total = sum(i.documents for i in infos)
    done = documents = chunks = vectors = deleted = written = 0
    for info in infos:
        name = info.source.name
        target.put_source(info.source)
        copied: set[str] = set()
        offset = 0
        while True:
            page = origin.list_documents(Filters(sources=(name,)), limit=batch, offset=offset)
            if not page:
                break
            offset += len(page)
            ids = [d.id for d in page]
            by_doc: dict[str, list[Chunk]] = {}
            for c in origin.chunks(ids):
                by_doc.setdefault(c.doc_id, []).append(c)
            for doc in origin.documents(ids):
                doc_chunks = by_doc.get(doc.id, [])
                written += target.write(doc, doc_chunks).chunks_written
                copied.add(doc.id)
                documents += 1
                chunks += len(doc_chunks)
            if embedder is not None:
                found = origin.get_vectors([c.id for cs in by_doc.values() for c in cs])
                target.put_vectors(sorted(found.items()))
                vectors += len(found)
            done += len(page)
            if progress:
                progress(done, total, ids[-1])
        stale = [d for d in target.doc_states(name) if d not in copied]
        deleted += target.delete_documents(stale)
    optimize_after(target, written)
    names = {i.source.name for i in infos}
    was = read_disabled(target)
    now = (was - names) | (read_disabled(origin) & names)
    if now != was:
        write_disabled(target, now)
    return CopyReport(
        len(infos), documents, chunks, vectors, deleted, round(time.perf_counter() - started, 2)
    )
