"""Synthesized answers from retrieved passages, citing only them.

Without a language model the answer is **extractive**: the sentences of the passages
that cover most of the question's words, best passages first, each followed by the
``[n]`` of the passage it comes from. With an OpenAI-compatible endpoint configured
(``synthesis_url``, ``synthesis_model``, the key in the environment variable named by
``synthesis_key_env``), the model writes the answer from the numbered passages; citations
to passages that were not given are removed, and an answer that cites none, or a failed
call, falls back to the extractive one (``limits`` says so).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..analyze.text import stem, tokenize
from ..chatmodel import ModelEndpoint, chat, reply_text
from ..ops.querylog import error_text

log = logging.getLogger(__name__)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])|\n\s*\n|\n(?=\s*(?:[-*•]|\d+\.)\s)")
_CITE = re.compile(r"\[(\d{1,3})\]")
SYSTEM = (
    "Answer the question using only the numbered passages. Cite every statement with the"
    " number of its passage in square brackets, e.g. [1]. If the passages do not answer"
    " the question, say that you do not know. Never use outside knowledge."
)


@dataclass(frozen=True, slots=True)
class Passage:
    """One retrieved passage: its text and what a citation names."""

    text: str
    title: str = ""
    uri: str = ""
    resource_id: str = ""


@dataclass(frozen=True, slots=True)
class Synthesis:
    answer: str
    cited: tuple[int, ...]  # indexes into the passages, in order of first citation
    truncated: bool = False
    reason: str = ""  # why the answer is shorter or not what was asked for
    model: str = "extractive"
    usage: dict[str, int] = field(default_factory=dict)


def sentences(text: str) -> list[str]:
    """``text`` cut into sentences and list items (Markdown headings dropped)."""
    out = []
    for part in _SENTENCE.split(text):
        line = " ".join(part.split())
        if line and not line.startswith("#"):
            out.append(line)
    return out


def extractive(
    question: str,
    passages: Sequence[Passage],
    max_chars: int = 800,
    stop_words: frozenset[str] = frozenset(),
) -> Synthesis:
    """The sentences that cover most of the question's words (stop words aside), best
    passages first (see the module doc); ``[n]`` after each names its passage (1-based).
    A sentence covering less than half of what the best one covers is left out."""
    wanted = {stem(t) for t in tokenize(question) if t not in stop_words}
    if not wanted or not passages:
        return Synthesis("", (), reason="nothing to answer from")
    scored: list[tuple[float, int, int, int, str]] = []
    for n, p in enumerate(passages):
        for pos, s in enumerate(sentences(p.text)):
            words = {stem(t) for t in tokenize(s)}
            covered = len(wanted & words)
            if covered:
                # coverage first; an earlier passage (ranked higher) and a shorter
                # sentence break ties
                score = covered / len(wanted) + 0.3 / (1 + n) - len(s) / 20_000
                scored.append((score, covered, n, pos, s))
    most = max((x[1] for x in scored), default=0)
    scored = [x for x in scored if 2 * x[1] >= most]
    scored.sort(key=lambda x: -x[0])
    chosen: list[tuple[int, int, str]] = []
    seen: set[str] = set()
    used = 0
    truncated = False
    for _, _, n, pos, s in scored:
        key = " ".join(tokenize(s))
        if key in seen:
            continue
        cost = len(s) + 5
        if used + cost > max_chars:
            truncated = truncated or bool(chosen) or cost > max_chars
            if chosen:
                continue
            s = s[: max(0, max_chars - 6)].rstrip() + "…"
            cost = len(s) + 5
        seen.add(key)
        chosen.append((n, pos, s))
        used += cost
        if len(chosen) >= 6:
            break
    if not chosen:
        return Synthesis("", (), reason="no sentence of the passages covers the question")
    chosen.sort()  # the order of the passages, and within one, of the text
    answer = " ".join(f"{s} [{n + 1}]" for n, _, s in chosen)
    cited = tuple(dict.fromkeys(n for n, _, _ in chosen))
    return Synthesis(answer, cited, truncated, "max_chars" if truncated else "")


def with_model(
    question: str,
    passages: Sequence[Passage],
    endpoint: ModelEndpoint,
    max_chars: int = 800,
    style: str = "",
    stop_words: frozenset[str] = frozenset(),
) -> Synthesis:
    """An answer written by the model from the numbered passages (module doc)."""
    endpoint.check("synthesis_url")
    numbered = "\n\n".join(
        f"[{i}] {p.title}\n{p.text}" if p.title else f"[{i}] {p.text}"
        for i, p in enumerate(passages, 1)
    )
    user = f"Passages:\n\n{numbered}\n\nQuestion: {question}\n\nAt most {max_chars} characters."
    if style:
        user += f" Style: {style}."
    fallback = extractive(question, passages, max_chars, stop_words)
    try:
        data = chat(endpoint, SYSTEM, user)
        text = reply_text(data).strip()
        usage = {k: int(v) for k, v in (data.get("usage") or {}).items() if isinstance(v, int)}
    except Exception as exc:  # any failure of the model: the extractive answer instead
        why = error_text(exc)
        log.warning("synthesis by %s failed, answering extractively: %s", endpoint.model, why)
        return _replace_reason(fallback, f"model failed ({why}); extractive answer")
    cited_all = [int(n) for n in _CITE.findall(text)]
    kept = [n for n in cited_all if 1 <= n <= len(passages)]
    text = _CITE.sub(lambda m: m.group(0) if 1 <= int(m.group(1)) <= len(passages) else "", text)
    if not kept:
        return _replace_reason(fallback, "the model cited no passage; extractive answer")
    truncated = len(text) > max_chars
    if truncated:
        text = text[: max_chars - 1].rstrip() + "…"
    reason = "uncited passages removed" if len(kept) != len(cited_all) else ""
    return Synthesis(
        text,
        tuple(dict.fromkeys(n - 1 for n in kept)),
        truncated,
        reason or ("max_chars" if truncated else ""),
        model=endpoint.model,
        usage=usage,
    )


def _replace_reason(s: Synthesis, reason: str) -> Synthesis:
    return Synthesis(s.answer, s.cited, s.truncated, reason, s.model, s.usage)


def passages_from(hits: Sequence[object]) -> list[Passage]:
    """Passages from client-provided hits (``provided_context.hits``): dicts with
    ``chunk`` or ``snippet`` text and optional ``title``, ``uri``, ``resourceId``."""
    out = []
    for h in hits:
        if not isinstance(h, dict):
            continue
        text = h.get("chunk") or h.get("snippet") or h.get("text") or ""
        if isinstance(text, str) and text.strip():
            out.append(
                Passage(
                    text=text,
                    title=str(h.get("title", "") or ""),
                    uri=str(h.get("uri", "") or ""),
                    resource_id=str(h.get("resourceId", "") or ""),
                )
            )
    return out
