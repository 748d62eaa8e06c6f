"""A deterministic feature-hashing embedder, **for tests only**.

It has no notion of meaning: texts that share words or word pieces get similar vectors,
synonyms do not. Use it to test the vector path of a store or of search quickly and
reproducibly, without a model; never to serve real queries.

Features, from the lower-cased text:

* every word (a run of letters, digits or ``_``), weight 1;
* every character trigram of each word padded with ``#`` (``"users"`` gives ``#us``,
  ``use``, ``ser``, ``ers``, ``rs#``), weight 0.5, so ``user`` and ``users`` come close.

Each feature is hashed with BLAKE2b (stable across processes and platforms, unlike
``hash()``) to a column and a sign; the signed weights are summed and the row is scaled
to unit length. A text with no word at all is given the vector of a fixed feature, so
every row is a unit vector.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from groundkb.errors import ConfigError

__all__ = ["HashingEmbedder"]

#: Bumped whenever the features or the hashing change, so stored vectors are refused.
SCHEME_VERSION = 1

_WORD = re.compile(r"\w+")
_WORD_WEIGHT = 1.0
_TRIGRAM_WEIGHT = 0.5
_EMPTY_FEATURE = "e:"


@functools.lru_cache(maxsize=1 << 18)
def _slot(feature: str, dimension: int) -> int:
    """``±(column + 1)``: the column a feature adds to and the sign it adds with."""
    digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    column = (value >> 1) % dimension
    return column + 1 if value & 1 else -(column + 1)


class HashingEmbedder:
    """Signed feature hashing of words and character trigrams; for tests only.

    Args:
        dimension: vector size (at least 8; default 256).

    ``name`` is ``hashing-v<scheme>-d<dimension>``, e.g. ``hashing-v1-d256``.
    """

    def __init__(self, *, dimension: int = 256) -> None:
        if isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 8:
            raise ConfigError(
                f"hashing embedder dimension must be an integer >= 8, not {dimension!r}"
            )
        self._dimension = dimension
        self._name = f"hashing-v{SCHEME_VERSION}-d{dimension}"

    @property
    def name(self) -> str:
        return self._name

    @property
    def dimension(self) -> int:
        return self._dimension

    def _features(self, text: str) -> list[tuple[str, float]]:
        features: list[tuple[str, float]] = []
        for word in _WORD.findall(text.lower()):
            features.append(("w:" + word, _WORD_WEIGHT))
            padded = f"#{word}#"
            features.extend(
                ("c:" + padded[i : i + 3], _TRIGRAM_WEIGHT) for i in range(len(padded) - 2)
            )
        return features or [(_EMPTY_FEATURE, 1.0)]

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed ``texts`` into an ``(n, dimension)`` float32 array of unit rows, in order."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of strings, not one string")
        rows: list[int] = []
        cols: list[int] = []
        weights: list[float] = []
        for row, text in enumerate(texts):
            for feature, weight in self._features(text):
                slot = _slot(feature, self._dimension)
                rows.append(row)
                cols.append(abs(slot) - 1)
                weights.append(weight if slot > 0 else -weight)
        out = np.zeros((len(texts), self._dimension), dtype=np.float64)
        np.add.at(out, (np.asarray(rows, dtype=np.intp), np.asarray(cols, dtype=np.intp)), weights)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        # Opposite signs can cancel a text's features exactly; give such a row the
        # empty-text vector rather than a zero row.
        zero = norms[:, 0] == 0
        if zero.any():
            slot = _slot(_EMPTY_FEATURE, self._dimension)
            out[zero] = 0.0
            out[zero, abs(slot) - 1] = 1.0 if slot > 0 else -1.0
            norms[zero] = 1.0
        return np.ascontiguousarray(out / norms, dtype=np.float32)

    def embed_query(self, text: str) -> NDArray[np.float32]:
        """``embed([text])[0]``."""
        row: NDArray[np.float32] = self.embed([text])[0]
        return row

    def __repr__(self) -> str:
        return f"HashingEmbedder(dimension={self._dimension})"


if TYPE_CHECKING:  # the protocol is structural; mypy checks that this class satisfies it
    from groundkb.embed import Embedder

    _conforms: type[Embedder] = HashingEmbedder
