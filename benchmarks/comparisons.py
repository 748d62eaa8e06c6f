"""Questions that compare two things: does a search find each of them?

``benchmarks/data/comparison_questions.jsonl`` holds 43 questions that compare two
things ("what's the difference between git merge and git rebase", "compare json with
pickle", "how does git switch differ from git checkout?", "git stash compared to git
commit") about Git's manual, Flask's documentation, Python's and the Orbit development
set, each with the pages that answer for each thing compared, in three batches: 20
written before the comparison rule was run on them (batch 1), 12 after its first
corrections (batch 2), 11 before the rule was last changed (batch 3; see
docs/benchmarks.md for which change each batch saw). Reported per site and mode: how many
questions have a page of every thing among the first two hits and among the first
three, and the verdicts. Indexes are those of ``python_docs_verdicts.py`` (run it once
per site) and ``fit_verdict.py`` (Orbit). Only ``KnowledgeBase.open/search`` is used, so
an earlier version can be measured on the same indexes (``PYTHONPATH=other/src``).

    python benchmarks/comparisons.py [--modes keyword,hybrid] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from groundkb import KnowledgeBase, Settings

HERE = Path(__file__).resolve().parent
CACHE = HERE / "results" / "tmp"
QUESTIONS = HERE / "data" / "comparison_questions.jsonl"
INDEX = {"git": "gitdocs", "flask": "flaskdocs", "python": "pydocs"}


def index(site: str, mode: str) -> tuple[Path, int]:
    """The index file of ``site`` for ``mode``, and the chunks kept per document."""
    if site == "orbit":
        return CACHE / "verdict-orbit.db", 2
    return CACHE / f"{INDEX[site]}-{mode}.db", 2


def page(doc_id: str) -> str:
    return urlsplit(doc_id).path.lstrip("/") if "://" in doc_id else doc_id


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--modes", default="keyword,hybrid")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    questions = [json.loads(line) for line in QUESTIONS.read_text(encoding="utf-8").splitlines()]
    out: dict[str, Any] = {}
    for mode in args.modes.split(","):
        rows = []
        for site in dict.fromkeys(q["site"] for q in questions):
            db, per_doc = index(site, mode)
            if not db.exists():
                print(f"skipped {site} {mode}: no index {db}", file=sys.stderr)
                continue
            embedder = "none" if mode == "keyword" and site != "orbit" else "minilm"
            settings = Settings(
                db=str(db), embedder=embedder, retrieval=mode, max_chunks_per_doc=per_doc,
                fallback_p95_ms=1e12,
            )  # fmt: skip
            with KnowledgeBase.open(settings=settings, create=False) as kb:
                for q in (q for q in questions if q["site"] == site):
                    r = kb.search(q["query"], limit=5)
                    pages = list(dict.fromkeys(page(h.doc_id) for h in r.hits))
                    found = [
                        min((i for i, p in enumerate(pages) if p in set(thing)), default=99)
                        for thing in q["things"]
                    ]
                    rows.append(
                        {
                            "id": q["id"],
                            "site": site,
                            "query": q["query"],
                            "verdict": f"{r.verdict.kind} ({r.verdict.reason})",
                            "first_two": max(found) < 2 and len(set(found)) == len(found),
                            "first_three": max(found) < 3,
                            "pages": pages[:3],
                        }
                    )
        batch = {q["id"]: q.get("batch", 1) for q in questions}
        summary = {
            "questions": len(rows),
            "every_thing_in_first_two": sum(r["first_two"] for r in rows),
            "every_thing_in_first_three": sum(r["first_three"] for r in rows),
            "verdicts": dict(Counter(r["verdict"] for r in rows).most_common()),
            "by_batch": {
                b: {
                    "questions": sum(batch[r["id"]] == b for r in rows),
                    "every_thing_in_first_two": sum(
                        r["first_two"] for r in rows if batch[r["id"]] == b
                    ),
                    "every_thing_in_first_three": sum(
                        r["first_three"] for r in rows if batch[r["id"]] == b
                    ),
                }
                for b in sorted(set(batch.values()))
            },
        }
        out[mode] = {"summary": summary, "rows": rows}
        print(mode, json.dumps(summary))
        for r in rows:
            mark = "✓" if r["first_two"] else ("~" if r["first_three"] else "✗")
            print(f"  {mark} {r['id']:10} {r['verdict']:28} {r['query'][:58]!r} {r['pages']}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
