"""Derived data kept between processes: a search in a fresh process (a command line
search, a server starting) reads what an earlier process built from the same content
instead of building it again (``derived.py``; on eight APIs in one index, 5,150
operations, building takes about 0.3 s and reading it back about 0.04 s).

A snapshot is named by what it was built from:

- the index's content, as the store names it (``Store.content_token``: a new name with
  every committed change, in any process), and the sources the view sees;
- the groundkb code (every module's path, size and modification time) and the English
  lexicon it read (``analyze/lexicon.py``), so that no other version's data is read.

Snapshots are pickles in ``<cache>/derived/`` (``cachedir.py``), written whole or not at
all, readable and writable by their owner only. One that another user owns, that others
may write, or that does not read back as derived data is ignored and built again. Only
data that took at least :data:`KEEP_MIN_S` to build is kept (smaller data is built
faster than a snapshot is checked), and at most :data:`KEEP_FILES` snapshots (the least
recently used go first). A snapshot is written only when the content did not change
while it was built. Every file there may be deleted at any time.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import os
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..analyze import lexicon
from ..cachedir import default_cache_dir, last_used, trusted, write_atomic
from .derived import Derived, build_derived

if TYPE_CHECKING:
    from ..store.base import Store

log = logging.getLogger(__name__)

KEEP_MIN_S = 0.02  # build time from which a snapshot is kept
KEEP_FILES = 16  # snapshots kept, the most recently used
FORMAT = 1  # of the files


@functools.cache
def _code() -> str:
    """The groundkb modules as installed: a changed module is other code."""
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256(f"{FORMAT} {sys.version}".encode())
    for path in sorted(root.rglob("*.py")):
        st = path.stat()
        digest.update(f"{path.relative_to(root)} {st.st_size} {st.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def snapshot_path(content: str) -> Path:
    """Where the snapshot of the derived data of ``content`` (a content token) is kept."""
    key = hashlib.sha256(f"{_code()}\n{lexicon.identity()}\n{content}".encode()).hexdigest()
    return default_cache_dir() / "derived" / f"{key[:32]}.pickle"


def load(path: Path) -> Derived | None:
    """The derived data kept at ``path``, or None (none there, or not to be trusted)."""
    import pickle  # only a process that reads or keeps one needs it

    try:
        with path.open("rb") as fh:
            if not trusted(fh):
                log.warning("ignoring %s: another user owns it or may write it", path)
                return None
            got = pickle.load(fh)
    except FileNotFoundError:
        return None
    except Exception as exc:  # a torn or foreign file is built again
        log.debug("ignoring %s: %s", path, exc)
        return None
    if not isinstance(got, Derived):
        return None
    with contextlib.suppress(OSError):
        os.utime(path)  # recently used: kept the longest
    return got


def save(path: Path, derived: Derived) -> None:
    """Keep ``derived`` at ``path`` and forget the oldest snapshots past
    :data:`KEEP_FILES`; a cache folder that cannot be written is no error."""
    import pickle

    try:
        data = pickle.dumps(derived, protocol=pickle.HIGHEST_PROTOCOL)
        write_atomic(path, data, mode=0o600)
        kept = sorted(path.parent.glob("*.pickle"), key=last_used, reverse=True)
        for old in kept[KEEP_FILES:]:
            old.unlink(missing_ok=True)
    except Exception as exc:
        log.debug("could not keep the derived data at %s: %s", path, exc)


def kept_or_built(store: Store, token: str) -> Derived:
    """The derived data of ``store`` as of change token ``token``: read back when a
    snapshot of this content is kept, else built (and kept when worth it)."""
    content = store.content_token()
    if content is None:
        return build_derived(store, token)
    path = snapshot_path(content)
    kept = load(path)
    if kept is not None:
        return replace(kept, token=token)
    started = time.perf_counter()
    built = build_derived(store, token)
    # kept only when nothing changed the content while it was read: then it is the
    # data of exactly that content
    if time.perf_counter() - started >= KEEP_MIN_S and store.content_token() == content:
        save(path, built)
    return built


__all__ = ["KEEP_FILES", "KEEP_MIN_S", "kept_or_built", "load", "save", "snapshot_path"]
