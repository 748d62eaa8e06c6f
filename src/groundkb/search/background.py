"""The vector side of a search, found beside the keyword side: one process-wide pool of
threads (embedding releases the GIL, and so does SQLite), forgotten in a forked child,
and the pending result a search collects once its keyword candidates are ranked."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

    from .vectors import Neighbours

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _forget_pool() -> None:
    """In a forked child: the parent's worker threads do not exist there."""
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def background() -> ThreadPoolExecutor:
    """The threads that find a query's vector candidates while its keyword search runs."""
    global _pool
    with _pool_lock:
        if _pool is None:
            from concurrent.futures import ThreadPoolExecutor

            _pool = ThreadPoolExecutor(thread_name_prefix="groundkb-vectors")
        return _pool


@dataclass(frozen=True)
class PendingVectors:
    """A query's vector candidates, being found in the background, or why there are none.

    ``found`` resolves to the neighbours, or to a notice when the embedder failed (a
    search then degrades to keyword); a store error is the search's error.
    """

    mode: str
    notice: str = ""
    found: Future[Neighbours | str] | None = None

    def result(self) -> tuple[Neighbours | None, str, str]:
        """(vector candidates or None, the mode used, why it fell back to keyword)."""
        if self.found is None:
            return None, self.mode, self.notice
        got = self.found.result()
        if isinstance(got, str):
            return None, "keyword", got
        return got, self.mode, ""


KEYWORD_ONLY = PendingVectors("keyword")

__all__ = ["KEYWORD_ONLY", "PendingVectors", "background"]
