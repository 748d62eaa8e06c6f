"""Endpoint questions over real OpenAPI specs: hit@1 and hit@5 of keyword search.

Ingests the Kubernetes spec and the Twilio specs from ``../shared/corpora/openapi/``
into a throwaway knowledge base, asks every question with
``kb.search(question, limit=5)``, and counts a hit when a result document's
``metadata`` method and path (and spec, when the question names one) match an expected
operation. Two sets of questions, reported apart: ``endpoint_questions.yaml`` (the
"dev" set, whose misses the API ranking was developed on) and
``endpoint_questions_heldout.yaml`` (written before that work and never tuned on).
Also times the ingest of the GitHub spec (13 MB, 1,223 operations) into a second
throwaway knowledge base.

    python benchmarks/api_questions.py [--distractors] [--verbose]

``--distractors`` also ingests the Stripe and GitHub specs into the searched knowledge
base. Prints a table and writes ``benchmarks/results/api_questions.json`` (or
``api_questions_distractors.json``).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from groundkb import KnowledgeBase, Settings

HERE = Path(__file__).resolve().parent
CORPORA = HERE.parent.parent / "shared" / "corpora" / "openapi"
QUESTIONS = {
    "dev": HERE / "data" / "endpoint_questions.yaml",
    "held_out": HERE / "data" / "endpoint_questions_heldout.yaml",
}
RESULTS = HERE / "results" / "api_questions.json"


@dataclass(frozen=True)
class Expected:
    method: str
    path: str
    spec: str = ""

    @classmethod
    def parse(cls, text: str) -> Expected:
        head, _, path = text.strip().partition(" ")
        spec, _, method = head.rpartition(":")
        return cls(method.upper(), path.strip(), spec)

    def matches(self, meta: dict[str, Any]) -> bool:
        return (
            str(meta.get("method", "")).upper() == self.method
            and meta.get("path") == self.path
            and (not self.spec or meta.get("spec") == self.spec)
        )


def load_questions(path: Path) -> list[dict[str, Any]]:
    data = yaml.safe_load(path.read_text())
    out = []
    for q in data["questions"]:
        out.append({**q, "expected": [Expected.parse(e) for e in q["expected"]]})
    return out


def ingest(kb: KnowledgeBase, path: Path, source: str) -> dict[str, Any]:
    started = time.perf_counter()
    report = kb.ingest(path, source=source)
    seconds = time.perf_counter() - started
    if report.errors:
        for err in report.errors[:5]:
            print(f"  {err}", file=sys.stderr)
    return {
        "source": source,
        "documents": report.inserted + report.updated + report.unchanged,
        "chunks": report.chunks_written,
        "errors": len(report.errors),
        "seconds": round(seconds, 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--distractors", action="store_true", help="also ingest Stripe and GitHub")
    parser.add_argument("--verbose", action="store_true", help="print every question's hits")
    args = parser.parse_args()
    if not CORPORA.is_dir():
        print(f"no corpora at {CORPORA}", file=sys.stderr)
        return 2
    question_sets = {name: load_questions(path) for name, path in QUESTIONS.items()}
    with tempfile.TemporaryDirectory() as tmp:
        keyword_only = Settings(embedder="none", retrieval="keyword")
        with KnowledgeBase.open(Path(tmp) / "github.db", keyword_only) as kb:
            github = ingest(kb, CORPORA / "github.json", "github")
        print(f"GitHub spec: {github['documents']} operations in {github['seconds']:.2f} s")
        with KnowledgeBase.open(Path(tmp) / "api.db", Settings(retrieval="hybrid")) as kb:
            ingests = [
                ingest(kb, CORPORA / "kubernetes.json", "kubernetes"),
                ingest(kb, CORPORA / "twilio", "twilio"),
            ]
            if args.distractors:
                ingests.append(ingest(kb, CORPORA / "stripe.json", "stripe"))
                ingests.append(ingest(kb, CORPORA / "github.json", "github"))
            known = set()
            for doc in kb.list_documents(type="api", limit=100_000):
                full = kb.get(doc.id)
                known.add(
                    (
                        full.metadata.get("spec"),
                        full.metadata.get("method"),
                        full.metadata.get("path"),
                    )
                )
            mode_rows: dict[str, dict[str, list[dict[str, Any]]]] = {}
            for mode in ("keyword", "hybrid"):
                with KnowledgeBase.open(kb.settings.db, kb.settings.replace(retrieval=mode)) as mkb:
                    mode_rows[mode] = {
                        name: ask(mkb, questions, known)
                        for name, questions in question_sets.items()
                    }
    summary: dict[str, Any] = {}
    for mode, sets in mode_rows.items():
        summary[mode] = {
            name: summarize(f"{mode}, {name}", rows, args.verbose) for name, rows in sets.items()
        }
    out = RESULTS.with_name("api_questions_distractors.json") if args.distractors else RESULTS
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "machine": f"{platform.machine()} python {platform.python_version()}",
                "distractors": args.distractors,
                "github_ingest": github,
                "ingest": ingests,
                "summary": summary,
                "questions": mode_rows,
            },
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )
    print(f"\nwrote {out.relative_to(HERE.parent)}")
    return 0


def ask(
    kb: KnowledgeBase, questions: list[dict[str, Any]], known: set[Any]
) -> list[dict[str, Any]]:
    rows = []
    for q in questions:
        for e in q["expected"]:
            if not any(m == e.method and p == e.path and (not e.spec or s == e.spec)
                       for s, m, p in known):  # fmt: skip
                print(f"warning: {q['id']}: {e} is not in the specs", file=sys.stderr)
        started = time.perf_counter()
        result = kb.search(q["question"], limit=5)
        took = (time.perf_counter() - started) * 1000
        metas = [dict(kb.get(h.doc_id).metadata) for h in result.hits]
        ranks = [i for i, m in enumerate(metas, 1) if any(e.matches(m) for e in q["expected"])]
        rows.append(
            {
                "id": q["id"],
                "question": q["question"],
                "rank": ranks[0] if ranks else None,
                "verdict": result.verdict.kind,
                "mode": result.mode,
                "top": [f"{m.get('method')} {m.get('path')}" for m in metas],
                "ms": round(took, 1),
            }
        )
    return rows


def summarize(mode: str, rows: list[dict[str, Any]], verbose: bool) -> dict[str, Any]:
    groups: dict[str, list[dict[str, Any]]] = {"kubernetes": [], "twilio": []}
    for row in rows:
        groups["kubernetes" if row["id"].startswith("k8s") else "twilio"].append(row)
    groups["all"] = rows
    summary = {}
    print(f"\n{mode}")
    print(f"{'set':<12}{'n':>5}{'hit@1':>9}{'hit@5':>9}{'answer':>9}")
    for name, group in groups.items():
        n = len(group)
        h1 = sum(1 for r in group if r["rank"] == 1) / n
        h5 = sum(1 for r in group if r["rank"] is not None) / n
        answered = sum(1 for r in group if r["verdict"] == "answer") / n
        summary[name] = {
            "n": n,
            "hit@1": round(h1, 3),
            "hit@5": round(h5, 3),
            "answer": round(answered, 3),
        }
        print(f"{name:<12}{n:>5}{h1:>9.3f}{h5:>9.3f}{answered:>9.3f}")
    if verbose:
        for row in rows:
            mark = "-" if row["rank"] is None else str(row["rank"])
            print(f"[{mark}] {row['id']}: {row['question']}")
            for top in row["top"]:
                print(f"      {top}")
    return summary


if __name__ == "__main__":
    sys.exit(main())
