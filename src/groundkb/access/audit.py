"""The access audit log: one JSON line per read a caller makes.

    {"ts": "2026-11-24T13:05:01Z", "action": "search", "user": "bob", "via": "token",
     "groups": ["staff"], "shell": "mcp", "allowed": ["handbook"], "denied": ["legal"],
     "outcome": "ok", "query": "merger plans", "hits": 3}

``allowed`` are the sources the caller could read in that call; ``denied`` the sources
the call asked for (a ``source`` filter, ``sources`` of a RAG tool, a document of another
source) that the caller may not read, and ``outcome`` ``ok`` or the error code the
caller got. Every string is redacted (``ops/querylog.py``: parameters named like secrets,
bearer credentials, token formats, configured secrets), and per-call credentials are
never passed in. Lines go to the ``groundkb.audit`` logger; the ``audit_log`` setting
sends them to stderr or a file (``serve/startup.py``).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Collection, Mapping
from typing import Any

from ..ops.querylog import redact
from .principal import Principal

LOGGER_NAME = "groundkb.audit"
log = logging.getLogger(LOGGER_NAME)


def _clean(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = [_clean(v) for v in value]
        return sorted(items) if isinstance(value, set | frozenset) else items
    return value


def record(
    action: str,
    principal: Principal,
    *,
    shell: str,
    allowed: Collection[str] | None,
    denied: Collection[str] = (),
    outcome: str = "ok",
    **details: Any,
) -> None:
    """Log one access (a no-op unless the audit log is on)."""
    if not log.isEnabledFor(logging.INFO):
        return
    line: dict[str, Any] = {
        "ts": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "action": action,
        "user": principal.user,
        "via": principal.via,
        "groups": sorted(principal.groups),
        "shell": shell,
        "allowed": "every source" if allowed is None else sorted(allowed),
        "denied": sorted(set(denied)),
        "outcome": outcome,
    }
    if principal.unlocked:
        line["unlocked"] = sorted(principal.unlocked)
    line.update({k: v for k, v in details.items() if v not in (None, "", (), [])})
    log.info(json.dumps(_clean(line), ensure_ascii=False, separators=(",", ":")))
