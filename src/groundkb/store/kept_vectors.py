"""The SQLite store's matrix of vectors kept between processes: a fresh process (a
command-line hybrid search, a server starting) maps the matrix that an earlier process
read from the same content instead of reading every vector from SQLite again (on
SciFact, 5,746 vectors, reading them takes about 0.1 s beside a query being embedded;
mapping the kept matrix a few milliseconds; docs/benchmarks.md).

- **Named** by the index's content (``Store.content_token``, read in the same read
  transaction as the vectors, so the name is exactly the content read), the embedder
  (name and dimension) and :data:`FORMAT`.
- **Two files** in ``<cache>/vectors/`` (``cachedir.py``): ``<name>.npy``, the float32
  matrix, memory-mapped read-only (its pages are shared by every process that maps it and
  read from disk as searches touch them), and ``<name>.rows.npz``, each row's chunk id,
  type, category and source. Arrays only, read without pickle.
- **Trusted like the derived data** (``search/snapshot.py``): owner-only files, ignored
  when another user owns one or others may write it, or when it does not read back as a
  matrix of the embedder's dimension with one row per chunk id.
- **Written** only by the first load of a store (a server that reloads the matrix while
  an ingest commits does not write one per commit), only when reading the vectors took
  at least :data:`KEEP_MIN_S`; the most recently used are kept, at most
  :data:`KEEP_SETS` of them and no more than :data:`KEEP_BYTES` of matrices together
  (the one just written stays whatever its size, so a large index still starts fast,
  and the older ones make room for it). A file is written whole under a temporary
  name and then renamed, never written in place, so a process that maps it keeps a
  valid mapping when it is replaced or deleted. Every file there may be deleted at any
  time.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
from pathlib import Path

import numpy as np
from numpy.lib import format as npy

from ..cachedir import default_cache_dir, last_used, open_atomic, trusted
from .exact import VectorMatrix

log = logging.getLogger(__name__)

FORMAT = 1  # of the files
KEEP_MIN_S = 0.02  # reading the vectors from SQLite took at least this: worth keeping
KEEP_SETS = 4  # matrices kept, the most recently used
KEEP_BYTES = 1 << 30  # and together no larger than this (100k vectors of 384: 154 MB)
_ROWS = ("ids", "types", "categories", "sources")


def paths(content: str, embedder: tuple[str, int]) -> tuple[Path, Path]:
    """Where the matrix of ``content`` (a content token) made by ``embedder`` is kept:
    the matrix and its rows."""
    name = f"{FORMAT}\n{content}\n{embedder[0]}\n{embedder[1]}"
    key = hashlib.sha256(name.encode()).hexdigest()[:32]
    folder = default_cache_dir() / "vectors"
    return folder / f"{key}.npy", folder / f"{key}.rows.npz"


def read(
    where: tuple[Path, Path], token: str, dimension: int, int8: bool = True
) -> VectorMatrix | None:
    """The matrix kept at ``where``, mapped, or None (none there, or not to be trusted)."""
    matrix_path, rows_path = where
    try:
        with rows_path.open("rb") as fh:
            if not trusted(fh):
                log.warning("ignoring %s: another user owns it or may write it", rows_path)
                return None
            with np.load(fh, allow_pickle=False) as kept:
                ids, types, categories, sources = (kept[k] for k in _ROWS)
        with matrix_path.open("rb") as fh:
            if not trusted(fh):
                log.warning("ignoring %s: another user owns it or may write it", matrix_path)
                return None
            version = npy.read_magic(fh)
            header = npy.read_array_header_1_0 if version == (1, 0) else npy.read_array_header_2_0
            shape, fortran, dtype = header(fh)
            n = len(ids)
            if (
                fortran
                or dtype != np.float32
                or shape != (n, dimension)
                or not all(len(a) == n for a in (types, categories, sources))
            ):
                return None
            matrix = (
                np.memmap(fh, dtype=np.float32, mode="r", shape=shape, offset=fh.tell())
                if n
                else np.zeros((0, dimension), dtype=np.float32)
            )
    except FileNotFoundError:
        return None
    except Exception as exc:  # a torn or foreign file is read from the index again
        log.debug("ignoring %s: %s", matrix_path, exc)
        return None
    for path in where:
        with contextlib.suppress(OSError):
            os.utime(path)  # recently used: kept the longest
    chunk_ids: list[str] = ids.tolist()
    return VectorMatrix(
        token,
        chunk_ids,
        matrix,
        types,
        categories,
        sources,
        {c: i for i, c in enumerate(chunk_ids)},
        int8,
    )


def write(where: tuple[Path, Path], matrix: VectorMatrix) -> None:
    """Keep ``matrix`` at ``where`` and forget the least recently used past
    :data:`KEEP_SETS` or :data:`KEEP_BYTES`; a cache folder that cannot be written is no
    error."""
    matrix_path, rows_path = where
    try:
        # the rows first: a matrix without its rows is never read
        with open_atomic(rows_path, mode=0o600) as fh:
            np.savez(
                fh,
                ids=np.asarray(matrix.ids, dtype=str),
                types=matrix.types,
                categories=matrix.categories,
                sources=matrix.sources,
            )
        with open_atomic(matrix_path, mode=0o600) as fh:
            np.save(fh, np.ascontiguousarray(matrix.matrix, dtype=np.float32))
        _forget_old(matrix_path)
    except Exception as exc:
        log.debug("could not keep the vectors at %s: %s", matrix_path, exc)


def _forget_old(newest: Path) -> None:
    """Keep ``newest`` and, from the most recently used on, each matrix that still fits
    :data:`KEEP_SETS` and :data:`KEEP_BYTES`; forget the others and their rows."""
    count, total = 0, 0
    for path in sorted(newest.parent.glob("*.npy"), key=last_used, reverse=True):
        try:
            size = path.stat().st_size
        except OSError:
            continue  # gone already
        if path == newest or (count < KEEP_SETS and total + size <= KEEP_BYTES):
            count, total = count + 1, total + size
            continue
        path.unlink(missing_ok=True)
        path.with_name(path.name.removesuffix(".npy") + ".rows.npz").unlink(missing_ok=True)


__all__ = ["FORMAT", "KEEP_BYTES", "KEEP_MIN_S", "KEEP_SETS", "paths", "read", "write"]
