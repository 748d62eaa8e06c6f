"""groundkb's cache folder: what is built once from installed packages and kept between
processes (the local model's graph, the digest of its weights, the verb lexicon, what a
search derives from an index's content). Every file there can be deleted; it is built
again when needed."""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO


def default_cache_dir() -> Path:
    """``$GROUNDKB_CACHE``, else ``$XDG_CACHE_HOME/groundkb``, else ``~/.cache/groundkb``."""
    env = os.environ.get("GROUNDKB_CACHE")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "groundkb"


def write_atomic(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder; the file
    gets permissions ``mode``."""
    with open_atomic(path, mode) as fh:
        fh.write(data)


@contextmanager
def open_atomic(path: Path, mode: int = 0o644) -> Iterator[BinaryIO]:
    """A file to write that becomes ``path`` (with permissions ``mode``) when the block
    ends without an error, and is removed when it raises: ``path`` is whole or absent."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:  # mkstemp made it readable by its owner only
            yield fh
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def trusted(fh: BinaryIO) -> bool:
    """Whether an open cache file may be read back: its owner is this process's user and
    nobody else may write it (one that fails is built again, never read)."""
    st = os.fstat(fh.fileno())
    return st.st_uid == os.getuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def last_used(path: Path) -> float:
    """When a kept file was last used (readers touch it): the sort key of what is kept
    longest; 0 for one that is gone."""
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


__all__ = ["default_cache_dir", "last_used", "open_atomic", "trusted", "write_atomic"]
