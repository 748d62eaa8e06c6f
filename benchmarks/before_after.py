"""Every development and held-out evaluation, for this code and another, in one run.

Runs, for each code base in turn (this checkout's ``src`` and ``--base``, the ``src``
folder of another checkout, e.g. ``git worktree add /tmp/base HEAD~3``):

- ``verdicts.py``: the Orbit verdict set, the Kubernetes/Twilio API questions, the
  BEIR sets and the held-out tldr questions (``tldr_heldout.py``), keyword and hybrid
  (verdicts and nDCG@10);
- ``api_questions.py``: the held-out API questions, all eleven batches, each API alone
  and all eight in one index;
- ``python_docs_verdicts.py``: the Python docs and Git's manual (each skipped with a
  message when its Debian package is missing) and Flask's docs (vendored; an older code
  base that cannot read reStructuredText searches the index this code built).

Every script reuses the indexes it built before (``benchmarks/results/tmp``), so both
code bases search the same files; give ``--base`` code that reads this schema. The
results go to ``--out``/``before`` and ``--out``/``after``; then one table compares them,
figure by figure (``a → b`` where they differ), with the questions whose verdict or rank
changed.

    python benchmarks/before_after.py --base /tmp/base/src --out /tmp/stop

``--only verdicts,api1`` runs a subset (api2 … api11: the second to eleventh batches;
the fourth to eleventh ask only the six held-out APIs, the seventh to eleventh for
operations the APIs do not have); both codes search one index per batch, so a stop that
changes the OpenAPI loader measures the API batches with ``api_questions.py`` instead,
each code on its own index (``api_questions.py`` refuses an index another loader
version built);
``--compare`` only prints the table of an earlier run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

RUNS: dict[str, list[str]] = {
    "verdicts": ["verdicts.py", "--out", "{out}"],
    "api1": ["api_questions.py", "--label", "base", "--out", "{out}"],
    "api2": [
        "api_questions.py",
        "--label",
        "base",
        "--questions",
        str(HERE / "data" / "api_questions_2"),
        "--out",
        "{out}",
    ],
    "api3": [
        "api_questions.py",
        "--label",
        "base",
        "--questions",
        str(HERE / "data" / "api_questions_3"),
        "--out",
        "{out}",
    ],
    **{
        f"api{n}": [
            "api_questions.py",
            "--label",
            "base",
            "--questions",
            str(HERE / "data" / f"api_questions_{n}"),
            "--apis",
            "stripe,github,spotify,slack,openai,digitalocean",
            "--out",
            "{out}",
        ]
        for n in (4, 5, 6, 7, 8, 9, 10, 11)
    },
    "py": ["python_docs_verdicts.py", "--site", "python", "--json", "{out}"],
    "git": ["python_docs_verdicts.py", "--site", "git", "--json", "{out}"],
    "flask": ["python_docs_verdicts.py", "--site", "flask", "--json", "{out}"],
}
VERDICT_KEYS = ("ndcg@10", "hit@1", "accuracy", "false_answers", "answered_right", "answered",
                "precision")  # fmt: skip
API_KEYS = ("hit@1", "hit@5", "mrr@10", "answered_right", "false_answers")
DOCS_KEYS = ("accuracy", "false_answers", "answered_right", "precision", "hit@1", "hit@5")


def run(name: str, src: Path, out: Path) -> float:
    """Run evaluation ``name`` with the code in ``src``; its JSON goes to ``out``."""
    args = [a.replace("{out}", str(out)) for a in RUNS[name]]
    env = {**os.environ, "PYTHONPATH": str(src.resolve())}
    started = time.monotonic()
    with (out.with_suffix(".log")).open("w", encoding="utf-8") as log:
        done = subprocess.run(
            [sys.executable, str(HERE / args[0]), *args[1:]],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            check=False,
        )
    if done.returncode != 0:
        raise SystemExit(f"{name} failed with {src}: see {out.with_suffix('.log')}")
    return time.monotonic() - started


def _change(x: Any, y: Any) -> str:
    return f"{x}" if x == y else f"{x} → {y}"


def _load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def compare(before: Path, after: Path) -> Iterator[str]:
    """The comparison, as Markdown lines."""
    b, a = _load(before / "verdicts.json"), _load(after / "verdicts.json")
    if b and a:
        yield "## verdicts.py (development sets, and the held-out tldr questions)"
        yield ""
        for mode in b:
            for name, x in b[mode].items():
                y = a.get(mode, {}).get(name, {})
                keys = [k for k in VERDICT_KEYS if k in x]
                parts = "; ".join(f"{k} {_change(x[k], y.get(k))}" for k in keys)
                yield f"- {mode} {name}: {parts}"
        yield ""
    batches = [(f"api{n}", f"batch {n}") for n in range(1, 10)]
    for file, title in ((f, f"held-out API {t}") for f, t in batches):
        b, a = _load(before / f"{file}.json"), _load(after / f"{file}.json")
        if not (b and a):
            continue
        yield f"## {title} and the development APIs (api_questions.py)"
        yield ""
        for cond, modes in b["summary"].items():
            for mode, s in modes.items():
                for group in ("held_out", "dev"):
                    x, y = s.get(group), a["summary"][cond][mode].get(group)
                    if x and y:
                        parts = "; ".join(f"{k} {_change(x.get(k), y.get(k))}" for k in API_KEYS)
                        yield f"- {cond} {mode} {group}: {parts}"
        moved = []
        for cond, modes in b["rows"].items():
            for mode, rows in modes.items():
                after_rows = {r["id"]: r for r in a["rows"][cond][mode]}
                for r in rows:
                    q = after_rows.get(r["id"])
                    if q and (q["rank"], q["verdict"]) != (r["rank"], r["verdict"]):
                        rank = _change(r["rank"], q["rank"])
                        verdict = _change(r["verdict"], q["verdict"])
                        moved.append(
                            f'  - {cond} {mode} {r["id"]} "{r["query"]}": rank {rank}, {verdict}'
                        )
        yield f"- questions whose rank or verdict changed: {len(moved)}"
        yield from moved
        yield ""
    for file, title in (("py", "Python docs"), ("git", "Git's manual"), ("flask", "Flask's docs")):
        b, a = _load(before / f"{file}.json"), _load(after / f"{file}.json")
        if not (b and a):
            continue
        yield f"## {title} (python_docs_verdicts.py)"
        yield ""
        for mode, x in b.items():
            y = a[mode]
            yield f"- {mode}: " + "; ".join(f"{k} {_change(x[k], y[k])}" for k in DOCS_KEYS)
            after_rows = {r["id"]: r for r in y["rows"]}
            for r in x["rows"]:
                q = after_rows[r["id"]]
                if (q["verdict"], q["top"][:1]) != (r["verdict"], r["top"][:1]):
                    yield (
                        f'  - {r["id"]} "{r["query"]}": {_change(r["verdict"], q["verdict"])}, '
                        f"top {_change(r['top'][:1], q['top'][:1])}"
                    )
        yield ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--base", type=Path, help="the src folder of the code to compare with")
    ap.add_argument("--out", type=Path, required=True, help="folder for both runs' results")
    ap.add_argument("--only", default=",".join(RUNS), help="comma-separated: " + ",".join(RUNS))
    ap.add_argument("--compare", action="store_true", help="only compare an earlier run")
    args = ap.parse_args()
    before, after = args.out / "before", args.out / "after"
    if not args.compare:
        if args.base is None or not (args.base / "groundkb").is_dir():
            ap.error("--base must be a src folder holding the groundkb package")
        wanted = [n for n in args.only.split(",") if n]
        unknown = sorted(set(wanted) - set(RUNS))
        if unknown:
            ap.error(f"unknown evaluations: {', '.join(unknown)}")
        before.mkdir(parents=True, exist_ok=True)
        after.mkdir(parents=True, exist_ok=True)
        for name in wanted:
            for label, src, folder in (
                ("before", args.base, before),
                ("after", ROOT / "src", after),
            ):
                seconds = run(name, src, folder / f"{name}.json")
                print(f"{name} {label}: {seconds:.0f} s", file=sys.stderr, flush=True)
    lines = list(compare(before, after))
    text = "\n".join(lines) + "\n"
    (args.out / "compare.md").write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
