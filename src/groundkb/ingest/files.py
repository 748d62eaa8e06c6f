"""Finding and reading the files of an ingest, whatever the folder holds.

- **Regular files only.** A file is opened without blocking and checked with
  ``fstat`` on the open descriptor: a FIFO named ``pipe.md`` (which would block a
  plain ``open`` until someone writes to it), ``x.md`` linked to ``/dev/zero`` (which
  never ends) or a socket is one problem for that path, not a hang.
- **Bounded reads.** At most ``limit`` bytes are read, whatever ``st_size`` says.
- **Unreadable folders** are reported (``os.walk``'s ``onerror``), so that the caller
  keeps the documents it had from them instead of deleting them as gone.
- **File names that are not UTF-8** cannot become document ids; such a file is a
  problem named with its bytes escaped (``caf\\xe9.md``).
- **Unsupported files** (``notes.txt``) are listed as skipped, so the report can say so;
  hidden entries (``.git``) and folders starting with ``_`` are left out silently.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def printable(name: str) -> str:
    """A path as text that can always be printed and stored: bytes that are not UTF-8
    (``os`` gives them as lone surrogates) become ``\\xNN``."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def is_utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def read_regular(path: Path, limit: int) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes; OSError (with a
    ``strerror`` for people) for anything else."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    fd = os.open(path, flags)
    with os.fdopen(fd, "rb") as f:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _KINDS if test(mode)), "not a file")
            raise OSError(errno.EINVAL, f"not a regular file ({kind})")
        data = f.read(limit + 1)
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"file is larger than {limit // 2**20} MiB")
    return data


@dataclass
class Found:
    """What a walk found besides the files to load."""

    unreadable: list[tuple[str, str]] = field(default_factory=list)  # (folder, why)
    bad_names: list[str] = field(default_factory=list)  # printable paths
    skipped: list[str] = field(default_factory=list)  # unsupported file types


def walk(
    root: Path, wanted: Callable[[str], bool], found: Found | None = None
) -> Iterator[tuple[Path, str]]:
    """(file, path relative to root) of every file whose name ``wanted`` accepts."""
    found = found if found is not None else Found()
    if root.is_file():
        yield root, root.name
        return

    def unreadable(exc: OSError) -> None:
        where = Path(exc.filename) if exc.filename else root
        try:
            rel = where.relative_to(root).as_posix()
        except ValueError:
            rel = where.as_posix()
        found.unreadable.append((printable("" if rel == "." else rel), exc.strerror or str(exc)))

    for dirpath, dirnames, filenames in os.walk(root, onerror=unreadable):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "_")))
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            full = Path(dirpath) / name
            rel = full.relative_to(root).as_posix()
            if not wanted(name):
                found.skipped.append(printable(rel))
            elif not is_utf8(rel):
                found.bad_names.append(printable(rel))
            else:
                yield full, rel
