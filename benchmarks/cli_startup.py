"""Wall time of one ``groundkb search`` from the command line, start to exit.

Every CLI search is a new process: it imports groundkb, opens the index and, in hybrid
mode, loads the embedding model before it can embed the query. This measures that whole
cost for three searches on the example knowledge base (ingested once, with the local
model's vectors): a keyword search, a hybrid search, and an exact command name (which
needs no model). With ``--before SRC`` (a ``src`` folder of another checkout, e.g.
``git archive main src | tar -x -C /tmp/before``) the same searches run with that code
too, alternating run by run, so both sides see the same machine load.

    python benchmarks/cli_startup.py --before /tmp/before/src --runs 15 \\
        --json benchmarks/results/cli_startup.json

With ``--db`` (an index built beforehand, e.g. the eight APIs of ``api_questions.py``)
the searches run on that index instead: ``--query`` by keyword, and by meaning too when
the index has vectors. A fresh process builds the data it derives from the whole index
(the names it knows, the command and API indexes) before its first search, so a large
index shows what that costs.

    python benchmarks/cli_startup.py --db benchmarks/results/tmp/apiq-after/together.db \\
        --query "refund a customer's payment" --before /tmp/before/src --runs 5

Needs the local model (``make install`` installs it). Medians and p90 in seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SEARCHES = {
    "keyword": ["search", "how do I share a workspace", "--mode", "keyword"],
    "hybrid": ["search", "how do I share a workspace", "--mode", "hybrid"],
    "command": ["search", "helios gw users list"],
}


def _cli(src: Path | None, db: Path, args: list[str]) -> float:
    env = {**os.environ, "GROUNDKB_EMBEDDER": "minilm", "HF_HUB_OFFLINE": "1"}
    if src is not None:
        env["PYTHONPATH"] = str(src)
    code = "from groundkb.serve.cli import main; main()"
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", code, "--db", str(db), *args],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return time.perf_counter() - started


def _has_vectors(db: Path) -> bool:
    """Whether a SQLite index holds vectors (anything else is searched by keyword)."""
    if not db.is_file():
        return False
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return bool(conn.execute("SELECT 1 FROM vectors LIMIT 1").fetchone())


def _summary(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    return {
        "median_s": round(statistics.median(ordered), 3),
        "p90_s": round(ordered[int(0.9 * (len(ordered) - 1))], 3),
        "min_s": round(ordered[0], 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, help="src folder of the code to compare with")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--db", type=Path, help="search this index instead (see above)")
    parser.add_argument("--query", default="how do I create a customer", help="with --db")
    opts = parser.parse_args()
    sides: dict[str, Path | None] = {"after": None}
    if opts.before:
        sides = {"before": opts.before, "after": None}
    with tempfile.TemporaryDirectory() as tmp:
        if opts.db:
            db = opts.db
            searches = {"keyword": ["search", opts.query, "--mode", "keyword"]}
            if _has_vectors(db):
                searches["hybrid"] = ["search", opts.query, "--mode", "hybrid"]
        else:
            db, searches = Path(tmp) / "example.db", SEARCHES
            for folder, source in (("docs", "docs"), ("entries", "commands")):
                shutil.copytree(ROOT / "examples" / folder, Path(tmp) / folder)
                _cli(None, db, ["ingest", str(Path(tmp) / folder), "-s", source, "-q"])
        for side in sides.values():  # warm the model cache and the page cache
            for args in searches.values():
                _cli(side, db, args)
        times: dict[str, dict[str, list[float]]] = {s: {k: [] for k in searches} for s in sides}
        for _ in range(opts.runs):
            for name, args in searches.items():
                for side, src in sides.items():
                    times[side][name].append(_cli(src, db, args))
    result: dict[str, Any] = {
        "db": str(opts.db) if opts.db else "examples",
        "runs": opts.runs,
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        **{side: {k: _summary(v) for k, v in by.items()} for side, by in times.items()},
    }
    print(json.dumps(result, indent=2))
    if opts.json:
        opts.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
