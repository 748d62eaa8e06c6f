"""Build an ONNX graph of a BERT sentence encoder straight from its safetensors weights.

No torch: the graph is written node by node with ``onnx.helper`` and runs on onnxruntime's
CPU provider. It covers the architecture of sentence-transformers' all-MiniLM-L6-v2 (a
post-LayerNorm BERT with absolute positions, exact GELU, mean pooling and L2
normalisation), reads the sizes from the model's ``config.json``, and rejects any
configuration it does not implement.

The graph's one input is ``input_ids`` (int32, ``[batch, seq]``) and its output is
``embedding`` (float32, ``[batch, hidden]``, unit rows). It has **no attention mask**: every
row of a batch must have the same length (no padding). The caller groups texts by token
count, which is also what makes the graph fast: onnxruntime's ``MultiHeadAttention`` takes
its quickest CPU path when no mask is given, and no time is spent on padding.

Only numpy is imported at module level; ``onnx`` is imported by `build_encoder`.

Operators: standard ONNX (opset 21: ``Gather``, ``LayerNormalization``, ``Gelu``, ...) plus
onnxruntime's ``com.microsoft`` ``MultiHeadAttention`` and, for the int8 variant,
``DynamicQuantizeMatMul`` (weights int8 symmetric per output column, activations uint8
quantized per tensor at run time). Needs onnxruntime >= 1.20.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    import onnx

#: Bumped whenever the emitted graph changes, so cached files are rebuilt.
GRAPH_VERSION = 1

#: Weight layouts this builder writes.
VARIANTS = ("fp32", "int8")

_SAFETENSORS_DTYPES: dict[str, type[np.generic]] = {
    "F32": np.float32,
    "F16": np.float16,
    "I64": np.int64,
    "I32": np.int32,
}


class UnsupportedModel(ValueError):
    """The checkpoint is not a BERT encoder this builder implements."""


@dataclass(frozen=True)
class BertConfig:
    """The sizes of a BERT encoder, read from a Hugging Face ``config.json``."""

    hidden_size: int
    num_heads: int
    num_layers: int
    intermediate_size: int
    max_positions: int
    layer_norm_eps: float

    @classmethod
    def from_file(cls, path: Path) -> BertConfig:
        """Read and check ``config.json``; raise `UnsupportedModel` for other architectures."""
        cfg = json.loads(path.read_text(encoding="utf-8"))
        checks = {
            "model_type": (cfg.get("model_type"), "bert"),
            "hidden_act": (cfg.get("hidden_act"), "gelu"),
            "position_embedding_type": (cfg.get("position_embedding_type", "absolute"), "absolute"),
        }
        for key, (got, want) in checks.items():
            if got != want:
                raise UnsupportedModel(f"{path}: {key} is {got!r}, only {want!r} is supported")
        conf = cls(
            hidden_size=int(cfg["hidden_size"]),
            num_heads=int(cfg["num_attention_heads"]),
            num_layers=int(cfg["num_hidden_layers"]),
            intermediate_size=int(cfg["intermediate_size"]),
            max_positions=int(cfg["max_position_embeddings"]),
            layer_norm_eps=float(cfg["layer_norm_eps"]),
        )
        if conf.hidden_size % conf.num_heads:
            raise UnsupportedModel(f"{path}: hidden_size is not a multiple of the head count")
        return conf


def parse_safetensors(data: bytes) -> dict[str, NDArray[np.generic]]:
    """Read every tensor of a ``.safetensors`` file's bytes into (read-only) numpy arrays."""
    (header_len,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + header_len])
    base = 8 + header_len
    tensors: dict[str, NDArray[np.generic]] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] not in _SAFETENSORS_DTYPES:
            raise UnsupportedModel(f"tensor {name} has unsupported dtype {info['dtype']}")
        dtype = np.dtype(_SAFETENSORS_DTYPES[info["dtype"]]).newbyteorder("<")
        start, end = info["data_offsets"]
        count = int(np.prod(info["shape"], dtype=np.int64))
        if end - start != count * dtype.itemsize or base + end > len(data):
            raise UnsupportedModel(f"tensor {name} has inconsistent offsets")
        arr = np.frombuffer(data, dtype=dtype, count=count, offset=base + start)
        tensors[name] = arr.reshape(info["shape"])
    return tensors


def quantize_per_column(w: NDArray[np.float32]) -> tuple[NDArray[np.int8], NDArray[np.float32]]:
    """Quantize a ``[in, out]`` weight to int8, symmetric, one scale per output column."""
    absmax = np.abs(w).max(axis=0)
    scale = np.where(absmax > 0, absmax / 127.0, 1.0).astype(np.float32)
    q = np.clip(np.rint(w / scale), -127, 127).astype(np.int8)
    return q, scale


class _GraphWriter:
    """Accumulates nodes and initializers with unique names."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []

    def const(self, name: str, value: NDArray[np.generic]) -> str:
        from onnx import numpy_helper

        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def op(
        self,
        op_type: str,
        inputs: list[str],
        output: str,
        *,
        ms: bool = False,
        outputs: list[str] | None = None,
        **attrs: Any,
    ) -> str:
        from onnx import helper

        outs = outputs if outputs is not None else [output]
        self.nodes.append(
            helper.make_node(
                op_type,
                inputs,
                outs,
                name=f"{op_type}_{outs[0]}",
                domain="com.microsoft" if ms else "",
                **attrs,
            )
        )
        return outs[0]


def build_encoder(
    weights: Mapping[str, NDArray[np.generic]], config: BertConfig, variant: str = "int8"
) -> onnx.ModelProto:
    """Write the encoder + mean pooling + L2 normalisation graph for ``weights``.

    ``variant`` is ``"fp32"`` (the checkpoint's weights as they are) or ``"int8"`` (every
    linear layer of each block, Q/K/V, attention output and both feed-forward layers, as a
    dynamically quantized int8 matmul).
    """
    import onnx
    from onnx import TensorProto, helper

    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, not {variant!r}")
    hidden, eps = config.hidden_size, config.layer_norm_eps
    g = _GraphWriter()

    def w(name: str) -> NDArray[np.float32]:
        for key in (name, f"bert.{name}"):
            if key in weights:
                return np.asarray(weights[key], dtype=np.float32)
        raise UnsupportedModel(f"weight {name} is missing from the checkpoint")

    def linear(
        x: str,
        prefix: str,
        out: str,
        weight: NDArray[np.float32] | None = None,
        bias: NDArray[np.float32] | None = None,
    ) -> str:
        wt = (w(f"{prefix}.weight") if weight is None else weight).T  # torch keeps [out, in]
        b = w(f"{prefix}.bias") if bias is None else bias
        if variant == "int8":
            q, scale = quantize_per_column(wt)
            return g.op(
                "DynamicQuantizeMatMul",
                [
                    x,
                    g.const(f"{out}.wq", q),
                    g.const(f"{out}.scale", scale),
                    "",
                    g.const(f"{out}.b", b),
                ],
                out,
                ms=True,
            )
        mm = g.op("MatMul", [x, g.const(f"{out}.w", wt)], f"{out}.mm")
        return g.op("Add", [mm, g.const(f"{out}.b", b)], out)

    def add_norm(x: str, residual: str, prefix: str, out: str) -> str:
        s = g.op("Add", [x, residual], f"{out}.sum")
        return g.op(
            "LayerNormalization",
            [
                s,
                g.const(f"{out}.g", w(f"{prefix}.weight")),
                g.const(f"{out}.beta", w(f"{prefix}.bias")),
            ],
            out,
            axis=-1,
            epsilon=eps,
        )

    # Embeddings: word + position + token type 0 (folded into the position table), then LN.
    emb = "embeddings"
    positions = w(f"{emb}.position_embeddings.weight") + w(f"{emb}.token_type_embeddings.weight")[0]
    zero = g.const("zero", np.array([0], np.int64))
    seq = g.op("Shape", ["input_ids"], "seq_len", start=1, end=2)
    pos = g.op("Slice", [g.const("positions", positions), zero, seq, zero], "pos")
    tok = g.op(
        "Gather",
        [g.const("word_embeddings", w(f"{emb}.word_embeddings.weight")), "input_ids"],
        "tok",
    )
    s = g.op("Add", [tok, pos], "emb.sum")
    x = g.op(
        "LayerNormalization",
        [
            s,
            g.const("emb.g", w(f"{emb}.LayerNorm.weight")),
            g.const("emb.beta", w(f"{emb}.LayerNorm.bias")),
        ],
        "x0",
        axis=-1,
        epsilon=eps,
    )

    for i in range(config.num_layers):
        p = f"encoder.layer.{i}"
        att = f"{p}.attention.self"
        qkv_w = np.concatenate([w(f"{att}.{n}.weight") for n in ("query", "key", "value")])
        qkv_b = np.concatenate([w(f"{att}.{n}.bias") for n in ("query", "key", "value")])
        qkv = linear(x, att, f"l{i}.qkv", qkv_w, qkv_b)
        q, k, v = (f"l{i}.q", f"l{i}.k", f"l{i}.v")
        g.op("Split", [qkv], q, outputs=[q, k, v], axis=2, num_outputs=3)
        a = g.op("MultiHeadAttention", [q, k, v], f"l{i}.att", ms=True, num_heads=config.num_heads)
        o = linear(a, f"{p}.attention.output.dense", f"l{i}.o")
        x = add_norm(o, x, f"{p}.attention.output.LayerNorm", f"l{i}.x1")
        h = g.op("Gelu", [linear(x, f"{p}.intermediate.dense", f"l{i}.ffn1")], f"l{i}.gelu")
        f = linear(h, f"{p}.output.dense", f"l{i}.ffn2")
        x = add_norm(f, x, f"{p}.output.LayerNorm", f"l{i}.x2")

    # Mean pooling over all positions (batches carry no padding), then unit length.
    axis1 = g.const("axis1", np.array([1], np.int64))
    mean = g.op("ReduceMean", [x, axis1], "mean", keepdims=0)
    norm = g.op("ReduceL2", [mean, axis1], "norm", keepdims=1)
    norm = g.op("Max", [norm, g.const("eps", np.array(1e-12, np.float32))], "norm.clip")
    g.op("Div", [mean, norm], "embedding")

    graph = helper.make_graph(
        g.nodes,
        "sentence_encoder",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT32, ["batch", "seq"])],
        [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["batch", hidden])],
        g.inits,
    )
    model = helper.make_model(
        graph,
        producer_name="groundkb",
        producer_version=str(GRAPH_VERSION),
        opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)],
    )
    model.ir_version = 10
    onnx.checker.check_model(model)
    return model
