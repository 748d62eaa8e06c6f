"""Where the local embedder's time goes, and how close it runs to what this CPU can do.

For each sequence length asked (``--tokens 256,128``) one onnxruntime session of one
thread, opened on the cached MiniLM graph as ``MiniLMEmbedder`` opens it, embeds
batches of ``--batch`` rows of that many tokens (the default ``batch_tokens`` of 768 is
three rows of 256). The benchmark reports:

* texts per second on one core, and per CPU-second;
* each operator type's share of onnxruntime's kernel time (its profiler);
* the arithmetic done per text and the rate it was done at: the int8 linear layers
  (``DynamicQuantizeMatMul``: Q/K/V, attention output and both feed-forward layers) and
  the fp32 attention (``MultiHeadAttention``: Q·Kᵀ and the weighted sum of V), in
  multiply-adds per second;
* texts per second with one such session in each of two processes at once: when the
  cores do not share their arithmetic units the rate per process stays the same, and two
  cores embed twice as fast as one (``MiniLMEmbedder`` runs one session per core).

Token values do not change the work done (no padding, no mask), so the rows are random
token ids. Numbers depend on the machine: compare them within one run.

    python benchmarks/embed_profile.py [--tokens 256,128] \
        [--json benchmarks/results/embed_profile.json]
"""

from __future__ import annotations

import argparse
import collections
import json
import multiprocessing
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def session(graph: str, profile: bool = False) -> Any:
    """A one-thread session with the embedder's options (and the profiler when asked)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if profile:
        options.enable_profiling = True
        options.profile_file_prefix = str(Path(tempfile.gettempdir()) / "groundkb-embed-profile")
    return ort.InferenceSession(graph, options, providers=["CPUExecutionProvider"])


def rate(graph: str, tokens: int, batch: int, seconds: float) -> tuple[float, float]:
    """Texts per second and texts per CPU-second of one session, run for ``seconds``."""
    import numpy as np

    s = session(graph)
    rows = np.random.default_rng(tokens).integers(1000, 29000, (batch, tokens), dtype=np.int32)
    for _ in range(2):
        s.run(None, {"input_ids": rows})
    done, start, cpu = 0, time.perf_counter(), time.process_time()
    while time.perf_counter() - start < seconds:
        s.run(None, {"input_ids": rows})
        done += batch
    wall, used = time.perf_counter() - start, time.process_time() - cpu
    return done / wall, done / used


def _rate_job(args: tuple[str, int, int, float]) -> tuple[float, float]:
    return rate(*args)


def profile(graph: str, tokens: int, batch: int, runs: int) -> dict[str, float]:
    """Microseconds per text spent in each operator type (onnxruntime's profiler)."""
    import numpy as np

    s = session(graph, profile=True)
    rows = np.random.default_rng(tokens).integers(1000, 29000, (batch, tokens), dtype=np.int32)
    for _ in range(runs):
        s.run(None, {"input_ids": rows})
    path = s.end_profiling()
    events = json.loads(Path(path).read_text(encoding="utf-8"))
    os.unlink(path)
    spent: collections.Counter[str] = collections.Counter()
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            spent[e["args"]["op_name"]] += e["dur"]
    return {op: us / (runs * batch) for op, us in spent.most_common()}


def work(config: Any, tokens: int) -> dict[str, float]:
    """Multiply-adds per text: the linear layers and the attention."""
    h, i, layers, heads = (
        config.hidden_size,
        config.intermediate_size,
        config.num_layers,
        config.num_heads,
    )
    linear = layers * tokens * (3 * h * h + h * h + 2 * h * i)
    attention = layers * heads * 2 * tokens * tokens * (h // heads)
    return {"linear": linear, "attention": attention}


def cpu() -> dict[str, Any]:
    """The CPU's model name and the vector extensions onnxruntime's int8 kernels can use
    (read from ``/proc/cpuinfo`` where there is one): the same code runs at very
    different rates on different CPUs, and a shared machine may move to another."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        return {"model": platform.processor()}
    model = next((ln.split(":", 1)[1].strip() for ln in text.splitlines()
                  if ln.startswith("model name")), "")  # fmt: skip
    flags = next((ln.split(":", 1)[1].split() for ln in text.splitlines()
                  if ln.startswith("flags")), [])  # fmt: skip
    wanted = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8", "avx512_bf16")
    return {"model": model, "flags": [f for f in wanted if f in flags]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tokens", default="256,128", help="sequence lengths, comma-separated")
    ap.add_argument("--batch", type=int, default=3, help="rows per onnxruntime call")
    ap.add_argument("--seconds", type=float, default=4.0, help="per rate measurement")
    ap.add_argument("--runs", type=int, default=8, help="profiled calls per length")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()

    from groundkb.embed.minilm import MiniLMEmbedder
    from groundkb.embed.onnx_bert import BertConfig

    embedder = MiniLMEmbedder(threads=1)  # builds and caches the graph when missing
    graph = str(embedder.graph_path)
    config = BertConfig.from_file(embedder.model_dir / "config.json")
    out: dict[str, Any] = {
        "embedder": embedder.name,
        "machine": f"{platform.machine()} python {platform.python_version()}",
        "cpu": cpu(),
        "cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "load_average": os.getloadavg()[0],
        "lengths": {},
    }
    print(f"{out['cpu']}, {out['cpus']} CPUs, load average {out['load_average']:.2f}")
    for tokens in (int(t) for t in args.tokens.split(",") if t):
        alone, per_cpu = rate(graph, tokens, args.batch, args.seconds)
        with multiprocessing.get_context("spawn").Pool(2) as pool:
            pair = pool.map(_rate_job, [(graph, tokens, args.batch, args.seconds)] * 2)
        spent = profile(graph, tokens, args.batch, args.runs)
        total = sum(spent.values())
        macs = work(config, tokens)
        linear_us = spent.get("DynamicQuantizeMatMul", 0.0)
        attention_us = spent.get("MultiHeadAttention", 0.0)
        row = {
            "texts_per_s": round(alone, 1),
            "texts_per_cpu_s": round(per_cpu, 1),
            "two_processes_texts_per_s": [round(p[0], 1) for p in pair],
            "ms_per_text_profiled": round(total / 1000, 2),
            "share": {op: round(us / total, 4) for op, us in spent.items()},
            "gmac_per_text": {k: round(v / 1e9, 3) for k, v in macs.items()},
            "int8_linear_gmac_per_s": round(macs["linear"] / linear_us / 1e3, 1)
            if linear_us
            else None,
            "fp32_attention_gmac_per_s": round(macs["attention"] / attention_us / 1e3, 1)
            if attention_us
            else None,
        }
        out["lengths"][str(tokens)] = row
        shares = ", ".join(f"{op} {100 * v:.1f} %" for op, v in list(row["share"].items())[:6])
        print(
            f"{tokens} tokens: {row['texts_per_s']} texts/s on one core "
            f"({row['texts_per_cpu_s']} per CPU-s), two processes at once "
            f"{row['two_processes_texts_per_s']}; int8 linears "
            f"{row['int8_linear_gmac_per_s']} GMAC/s, fp32 attention "
            f"{row['fp32_attention_gmac_per_s']} GMAC/s; {shares}",
            flush=True,
        )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
