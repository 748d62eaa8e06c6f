"""Search throughput and latency while another process ingests into the same index.

A serving process (one ``KnowledgeBase``, keyword retrieval, two search threads) over an
index of 3,000 documents (the examples and generated pages with a varied vocabulary)
searches as fast as it can while ``groundkb ingest`` adds 2,000 documents to the same
SQLite file in another process, one committed write per document; then, for reference,
as long again with the index quiet. Reported per phase: searches per second, p50, p95 and the
slowest search, and how many times the serving side rebuilt its derived data.

With ``--before SRC`` (a ``src`` folder of another checkout, e.g. ``git archive main src
| tar -x -C /tmp/before``) both codes run, alternating round by round:

    python benchmarks/serving_while_ingesting.py --before /tmp/before/src --rounds 2 \\
        --json benchmarks/results/serving_while_ingesting.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
QUERIES = ["explain workspace", "how do I share a widget", "gizmo frobnicates", "quick links"]


def _env(src: Path | None) -> dict[str, str]:
    env = {**os.environ, "GROUNDKB_EMBEDDER": "none", "HF_HUB_OFFLINE": "1"}
    if src is not None:
        env["PYTHONPATH"] = str(src)
    return env


def serve(db: Path, bulk: Path, seconds_quiet: float) -> dict[str, Any]:
    """The serving side (runs in its own process, with the code under test)."""
    from groundkb import KnowledgeBase, Settings

    kb = KnowledgeBase.open(settings=Settings(db=str(db), embedder="none"))
    builds = [0]
    real = kb.searcher._build_derived if hasattr(kb.searcher, "_build_derived") else None
    if real is not None:  # count rebuilds of the derived data (new code)

        def counted(gen: int) -> Any:
            builds[0] += 1
            return real(gen)

        kb.searcher._derived_data._build = counted  # type: ignore[attr-defined]
    kb.search("warm up")
    phases: dict[str, Any] = {}
    for phase in ("ingesting", "quiet"):
        latencies: list[float] = []
        stop = threading.Event()

        def worker(stop: threading.Event = stop, latencies: list[float] = latencies) -> None:
            n = 0
            while not stop.is_set():
                started = time.perf_counter()
                kb.search(QUERIES[n % len(QUERIES)])
                latencies.append(time.perf_counter() - started)
                n += 1

        threads = [threading.Thread(target=worker) for _ in range(2)]
        started = time.perf_counter()
        for t in threads:
            t.start()
        if phase == "ingesting":
            code = "from groundkb.serve.cli import main; main()"
            subprocess.run(
                [sys.executable, "-c", code, "--db", str(db), "ingest", str(bulk), "-s", "bulk",
                 "-q"],
                check=True, stdout=subprocess.DEVNULL, env=dict(os.environ),
            )  # fmt: skip
        else:
            time.sleep(seconds_quiet)
        stop.set()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - started
        ordered = sorted(latencies)
        phases[phase] = {
            "seconds": round(elapsed, 2),
            "searches": len(ordered),
            "searches_per_s": round(len(ordered) / elapsed, 1),
            "p50_ms": round(1000 * statistics.median(ordered), 1),
            "p95_ms": round(1000 * ordered[int(0.95 * (len(ordered) - 1))], 1),
            "max_ms": round(1000 * ordered[-1], 1),
        }
        seconds_quiet = elapsed
    phases["derived_builds"] = builds[0] if real is not None else None
    phases["documents"] = kb.stats().documents
    kb.close()
    return phases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, help="src folder of the code to compare with")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--documents", type=int, default=2000)
    parser.add_argument("--base", type=int, default=3000, help="generated documents at start")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--serve", nargs=2, metavar=("DB", "BULK"), help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.serve:
        print(json.dumps(serve(Path(opts.serve[0]), Path(opts.serve[1]), 0.0)))
        return
    sides: dict[str, Path | None] = {"after": None}
    if opts.before:
        sides = {"before": opts.before, "after": None}
    results: dict[str, list[dict[str, Any]]] = {s: [] for s in sides}
    with tempfile.TemporaryDirectory() as tmp:
        base, bulk, pages = Path(tmp) / "base.db", Path(tmp) / "bulk", Path(tmp) / "pages"
        bulk.mkdir()
        pages.mkdir()
        for n in range(opts.base):  # words w0..w9999: a vocabulary that grows with the index
            words = " ".join(f"w{(n * 7 + i * 13) % 10_000}" for i in range(40))
            (pages / f"page-{n:05d}.md").write_text(f"# Page {n}\n\n{words}\n")
        for n in range(opts.documents):
            (bulk / f"gizmo-{n:04d}.md").write_text(
                f"# Gizmo {n}\n\nGizmo number {n} frobnicates the widget in workspace {n % 7}.\n"
            )
        code = "from groundkb.serve.cli import main; main()"
        folders = [
            (ROOT / "examples" / "docs", "docs"),
            (ROOT / "examples" / "entries", "commands"),
            (pages, "pages"),
        ]
        for folder, source in folders:
            subprocess.run(
                [sys.executable, "-c", code, "--db", str(base), "ingest", str(folder), "-s",
                 source, "-q"],
                check=True, stdout=subprocess.DEVNULL, env=_env(None),
            )  # fmt: skip
        for _ in range(opts.rounds):
            for side, src in sides.items():
                db = Path(tmp) / f"{side}.db"
                for suffix in ("", "-wal", "-shm"):
                    Path(f"{db}{suffix}").unlink(missing_ok=True)
                shutil.copy(base, db)
                run = subprocess.run(
                    [sys.executable, __file__, "--serve", str(db), str(bulk)],
                    check=True, capture_output=True, text=True, env=_env(src),
                )  # fmt: skip
                results[side].append(json.loads(run.stdout.strip().splitlines()[-1]))
    out = {
        "documents_at_start": opts.base + 13,
        "documents_ingested": opts.documents,
        "cpus": os.cpu_count(),
        **results,
    }
    print(json.dumps(out, indent=2))
    if opts.json:
        opts.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
