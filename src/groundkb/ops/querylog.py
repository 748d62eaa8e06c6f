"""One structured log line per query, with secrets redacted.

Every search logs one JSON object at INFO on the ``groundkb.queries`` logger:

    {"event": "search", "query": "...", "terms": [...], "filters": {...},
     "requested_mode": "auto", "mode": "hybrid", "fallback": "", "verdict": "answer",
     "reason": "strong_match", "confidence": 0.91, "latency_ms": 12.3, "hits": 4,
     "top": [{"doc_id": ..., "chunk_id": ..., "score": ..., "matched_terms": [...],
              "ranks": {...}}], "corrected_query": "", "shell": "rest"}

or, when the search failed, ``"error": {"code": ..., "message": ...}`` instead of the
verdict. The shells decide where the line goes (``query_log`` setting: stderr, a file,
or off); the library only logs.

Redaction: people paste credentials into search boxes. Before a query reaches the log,
``key=value`` pairs whose key names a secret (token, password, api_key, ...), bearer
credentials, well-known token formats (``sk-``, ``ghp_``, ``xoxb-``, AWS access keys,
JWTs) and long random-looking strings are replaced by ``[redacted]``, and normalized
terms taken from a redacted span are dropped. Extra literal secrets (the admin token)
can be registered with :func:`add_secret`.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ..models import SearchResult

LOGGER_NAME = "groundkb.queries"
log = logging.getLogger(LOGGER_NAME)
REDACTED = "[redacted]"
TOP_HITS = 3

_SECRET_KEYS = (
    r"password|passwd|pwd|secret|client[_-]?secret|token|access[_-]?token|refresh[_-]?token"
    r"|api[_-]?key|apikey|access[_-]?key|private[_-]?key|auth|authorization|credentials?"
    r"|session[_-]?id|cookie"
)
_PATTERNS: tuple[re.Pattern[str], ...] = (
    # key=value where the key names a secret: keep the key, hide the value
    re.compile(rf"(?i)(\b(?:{_SECRET_KEYS})\s*=\s*)(\"[^\"]*\"|'[^']*'|\S+)"),
    # key: value, when the value looks like a credential (a digit or a symbol in it), so
    # that "password: how to reset" keeps its words
    re.compile(rf"(?i)(\b(?:{_SECRET_KEYS}):\s*)((?=\S*[\d_+/.=-])\S{{6,}})"),
    re.compile(r"(?i)(\b(?:bearer|basic)\s+)((?=[A-Za-z0-9._~+/=-]*\d)[A-Za-z0-9._~+/=-]{8,})"),
)
_TOKENS = re.compile(
    r"\b(?:sk-[A-Za-z0-9_-]{16,}|gkb_[A-Za-z0-9_-]{20,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"
    r"|xox[abprs]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}|ASIA[0-9A-Z]{16}"
    r"|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})"
)
# 24+ characters of letters and digits (mixed) with no spaces: keys, hashes, tokens
_RANDOM = re.compile(r"\b(?=[A-Za-z0-9+/_-]*\d)(?=[A-Za-z0-9+/_-]*[A-Za-z])[A-Za-z0-9+/_-]{24,}")

_literal_secrets: set[str] = set()


def add_secret(value: str) -> None:
    """Always redact this exact value (e.g. the configured admin token)."""
    if value and len(value) >= 4:
        _literal_secrets.add(value)


def redact_spans(text: str) -> tuple[str, list[str]]:
    """``text`` with secrets replaced, and the secret values that were removed."""
    removed: list[str] = []

    def keep_key(m: re.Match[str]) -> str:
        removed.append(m.group(2))
        return m.group(1) + REDACTED

    def whole(m: re.Match[str]) -> str:
        removed.append(m.group(0))
        return REDACTED

    for secret in sorted(_literal_secrets, key=len, reverse=True):
        if secret in text:
            removed.append(secret)
            text = text.replace(secret, REDACTED)
    for pattern in _PATTERNS:
        text = pattern.sub(keep_key, text)
    text = _TOKENS.sub(whole, text)
    text = _RANDOM.sub(whole, text)
    return text, removed


def strip_credentials(text: str) -> tuple[str, bool]:
    """``text`` without the credentials a person pasted into it (``key=value`` secrets,
    bearer credentials, known token formats, configured secrets), and whether there
    were any. Unlike :func:`redact` it keeps long random-looking words: a search for an
    id or a hash must still work."""
    removed: list[str] = []

    def keep_key(m: re.Match[str]) -> str:
        removed.append(m.group(2))
        return m.group(1)

    def whole(m: re.Match[str]) -> str:
        removed.append(m.group(0))
        return ""

    for secret in sorted(_literal_secrets, key=len, reverse=True):
        if secret in text:
            removed.append(secret)
            text = text.replace(secret, "")
    # ``key=value`` and bearer credentials; not ``key: value``, which a question about
    # the docs has ("auth: oauth2 setup")
    for pattern in (_PATTERNS[0], _PATTERNS[2]):
        text = pattern.sub(keep_key, text)
    text = _TOKENS.sub(whole, text)
    return " ".join(text.split()), bool(removed)


def redact_credentials(text: str) -> str:
    """``text`` with credentials replaced by ``[redacted]``, keeping long random-looking
    words (paths, ids, hashes): for error messages, which name such things."""
    for secret in sorted(_literal_secrets, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    for pattern in _PATTERNS:
        text = pattern.sub(lambda m: m.group(1) + REDACTED, text)
    return _TOKENS.sub(REDACTED, text)


def redact(text: str) -> str:
    """``text`` with anything that looks like a credential replaced by ``[redacted]``."""
    return redact_spans(text)[0]


def error_text(exc: BaseException, limit: int = 300) -> str:
    """An exception's message fit to show a person or an agent: redacted, on one line,
    at most ``limit`` characters. Every result that reports a failure uses this."""
    text = " ".join(redact(str(exc) or type(exc).__name__).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class RedactingFormatter(logging.Formatter):
    """A log formatter that redacts secrets in the whole formatted record, tracebacks
    included (an exception's message can carry a credential)."""

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


def _clean_terms(terms: Iterable[str], removed: list[str]) -> list[str]:
    lowered = [r.lower() for r in removed]
    out = []
    for term in terms:
        t = term.lower()
        if any(t and t in r for r in lowered):
            continue
        out.append(redact(term))
    return out


def search_line(
    query: str,
    *,
    result: SearchResult | None,
    filters: Mapping[str, Any],
    requested_mode: str,
    fallback: str,
    latency_ms: float,
    error: tuple[str, str] | None = None,
    shell: str = "",
    user: str | None = None,
) -> dict[str, Any]:
    """The log record of one search (see the module docstring)."""
    text, removed = redact_spans(query)
    line: dict[str, Any] = {
        "event": "search",
        "query": text,
        "filters": {k: list(v) for k, v in filters.items() if v},
        "requested_mode": requested_mode,
        "latency_ms": round(latency_ms, 2),
    }
    if shell:
        line["shell"] = shell
    if user:
        line["user"] = user
    if result is None:
        code, message = error or ("error", "")
        line["error"] = {"code": code, "message": redact(message)}
        return line
    v = result.verdict
    line.update(
        terms=_clean_terms(result.terms, removed),
        mode=result.mode,
        fallback=fallback,
        verdict=v.kind,
        reason=v.reason,
        confidence=round(v.confidence, 4),
        hits=len(result.hits),
        top=[
            {
                "doc_id": h.doc_id,
                "chunk_id": h.chunk_id,
                "score": round(h.score, 4),
                "matched_terms": _clean_terms(h.matched_terms, removed),
                "ranks": dict(h.ranks),
            }
            for h in result.hits[:TOP_HITS]
        ],
    )
    if result.corrected_query:
        line["corrected_query"] = redact(result.corrected_query)
    if result.asked_of:
        line["asked_of"] = list(result.asked_of)
    if result.multi_intent:
        line["multi_intent"] = True
    return line


def wanted() -> bool:
    """Whether a query line would be logged (build one only then)."""
    return log.isEnabledFor(logging.INFO)


def emit(line: Mapping[str, Any]) -> None:
    """Log one query line (JSON) at INFO on ``groundkb.queries``."""
    if log.isEnabledFor(logging.INFO):
        log.info(json.dumps(line, ensure_ascii=False, separators=(",", ":")))
