"""Data derived from the whole index, kept fresh without making searches wait for it.

Searches need data computed from the whole index: the vocabulary and BM25 statistics,
the command names, the API graph, the matrix of vectors. Rebuilding it whenever the
store's change marker moves is right for an index that changes now and then, and ruinous
for one being ingested into while it serves: every committed document made the next
search rebuild everything (measured: searches fell from 91/s to 14/s, single ones took
up to 8.5 s). :class:`Refreshing` keeps one value and its key and, when the key moves:

- **rebuilds in the background**, one build at a time, and lets a search wait for it
  only briefly (``wait_s``); past that the search is answered from the previous
  version, which is complete and consistent, only older;
- **rebuilds at most every so often**: the next background build starts no sooner than
  ``cost_factor`` times the last build's duration after it ended, so rebuilding takes at
  most about 1 / (1 + cost_factor) of the time however fast the index changes;
- **reads its own writes**: after :meth:`Refreshing.invalidate` (the knowledge base calls
  it when one of its own ingests, deletes or source switches ends) the next call
  rebuilds before it answers, so a search right after an ingest in the same process
  always sees it. The first build of all is made in the caller's thread too.

The clock and the way a background build is started are injectable, so tests need no
sleeps.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

log = logging.getLogger(__name__)
K = TypeVar("K")
T = TypeVar("T")

WAIT_S = 0.05  # how long a search waits for a background build before using the last one
COST_FACTOR = 4.0  # rest between builds, as a multiple of the last build's duration


def _thread(fn: Callable[[], None]) -> None:
    threading.Thread(target=fn, name="groundkb-refresh", daemon=True).start()


class Refreshing(Generic[K, T]):
    """A value built from the index under a key (the store's change marker); see the
    module docstring. Thread-safe."""

    def __init__(
        self,
        key: Callable[[], K],
        build: Callable[[K], T],
        *,
        wait_s: float = WAIT_S,
        cost_factor: float = COST_FACTOR,
        clock: Callable[[], float] = time.monotonic,
        spawn: Callable[[Callable[[], None]], None] = _thread,
    ) -> None:
        self._key = key
        self._build = build
        self.wait_s = wait_s
        self.cost_factor = cost_factor
        self.clock = clock
        self._spawn = spawn
        self._lock = threading.RLock()  # re-entrant: ``spawn`` may run the build at once
        self._sync = threading.Lock()  # one synchronous build at a time
        self._done = threading.Condition(self._lock)
        self._value: tuple[K, T] | None = None
        self._stale = True  # rebuild in the caller's thread (first use, own writes)
        self._building = False
        self._rest_until = 0.0
        self._tickets = 0  # builds started; a slower, older build never replaces a newer one
        self._stored = 0
        self._invalidations = 0
        self.builds = 0  # how many builds ran (for tests and metrics)

    def invalidate(self) -> None:
        """The caller changed the index: the next :meth:`get` rebuilds before it answers."""
        with self._lock:
            self._stale = True
            self._invalidations += 1

    def refresh_in_background(self) -> None:
        """For a caller that takes another way while :meth:`peek` says None: if a value
        was built before, for an older key or before :meth:`invalidate`, start building
        the current one in the background (one build at a time, resting as ``get``'s
        do); never builds the first value, never waits. A build that started after the
        last ``invalidate`` counts as reading this process's own writes."""
        key = self._key()
        with self._lock:
            current = self._value
            if current is None or (not self._stale and current[0] == key):
                return
            self._start_background(self._invalidations)

    def get(self) -> T:
        key = self._key()
        with self._lock:
            current = self._value
            if current is not None and not self._stale and current[0] == key:
                return current[1]
            if current is None or self._stale:
                sync = True
            else:
                sync = False
                self._start_background()
                if self._building and self.wait_s > 0:
                    self._done.wait_for(lambda: not self._building, timeout=self.wait_s)
                latest = self._value
                assert latest is not None
                return latest[1]
        assert sync
        with self._sync:  # a concurrent first build: build once, the others take it
            with self._lock:
                if self._value is not None and not self._stale and self._value[0] == key:
                    return self._value[1]
                self._stale = False
            try:
                return self._store(self._ticket(), key, self._timed(key))
            except BaseException:
                with self._lock:
                    self._stale = True
                raise

    def peek(self) -> T | None:
        """The value built for the current key, or None: never builds nor waits for a
        build (a caller with another way to the same answer takes that instead)."""
        key = self._key()
        with self._lock:
            current = self._value
            if current is None or self._stale or current[0] != key:
                return None
            return current[1]

    def wait(self, timeout: float | None = None) -> None:
        """Block until no background build is running (tests, shutdown)."""
        with self._lock:
            self._done.wait_for(lambda: not self._building, timeout=timeout)

    # ------------------------------------------------------------------ internals
    def _timed(self, key: K) -> tuple[T, float]:
        started = self.clock()
        value = self._build(key)
        return value, self.clock() - started

    def _start_background(self, marks: int | None = None) -> None:
        """Start a background build unless one runs or the last one's rest lasts (the
        caller holds the lock). ``marks``: the invalidations counted when it starts."""
        if self._building or self.clock() < self._rest_until:
            return
        self._building = True
        ticket = self._ticket()
        self._spawn(lambda: self._background(ticket, marks))

    def _ticket(self) -> int:
        with self._lock:
            self._tickets += 1
            return self._tickets

    def _store(self, ticket: int, key: K, built: tuple[T, float]) -> T:
        value, took = built
        with self._lock:
            self.builds += 1
            self._rest_until = self.clock() + self.cost_factor * took
            if ticket > self._stored:
                self._stored, self._value = ticket, (key, value)
        return value

    def _background(self, ticket: int, marks: int | None = None) -> None:
        try:
            key = self._key()
            self._store(ticket, key, self._timed(key))
            with self._lock:
                if marks == self._invalidations and self._stored == ticket:
                    self._stale = False  # built after this process's last write
        except Exception:  # the previous version keeps serving; the next change retries
            log.warning("rebuilding derived index data failed", exc_info=True)
        finally:
            with self._lock:
                self._building = False
                self._done.notify_all()
