"""Verdict quality on the development sets, and ranking (nDCG@10) on the same indexes.

For the Orbit verdict set and the Kubernetes/Twilio API questions: verdict accuracy,
confusion matrix, false answers on questions that have none, the share of answerable
questions answered with a relevant top hit, and the precision of the answers. For the
retrieval sets (SciFact, TorchHub, TF Hub, tldr descriptions, their held-out twin
written by ``tldr_heldout.py``, tldr pages): the share answered, the precision of those
answers, hit@1 and nDCG@10. Keyword and hybrid mode.

Only ``KnowledgeBase.open/ingest/search`` is used, so the same script measures an
earlier version (``PYTHONPATH=other/src``) on the same indexes for a before/after.
Indexes are those of ``fit_verdict.py`` (``benchmarks/results/tmp/verdict-*.db``),
built there once.

    python benchmarks/verdicts.py [--modes keyword,hybrid] [--sets orbit,api,...]
        [--ask WORDS] [--ask-end WORDS] [--before WORDS] [--british] [--gerund]
        [--out FILE]

``--ask "is there a doc on"`` asks every question of the two verdict sets (Orbit, API)
in those words (questions that open with a question word are asked as they are; the
retrieval sets are not changed), ``--ask-end "with the CLI"`` ends every question so:
the verdicts must not change. In both, ``{product}`` stands for the product a question
is about ("in {product}, how do I" → "in Orbit, how do I", "in Twilio, how do I").
``--british`` asks them in British spelling ("organisation", "cancelled"), ``--gerund``
as the gerund of the verb a request opens with ("How do I archive a project?" →
"archiving a project"): the verdicts must not change either.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from groundkb import KnowledgeBase, Settings

sys.path.insert(0, str(Path(__file__).resolve().parent))
import api_questions
from api_questions import asked, parse_overrides

HERE = Path(__file__).resolve().parent
SHARED = next(
    (p / "shared" for p in HERE.parents if (p / "shared" / "eval").is_dir()),
    HERE.parent.parent / "shared",
)  # the checkout's sibling folder (a worktree may sit deeper)
EVAL = SHARED / "eval"
CACHE = HERE / "results" / "tmp"


def verdict_questions(name: str) -> Iterator[tuple[str, str, set[str], str]]:
    """(query as --ask and --ask-end word it, expect, relevant ids, kind); expect
    'unanswerable' for API questions without an operation (clarify and no_match are both
    right there)."""
    if name == "orbit":
        for line in (EVAL / "verdicts_dev" / "queries.jsonl").read_text().splitlines():
            q = json.loads(line)
            yield asked(q["query"], "Orbit"), q["expect"], set(q["relevant"]), q.get("kind", "")
        return
    for file in sorted((EVAL / "api_questions_dev").glob("*.jsonl")):
        for line in file.read_text().splitlines():
            q = json.loads(line)
            spec = (q.get("spec") or q["api"]).removesuffix(".json")
            ids = {f"{spec}:{op}" for op in q["relevant"] + q.get("acceptable", [])}
            ids |= {f"{o['spec'].removesuffix('.json')}:{o['op']}"
                    for o in q.get("acceptable_other_spec", [])}  # fmt: skip
            query = asked(q["query"], api_questions.product_of(spec))
            yield query, "answer" if q["relevant"] else "unanswerable", ids, q["kind"]


def beir_questions(folder: str | Path) -> Iterator[tuple[str, dict[str, int]]]:
    root = EVAL / folder
    qrels: dict[str, dict[str, int]] = {}
    for line in (root / "qrels.tsv").read_text().splitlines()[1:]:
        qid, doc, score = line.split("\t")[:3]
        qrels.setdefault(qid, {})[doc] = int(float(score))
    for line in (root / "queries.jsonl").read_text().splitlines():
        q = json.loads(line)
        if q["id"] in qrels:
            yield q["text"], qrels[q["id"]]


def ndcg10(ranked: list[str], rels: dict[str, int]) -> float:
    dcg = sum(rels.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:10]))
    ideal = sorted((r for r in rels.values() if r > 0), reverse=True)[:10]
    idcg = sum(r / math.log2(i + 2) for i, r in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


#: Setting overrides (``--set KEY=VALUE``) for every search of a run.
OVERRIDES: dict[str, str] = {}


def open_kb(name: str, mode: str, per_doc: int) -> KnowledgeBase:
    db = CACHE / f"verdict-{INDEX.get(name, name)}.db"
    if not db.exists():
        raise SystemExit(f"no index {db}: run benchmarks/fit_verdict.py once to build it")
    settings = Settings(
        db=str(db),
        retrieval=mode,
        embedder="minilm",
        max_chunks_per_doc=per_doc,
        fallback_p95_ms=1e12,
    )
    return KnowledgeBase.open(settings=settings.replace(**OVERRIDES) if OVERRIDES else settings)


def run_verdict_set(name: str, mode: str) -> dict[str, Any]:
    right = answered = answered_right = none = false = answerable = 0
    confusion: dict[str, dict[str, int]] = {}
    with open_kb(name, mode, 2 if name == "orbit" else 1) as kb:
        for query, expect, relevant, _kind in verdict_questions(name):
            r = kb.search(query, limit=5)
            if r.notice:
                raise SystemExit(f"search fell back: {r.notice}")
            v = r.verdict.kind
            top_ok = bool(r.hits) and r.hits[0].doc_id in relevant
            ok = v != "answer" if expect == "unanswerable" else (
                v == expect and (v != "answer" or top_ok)
            )  # fmt: skip
            right += ok
            confusion.setdefault(expect, {}).setdefault(v, 0)
            confusion[expect][v] += 1
            answered += v == "answer"
            if expect == "answer":
                answerable += 1
                answered_right += v == "answer" and top_ok
            if expect in ("no_match", "unanswerable"):
                none += 1
                false += v == "answer"
    n = sum(sum(c.values()) for c in confusion.values())
    return {
        "questions": n,
        "accuracy": round(right / n, 4),
        "false_answers": round(false / none, 4) if none else 0.0,
        "answered_right": round(answered_right / answerable, 4),
        "precision": round(answered_right / answered, 4) if answered else None,
        "answered": round(answered / n, 4),
        "confusion": confusion,
    }


def run_beir(name: str, folder: str | Path, mode: str) -> dict[str, Any]:
    pages = name == "tldr_pages"
    ndcg: list[float] = []
    hit1 = answered = answered_right = 0
    with open_kb(name, mode, 1) as kb:
        for query, rels in beir_questions(folder):
            r = kb.search(query[:2000], limit=20 if pages else 100)
            if r.notice:
                raise SystemExit(f"search fell back: {r.notice}")
            ranked: list[str] = []
            for h in r.hits:
                key = h.doc_id.rsplit("/", 1)[-1] if pages else h.doc_id
                if key not in ranked:
                    ranked.append(key)
            ndcg.append(ndcg10(ranked, rels))
            top_ok = bool(ranked) and rels.get(ranked[0], 0) > 0
            hit1 += top_ok
            if r.verdict.kind == "answer":
                answered += 1
                answered_right += top_ok
    n = len(ndcg)
    return {
        "questions": n,
        "ndcg@10": round(sum(ndcg) / n, 4),
        "hit@1": round(hit1 / n, 4),
        "answered": round(answered / n, 4),
        "precision": round(answered_right / answered, 4) if answered else None,
    }


BEIR: dict[str, str | Path] = {
    "scifact": "beir_scifact",
    "torchhub": "gorilla_torchhub",
    "tfhub": "gorilla_tensorflowhub",
    "tldr": "tldr_docprompting_desc_dev",
    # held out: questions about other pages, asked of the same index (tldr_heldout.py)
    "tldr_heldout": HERE / "data" / "tldr_heldout",
    "tldr_pages": "tldr_docprompting_desc_dev",
}
INDEX = {"tldr_heldout": "tldr"}  # sets searched on another set's index


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--modes", default="keyword,hybrid")
    ap.add_argument("--sets", default="", help="comma-separated subset")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "verdicts.json")
    ap.add_argument("--set", action="append", default=[], help="setting override KEY=VALUE")
    ap.add_argument(
        "--ask", default="", help="words to put before every question of the verdict sets"
    )
    ap.add_argument(
        "--ask-end", default="", help="words to put after every question of the verdict sets"
    )
    ap.add_argument(
        "--before",
        default="",
        help="a sentence to put before every question, whatever it opens with",
    )
    ap.add_argument(
        "--british",
        action="store_true",
        help="ask the verdict sets in British spelling (organisation, cancelled, centre)",
    )
    ap.add_argument(
        "--gerund",
        action="store_true",
        help="ask the verdict sets' requests as their gerund ('archiving a project')",
    )
    args = ap.parse_args()
    OVERRIDES.update(parse_overrides(args.set))
    api_questions.BRITISH = args.british
    api_questions.GERUND = args.gerund
    api_questions.ASK = args.ask.strip()
    api_questions.ASK_END = args.ask_end.strip()
    api_questions.BEFORE = args.before.strip()
    if (
        OVERRIDES or args.ask or args.ask_end or args.before or args.british or args.gerund
    ) and args.out == HERE / "results" / "verdicts.json":
        raise SystemExit("--set, --ask: name an --out, the report keeps the default settings")
    wanted = {s for s in args.sets.split(",") if s}
    out: dict[str, Any] = {}
    for mode in args.modes.split(","):
        out[mode] = {}
        for name in ("orbit", "api", *BEIR):
            if wanted and name not in wanted:
                continue
            started = time.perf_counter()
            res = run_beir(name, BEIR[name], mode) if name in BEIR else run_verdict_set(name, mode)
            res["seconds"] = round(time.perf_counter() - started, 1)
            out[mode][name] = res
            print(mode, name, {k: v for k, v in res.items() if k != "confusion"}, flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
