"""Verdict-set evaluation: is the decision (answer / clarify / no_match) right?

A verdict set is a folder with the sources to ingest and one or more ``*.jsonl`` files
of labelled questions. Two line formats are read:

- ``{"id", "query", "expect", "relevant", "kind"?}``: ``expect`` is ``answer``,
  ``clarify`` or ``no_match``; ``relevant`` lists the document ids that answer (or the
  ids of every competing meaning, or nothing).
- API questions ``{"id", "query", "relevant", "acceptable"?, "spec"?, "kind"?}``,
  ``relevant`` as ``METHOD /path`` operations of the spec file ``spec``: answerable when
  ``relevant`` is not empty, else unanswerable (clarify and no_match are both right).

A question is right when its verdict equals ``expect`` and, for an answer, the top hit
is relevant. Sources: ``[[sources]]`` of a ``groundkb.toml`` in the folder, or the
``sources`` argument (name → path), or else every sub-folder as a source named after it.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .api import KnowledgeBase
from .errors import InvalidInput
from .evaluate import NO_FALLBACK_MS, percentile
from .search.engine import MAX_QUERY_CHARS
from .settings import Settings, load_settings

KINDS = ("answer", "clarify", "no_match")


@dataclass(frozen=True, slots=True)
class Question:
    id: str
    query: str
    expect: str  # answer, clarify, no_match; "unanswerable" for API questions with none
    relevant: frozenset[str]
    kind: str = ""


@dataclass(frozen=True, slots=True)
class VerdictReport:
    dataset: str
    mode: str
    questions: int
    accuracy: float
    # expected kind → verdict kind → count
    confusion: Mapping[str, Mapping[str, int]]
    false_answer_rate: float  # answers on questions that have none (no_match, unanswerable)
    answered_right_rate: float  # answerable questions answered with a relevant top hit
    answer_precision: float  # answers whose top hit is relevant
    answered: float  # share of all questions answered
    hit_at_1: float  # answerable questions
    hit_at_5: float
    latency_p50_ms: float
    by_kind: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    wrong: tuple[Mapping[str, Any], ...] = ()


def read_questions(folder: Path) -> list[Question]:
    files = [folder / "queries.jsonl"] if (folder / "queries.jsonl").is_file() else []
    files = files or sorted(folder.glob("*.jsonl"))
    if not files:
        raise InvalidInput(f"{folder} has no queries.jsonl (or other *.jsonl) file")
    out: list[Question] = []
    for path in files:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                out.append(_question(rec))
            except (ValueError, KeyError, TypeError) as exc:
                raise InvalidInput(f"{path}:{n}: not a verdict-set line ({exc})") from None
    return out


def _question(rec: Mapping[str, Any]) -> Question:
    relevant = [str(r) for r in rec.get("relevant", [])]
    if "expect" in rec:
        if rec["expect"] not in KINDS:
            raise ValueError(f"expect must be one of {', '.join(KINDS)}")
        return Question(
            str(rec["id"]),
            str(rec["query"]),
            rec["expect"],
            frozenset(relevant),
            str(rec.get("kind", "")),
        )
    ops = relevant + [str(r) for r in rec.get("acceptable", [])]
    spec = str(rec.get("spec") or rec.get("api") or "")
    ids = {_op_id(spec, op) for op in ops}
    ids |= {_op_id(o["spec"], o["op"]) for o in rec.get("acceptable_other_spec", [])}
    expect = "answer" if relevant else "unanswerable"
    return Question(
        str(rec["id"]), str(rec["query"]), expect, frozenset(ids), str(rec.get("kind", ""))
    )


def _op_id(spec: str, op: str) -> str:
    """``("twilio_proxy_v1.json", "POST /v1/Services")`` → the operation's document id."""
    stem = spec.rsplit("/", 1)[-1].removesuffix(".json").removesuffix(".yaml")
    return f"{stem}:{op}" if stem else op


def _sources(folder: Path, given: Mapping[str, str] | None) -> Settings | list[tuple[str, Path]]:
    if given:
        return [(name, Path(path)) for name, path in given.items()]
    if (folder / "groundkb.toml").is_file():
        return load_settings(folder / "groundkb.toml", trusted=False)  # a data set's file
    subs = sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))
    if not subs:
        raise InvalidInput(f"{folder}: no sources (no groundkb.toml, no sub-folders, none given)")
    return [(p.name, p) for p in subs]


def evaluate_verdicts(
    dataset: str | Path,
    settings: Settings | None = None,
    *,
    mode: str = "hybrid",
    sources: Mapping[str, str] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> VerdictReport:
    """Ingest the set's sources into a throwaway index and score every verdict."""
    folder = Path(dataset)
    questions = read_questions(folder)
    plan = _sources(folder, sources)
    base = settings or Settings()
    with tempfile.TemporaryDirectory(prefix="groundkb-verdicts-") as tmp:
        s = base.replace(
            db=str(Path(tmp) / "eval.db"), retrieval=mode, fallback_p95_ms=NO_FALLBACK_MS
        )
        if isinstance(plan, Settings):
            keep = ("db", "retrieval", "embedder", "fallback_p95_ms")
            s = plan.replace(**{k: getattr(s, k) for k in keep})
        with KnowledgeBase.open(settings=s) as kb:
            if mode != "keyword" and kb.embedder() is None:
                raise InvalidInput("vector and hybrid modes need an embedder (setting `embedder`)")
            reports = (
                kb.sync()
                if isinstance(plan, Settings)
                else [kb.ingest(path, name) for name, path in plan]
            )
            bad = [e for r in reports for e in r.errors]
            if bad:
                raise InvalidInput(f"{bad[0]} ({len(bad)} problems)")
            return _score(kb, folder.name, mode, questions, progress)


def _score(
    kb: KnowledgeBase,
    dataset: str,
    mode: str,
    questions: Sequence[Question],
    progress: Callable[[int, int], None] | None,
) -> VerdictReport:
    confusion: dict[str, dict[str, int]] = {}
    kinds: dict[str, list[bool]] = {}
    right = answered = answered_right = false_answers = nothing = answerable = 0
    hit1: list[float] = []
    hit5: list[float] = []
    latency: list[float] = []
    wrong: list[dict[str, Any]] = []
    for n, q in enumerate(questions, 1):
        started = time.perf_counter()
        result = kb.search(q.query[:MAX_QUERY_CHARS], limit=5)
        if result.fallback:
            raise InvalidInput(f"search fell back to keyword ({result.fallback}): {result.notice}")
        latency.append((time.perf_counter() - started) * 1000)
        verdict = result.verdict.kind
        top = [h.doc_id for h in result.hits]
        top_ok = bool(top) and top[0] in q.relevant
        if q.expect == "unanswerable":
            ok = verdict != "answer"
        else:
            ok = verdict == q.expect and (verdict != "answer" or top_ok)
        confusion.setdefault(q.expect, {}).setdefault(verdict, 0)
        confusion[q.expect][verdict] += 1
        right += ok
        kinds.setdefault(q.kind or q.expect, []).append(ok)
        if q.expect == "answer":
            answerable += 1
            hit1.append(1.0 if top_ok else 0.0)
            hit5.append(1.0 if q.relevant & set(top[:5]) else 0.0)
            answered_right += verdict == "answer" and top_ok
        if q.expect in ("no_match", "unanswerable"):
            nothing += 1
            false_answers += verdict == "answer"
        if verdict == "answer":
            answered += 1
        if not ok:
            wrong.append(
                {
                    "id": q.id,
                    "query": q.query,
                    "expect": q.expect,
                    "verdict": verdict,
                    "reason": result.verdict.reason,
                    "top": top[:1],
                }
            )
        if progress:
            progress(n, len(questions))
    total = len(questions) or 1
    mean = statistics.fmean
    return VerdictReport(
        dataset=dataset,
        mode=mode,
        questions=len(questions),
        accuracy=round(right / total, 4),
        confusion=confusion,
        false_answer_rate=round(false_answers / nothing, 4) if nothing else 0.0,
        answered_right_rate=round(answered_right / answerable, 4) if answerable else 0.0,
        answer_precision=round(answered_right / answered, 4) if answered else 0.0,
        answered=round(answered / total, 4),
        hit_at_1=round(mean(hit1), 4) if hit1 else 0.0,
        hit_at_5=round(mean(hit5), 4) if hit5 else 0.0,
        latency_p50_ms=round(percentile(latency, 0.5), 2),
        by_kind={k: {"n": len(v), "accuracy": round(mean(v), 4)} for k, v in sorted(kinds.items())},
        wrong=tuple(wrong),
    )


def is_verdict_set(folder: str | Path) -> bool:
    """Whether ``folder`` holds a verdict set rather than a BEIR-format retrieval set."""
    root = Path(folder)
    return not (root / "qrels.tsv").is_file() and any(root.glob("*.jsonl"))
