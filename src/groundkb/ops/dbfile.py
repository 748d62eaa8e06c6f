"""Noticing that the database file was replaced while the process had it open.

SQLite keeps reading the file it opened, even after that file is deleted: a server whose
index was deleted and built again (``rm kb.db && groundkb ingest ...``, or a new copy
moved into place) would answer from the old, deleted data until restarted.
:class:`FileWatch` remembers the identity of the file opened (device and inode) and
says when the path now names another file; the knowledge base then reopens its store
(``KnowledgeBase._check_db``). A path with no file at the moment is not a change: the
open file keeps serving until a new one appears. One ``stat`` per check.
"""

from __future__ import annotations

import logging
import os

log = logging.getLogger(__name__)


def _ident(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def sqlite_path(location: str) -> str | None:
    """The file of a SQLite location (a path or ``sqlite:///...``); None otherwise."""
    scheme, sep, rest = location.partition("://")
    if sep and scheme != "sqlite":
        return None
    path = (rest.removeprefix("/") if rest.startswith("//") else rest) if sep else location
    return path if path and path != ":memory:" else None


class FileWatch:
    """Whether the file at ``path`` is still the one that was opened."""

    def __init__(self, location: str) -> None:
        self.path = sqlite_path(location)
        self.ident = _ident(self.path) if self.path else None
        self._missing = False

    def replaced(self) -> bool:
        """True once each time the path starts naming another file than before."""
        if self.path is None:
            return False
        now = _ident(self.path)
        if now is None:
            if not self._missing:
                log.warning("%s was deleted; serving the open copy until a new one appears",
                            self.path)  # fmt: skip
            self._missing = True
            return False
        self._missing = False
        if now == self.ident:
            return False
        self.ident = now
        return True
