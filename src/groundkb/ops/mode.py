"""The retrieval mode controller: the fallback chain and the kill switch.

The configured ``retrieval`` (``hybrid`` or ``vector``) is what searches run while it is
healthy. The controller watches the searches that ran in that mode over a sliding window
(the last ``fallback_window_s`` seconds, at most :data:`MAX_SAMPLES` searches) and drops
to ``keyword`` when, with at least ``fallback_min_searches`` searches in the window,

- the 95th percentile latency exceeds ``fallback_p95_ms``, or
- the error rate (searches that raised, or whose embedder failed) exceeds
  ``fallback_error_rate``.

It goes back up after ``fallback_cooldown_s``: the window starts empty and the first
searches are on probation (one error drops it again at once; latency needs a full
window of evidence, as above).

**Circuit breaker.** A search whose embedder failed (unreachable, refusing, timing out
after its retries) trips the controller at once (:meth:`ModeController.trip`): every
search runs by keyword from then on without waiting for the embedder. After the
cool-down the controller does not let a search try again; it asks for a probe
(:meth:`ModeController.probe_due`), which the caller runs in the background, and only a
probe that succeeds (:meth:`ModeController.probe_result`) brings the configured mode
back, on probation. A failed probe starts another cool-down.

``retrieval = "keyword"`` in the settings is the permanent manual override;
:meth:`ModeController.force` is the runtime one (an admin action), until cleared.

The controller keeps state only: it never runs a search. ``KnowledgeBase.search`` asks
:meth:`ModeController.degraded` before a search and reports the outcome with
:meth:`ModeController.record`. The clock is injectable so tests need no sleeps.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

MAX_SAMPLES = 1000  # most recent searches kept in the window

FallbackReason = Literal["latency", "errors", "forced"]


@dataclass(frozen=True, slots=True)
class WindowStats:
    """What the window saw: searches in the configured mode."""

    searches: int
    p50_ms: float
    p95_ms: float
    error_rate: float


@dataclass(frozen=True, slots=True)
class ModeState:
    """The controller's decision: ``reason`` is empty while the configured mode runs."""

    configured: str
    mode: str
    reason: str
    detail: str
    since: float  # clock value of the last change
    retry_in_s: float  # seconds until the configured mode is tried again (0: not degraded)
    window: WindowStats


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile (0-1) of ``values`` by the nearest-rank method; 0 when empty."""
    if not values:
        return 0.0
    ordered = sorted(values)
    # nearest rank is ceil(q * n): the 19th of 20 for p95 (rounding q * n + 0.5 gave the
    # 20th, so one slow search out of 20 was "p95")
    rank = max(1, min(len(ordered), math.ceil(q * len(ordered) - 1e-9)))
    return ordered[rank - 1]


class ModeController:
    """Decides whether searches run in the configured mode or fall back to keyword.

    Thread-safe: searches run in worker threads and report here concurrently.
    """

    def __init__(
        self,
        configured: str,
        *,
        p95_ms: float = 500.0,
        error_rate: float = 0.05,
        window_s: float = 300.0,
        min_searches: int = 20,
        cooldown_s: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.configured = configured
        self.p95_ms = p95_ms
        self.error_rate = error_rate
        self.window_s = window_s
        self.min_searches = max(1, min_searches)
        self.cooldown_s = cooldown_s
        self.clock = clock
        self._lock = threading.Lock()
        self._samples: deque[tuple[float, float, bool]] = deque(maxlen=MAX_SAMPLES)
        self._reason: FallbackReason | None = None
        self._detail = ""
        self._forced = False
        self._since = clock()
        self._until = 0.0
        self._probation = False
        self._breaker = False  # tripped by an embedder failure: recover only by a probe
        self._probing = False
        self.changes = 0  # how many times the mode changed

    @property
    def active(self) -> bool:
        """Whether there is anything to fall back from (the configured mode is not keyword)."""
        return self.configured in ("hybrid", "vector")

    # ---------------------------------------------------------------- decide
    def degraded(self) -> FallbackReason | None:
        """Why searches should run by keyword now, or None for the configured mode."""
        if not self.active:
            return None
        with self._lock:
            if (
                self._reason is not None
                and not self._forced
                and not self._breaker
                and self.clock() >= self._until
            ):
                self._recover()
            return self._reason

    def trip(self, detail: str) -> None:
        """The embedder failed: search by keyword at once, for a cool-down, then until a
        background probe succeeds (see the module docstring)."""
        if not self.active:
            return
        with self._lock:
            if self._forced or (self._reason is not None and self._breaker):
                return
            self._breaker = True
            self._set("errors", detail, self.cooldown_s)

    def probe_due(self) -> bool:
        """True (once per cool-down) when a tripped breaker should probe the embedder."""
        with self._lock:
            due = (
                self._breaker
                and self._reason is not None
                and not self._forced
                and not self._probing
                and self.clock() >= self._until
            )
            if due:
                self._probing = True
            return due

    def probe_result(self, ok: bool, detail: str = "") -> None:
        """Report a probe: success closes the breaker (probation), failure re-trips it."""
        with self._lock:
            self._probing = False
            if not self._breaker or self._forced:
                return
            if ok:
                self._breaker = False
                self._recover()
            else:
                self._set("errors", detail or self._detail, self.cooldown_s)

    def record(self, latency_ms: float, error: bool) -> None:
        """Report one search that ran (or tried to run) in the configured mode."""
        if not self.active:
            return
        with self._lock:
            if self._reason is not None:
                return  # a search admitted just before the drop: the window is closed
            now = self.clock()
            self._samples.append((now, latency_ms, error))
            self._prune(now)
            if error and self._probation:
                self._drop("errors", "an error while on probation after a fallback")
                return
            stats = self._stats()
            if stats.searches < self.min_searches:
                return
            self._probation = False
            if stats.error_rate > self.error_rate:
                self._drop(
                    "errors",
                    f"error rate {stats.error_rate:.0%} over {stats.searches} searches "
                    f"> {self.error_rate:.0%}",
                )
            elif stats.p95_ms > self.p95_ms:
                self._drop(
                    "latency",
                    f"p95 {stats.p95_ms:.0f} ms over {stats.searches} searches "
                    f"> {self.p95_ms:.0f} ms",
                )

    def force(self, keyword: bool) -> None:
        """The runtime kill switch: ``True`` runs every search by keyword until cleared."""
        with self._lock:
            if keyword:
                self._forced = True
                if self._reason != "forced":
                    self._set("forced", "keyword forced by an administrator", 0.0)
            elif self._forced:
                self._forced = False
                self._breaker = False
                self._recover()

    def update(self, other: ModeController) -> None:
        """Take ``other``'s configuration (a settings reload), keeping a forced mode."""
        with self._lock:
            changed = other.configured != self.configured
            self.configured = other.configured
            self.p95_ms, self.error_rate = other.p95_ms, other.error_rate
            self.window_s, self.min_searches = other.window_s, other.min_searches
            self.cooldown_s = other.cooldown_s
            if changed and not self._forced:
                self._reason, self._detail = None, ""
                self._breaker = False
                self._samples.clear()

    def state(self) -> ModeState:
        reason = self.degraded()
        with self._lock:
            now = self.clock()
            self._prune(now)
            retry = max(0.0, self._until - now) if reason and reason != "forced" else 0.0
            return ModeState(
                configured=self.configured,
                mode="keyword" if reason else self.configured,
                reason=reason or "",
                detail=self._detail if reason else "",
                since=self._since,
                retry_in_s=round(retry, 1),
                window=self._stats(),
            )

    # -------------------------------------------------------------- internals
    def _stats(self) -> WindowStats:
        latencies = [s[1] for s in self._samples]
        errors = sum(1 for s in self._samples if s[2])
        n = len(latencies)
        return WindowStats(
            searches=n,
            p50_ms=round(percentile(latencies, 0.5), 2),
            p95_ms=round(percentile(latencies, 0.95), 2),
            error_rate=round(errors / n, 4) if n else 0.0,
        )

    def _prune(self, now: float) -> None:
        while self._samples and now - self._samples[0][0] > self.window_s:
            self._samples.popleft()

    def _drop(self, reason: FallbackReason, detail: str) -> None:
        self._set(reason, detail, self.cooldown_s)

    def _set(self, reason: FallbackReason, detail: str, cooldown: float) -> None:
        now = self.clock()
        self._reason, self._detail = reason, detail
        self._since, self._until = now, now + cooldown
        self._samples.clear()
        self.changes += 1

    def _recover(self) -> None:
        self._reason, self._detail = None, ""
        self._since = self.clock()
        self._samples.clear()
        self._probation = True
        self.changes += 1
