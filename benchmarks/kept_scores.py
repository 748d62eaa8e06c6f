"""Kept candidate scores against FTS5's candidate query: the same answers.

Every question of a set is searched twice in one warmed process (``KnowledgeBase.warm``,
as ``groundkb serve`` does): once with the keyword candidates from FTS5's candidate
query, once from the scores kept in memory (``store/sqlite_kept.py``), a question asked
for the first time reading its units. Reported per index: how many questions differ in
their hits (chunk ids and scores to 9 decimals) or verdict (there should be none), and
the search p50 of each way, the kept one on first asking and on asking again.

    python benchmarks/kept_scores.py --db INDEX --questions FILE.jsonl [--db ... --questions ...]

``FILE.jsonl`` holds one question a line as ``text``, ``query`` or ``question``; an index
of any kind (keyword or hybrid) is searched keyword-only.
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path
from typing import Any

from groundkb import KnowledgeBase, Settings


def questions_of(path: Path, most: int) -> list[str]:
    out: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            text = row.get("text") or row.get("query") or row.get("question")
            if text:
                out.append(str(text))
    return out[:most] if most else out


def compare(db: Path, questions: list[str]) -> dict[str, Any]:
    settings = Settings(embedder="none", retrieval="keyword", query_log="off", fallback_p95_ms=1e12)
    with KnowledgeBase.open(db, settings) as kb:
        kb.warm()
        store: Any = kb.store
        kept_scores = store._kept_scores

        def answers(kept: bool) -> list[Any]:
            store._kept_scores = kept_scores if kept else (lambda: None)
            out = []
            for q in questions:
                r = kb.search(q, limit=10)
                out.append(([(h.chunk_id, round(h.score, 9)) for h in r.hits], str(r.verdict)))
            return out

        from_fts5 = answers(False)
        kept_first = answers(True)
        kept_again = answers(True)
        units = store._kept.reads if store._kept is not None else 0
        del store._kept_scores
    return {
        "db": str(db),
        "questions": len(questions),
        "units_read": units,
        "differ_first": sum(1 for a, b in zip(from_fts5, kept_first, strict=True) if a != b),
        "differ_again": sum(1 for a, b in zip(from_fts5, kept_again, strict=True) if a != b),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", type=Path, action="append", required=True)
    ap.add_argument("--questions", type=Path, action="append", required=True)
    ap.add_argument("--most", type=int, default=0, help="at most this many questions a set")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if len(args.db) != len(args.questions):
        ap.error("give one --questions file per --db")
    logging.disable(logging.WARNING)
    rows = [
        compare(d, questions_of(q, args.most)) for d, q in zip(args.db, args.questions, strict=True)
    ]
    for r in rows:
        print(json.dumps(r))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
