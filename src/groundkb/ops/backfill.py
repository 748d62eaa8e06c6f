"""Embedding in the background: a server embeds the chunks that have no vector yet.

A large ingest should never wait for the embedder, and never block search. With
``embed_on_ingest = false`` (``groundkb sync --no-embed``) an ingest stores documents and
chunks and returns: they are keyword-searchable at once. A running ``groundkb serve``
(``embed_in_background``, on by default) then embeds whatever has no vector, a small
batch at a time, whoever ingested it: hybrid search gains the new chunks as their vectors
land (a chunk without a vector is still found by keyword meanwhile). Progress is in
``/health`` (``embedding``), the metrics and the log.

The worker writes through a connection of its own, so the serving connection sees its
vectors as it sees another process's writes: the data derived from the index (the
vector matrix, the search engine's indexes) is refreshed in the background at a bounded
rate while the previous version answers, rather than rebuilt before the next search
after every batch. It looks for pending chunks only when the index changed (its change
token), so an idle server costs one small read every ``POLL_S`` seconds. After a failure
it waits ``BACKOFF_S`` before trying again; an index embedded with another model is left
alone (``groundkb reindex`` decides that).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import IndexMismatch
from .querylog import error_text

if TYPE_CHECKING:
    from ..api import KnowledgeBase
    from ..store.base import Store

log = logging.getLogger(__name__)
POLL_S = 2.0
BACKOFF_S = 60.0
BATCH = 32


@dataclass(frozen=True, slots=True)
class BackfillState:
    state: str  # idle, embedding, waiting (after an error), off
    pending: int
    embedded: int  # by this server since it started
    chunks_per_s: float  # over the current or last run
    detail: str = ""


class Backfill:
    """The background embedding worker of one server (module doc)."""

    def __init__(self, kb: KnowledgeBase, poll_s: float = POLL_S) -> None:
        self.kb = kb
        self.poll_s = poll_s
        self._writer: Store | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._state = BackfillState("idle", 0, 0, 0.0)
        self._seen_token = ""

    def start(self) -> Backfill:
        self._thread = threading.Thread(target=self._run, name="groundkb-backfill", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def state(self) -> BackfillState:
        return self._state

    # ----------------------------------------------------------------- worker
    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                waited = self._step()
            except IndexMismatch as exc:
                self._set("off", detail=exc.message)
                log.warning("background embedding off: %s", exc.message)
                return
            except Exception as exc:  # never kill the server; try again later
                why = error_text(exc)
                self._set("waiting", detail=why)
                log.warning("background embedding failed, retrying in %.0f s: %s", BACKOFF_S, why)
                waited = BACKOFF_S
            self._stop.wait(waited)

    def _step(self) -> float:
        """Embed what is pending; returns how long to wait before looking again."""
        store = self.kb.store
        token = store.change_token()
        if token == self._seen_token:
            return self.poll_s
        pending = store.count_chunks_to_embed()
        if not pending:
            self._seen_token = token
            self._set("idle", pending=0)
            return self.poll_s
        started, done = time.perf_counter(), 0
        self._set("embedding", pending=pending)
        log.info("embedding %d chunks in the background", pending)
        writer = self._writer_store()
        emb = self.kb.embedder()
        if emb is None:
            self._set("off", detail="no embedder")
            self._stop.set()
            return 0.0
        stored = writer.embedder()
        if stored is None:
            writer.set_embedder(emb.name, emb.dimension)
        elif stored[0] != emb.name:
            raise IndexMismatch(
                f"the index was embedded with {stored[0]}, the server's embedder is "
                f"{emb.name}: run `groundkb reindex`"
            )
        from ..search.vectors import to_bytes

        while not self._stop.is_set():
            todo = writer.chunks_to_embed(BATCH)
            if not todo:
                break
            vectors = emb.embed([text for _, text in todo])
            writer.put_vectors(list(zip([c for c, _ in todo], to_bytes(vectors), strict=True)))
            n = len(todo)
            done += n
            pending = max(0, pending - n)
            rate = done / max(time.perf_counter() - started, 1e-6)
            self._set("embedding", pending=pending, embedded=self._state.embedded + n, rate=rate)
        rate = done / max(time.perf_counter() - started, 1e-6)
        log.info("embedded %d chunks in the background (%.1f chunks/s)", done, rate)
        self._set("idle", pending=store.count_chunks_to_embed(), rate=rate)
        return 0.0  # look again at once: more may have arrived meanwhile

    def _writer_store(self) -> Store:
        if self._writer is None:
            from ..store import open_store

            s = self.kb.settings
            self._writer = open_store(s.db, pool_size=2, timeout=s.db_timeout)
        return self._writer

    def _set(
        self,
        state: str,
        *,
        pending: int | None = None,
        embedded: int | None = None,
        rate: float | None = None,
        detail: str = "",
    ) -> None:
        s = self._state
        self._state = BackfillState(
            state,
            s.pending if pending is None else pending,
            s.embedded if embedded is None else embedded,
            round(s.chunks_per_s if rate is None else rate, 1),
            detail,
        )
