"""API entries of the Python documentation: does a question about one function, class
or method find its page, and its entry?

``benchmarks/data/python_docs_objects.jsonl`` holds 35 questions about single entries of
the library reference (``os.path.ismount``, ``functools.partial``,
``collections.Counter.most_common``), some naming the entry, most describing what it
does, each with its page and the entry's id; written before Sphinx entries became
sections of their own (``ingest/html.py``) and used by nothing else.

Reported per mode: page hit@1 and hit@5 (the page of the top hit, of the first five),
and entry@1 / entry@5: a hit whose citation points at the entry itself
(``…/library/os.path.html#os.path.ismount``). Searches an index built by
``python_docs_verdicts.py`` (``benchmarks/results/tmp/pydocs-{mode}.db``), or ``--db``;
only ``KnowledgeBase.open/search`` is used, so an earlier version can be measured
(``PYTHONPATH=other/src``).

    python benchmarks/python_docs_objects.py [--modes keyword,hybrid] [--db-prefix PATH]
        [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from groundkb import KnowledgeBase, Settings

HERE = Path(__file__).resolve().parent
QUESTIONS = HERE / "data" / "python_docs_objects.jsonl"


def score(kb: KnowledgeBase, questions: list[dict[str, Any]]) -> dict[str, Any]:
    page1, page5, entry1, entry5 = [], [], [], []
    rows = []
    for q in questions:
        r = kb.search(q["query"], limit=5)
        pages = [urlsplit(h.doc_id).path.lstrip("/") for h in r.hits]
        entries = [urlsplit(h.citation).fragment for h in r.hits]
        relevant = set(q["relevant"])
        page1.append(float(bool(pages) and pages[0] in relevant))
        page5.append(float(bool(relevant & set(pages))))
        entry1.append(float(bool(entries) and entries[0] == q["object"]))
        entry5.append(float(q["object"] in entries))
        rows.append({"id": q["id"], "query": q["query"], "verdict": r.verdict.kind,
                     "top": [h.citation for h in r.hits[:3]]})  # fmt: skip
    return {
        "questions": len(questions),
        "page@1": round(statistics.fmean(page1), 3),
        "page@5": round(statistics.fmean(page5), 3),
        "entry@1": round(statistics.fmean(entry1), 3),
        "entry@5": round(statistics.fmean(entry5), 3),
        "rows": rows,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--modes", default="keyword,hybrid")
    ap.add_argument(
        "--db-prefix",
        type=Path,
        default=HERE / "results" / "tmp" / "pydocs",
        help="the indexes are PREFIX-keyword.db and PREFIX-hybrid.db",
    )
    ap.add_argument("--json", type=Path, default=HERE / "results" / "python_docs_objects.json")
    args = ap.parse_args()
    questions = [json.loads(line) for line in QUESTIONS.read_text(encoding="utf-8").splitlines()]
    out: dict[str, Any] = {}
    for mode in args.modes.split(","):
        db = Path(f"{args.db_prefix}-{mode}.db")
        if not db.exists():
            raise SystemExit(f"no index {db}: run benchmarks/python_docs_verdicts.py first")
        settings = Settings(db=str(db), retrieval=mode, embedder="minilm", fallback_p95_ms=1e12)
        with KnowledgeBase.open(settings=settings) as kb:
            out[mode] = score(kb, questions)
        s = out[mode]
        print(
            f"{mode:8} page@1 {s['page@1']:.3f}  page@5 {s['page@5']:.3f}  "
            f"entry@1 {s['entry@1']:.3f}  entry@5 {s['entry@5']:.3f}"
        )
    args.json.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
