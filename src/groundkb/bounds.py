"""Input bounds, declared once, and the checks every entry point runs on its arguments.

The Python API checks its arguments with :func:`text` and :func:`integer`; the MCP tools
and the REST API declare the same numbers in their schemas (``serve/schemas.py``,
``serve/mcp.py``), so a caller learns a bound before it is hit. Whatever a caller passes
(a lone surrogate from undecodable bytes, a string where a number belongs, ``nan``,
``2**63``, a megabyte of text), the answer is :class:`~groundkb.errors.InvalidInput`
with a message that never repeats more than a short excerpt of the value.

A search query is the one argument that is cut instead of refused: past
:data:`MAX_QUERY_CHARS` it is searched by its first characters and the result says so,
so that one long question (an evaluation set, a pasted log) never fails a batch.
"""

from __future__ import annotations

import math
from typing import Any

from .errors import InvalidInput

MAX_QUERY_CHARS = 2000  # longer queries are cut to this (with a notice)
MAX_QUERY_INPUT_CHARS = 100_000  # the MCP and REST shells refuse longer query arguments
MAX_ID_CHARS = 1000  # a document or chunk id
MAX_NAME_CHARS = 500  # a command name, an API path, a resource, an operation, a method
MAX_FILTER_CHARS = 1000  # a type, category or source filter (a comma list)
MAX_OFFSET = 1_000_000_000  # the furthest page a listing can start at
SEARCH_LIMIT = (1, 100)  # hits per search
LIST_LIMIT = (1, 500)  # documents or commands per page of a shell (CLI, MCP, REST)
API_LIST_LIMIT = (1, 1_000_000)  # documents per call of the Python API
MCP_SEARCH_LIMIT = 50  # hits per MCP search (what fits an agent's context)
MCP_LIST_LIMIT = 200  # commands per MCP page


def excerpt(value: str, chars: int = 60) -> str:
    """A short, printable form of a value for an error message."""
    shown = value if len(value) <= chars else value[:chars] + "…"
    return repr(shown)


def text(value: Any, name: str, max_chars: int | None, *, required: bool = True) -> str:
    """``value`` as text: a ``str`` of valid Unicode of at most ``max_chars`` characters
    (any length for None) and, when ``required``, not blank. Returns it unchanged."""
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be text, not {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(
            f"{name} is not valid text: it holds bytes that are not UTF-8 (a lone surrogate)"
        ) from None
    if max_chars is not None and len(value) > max_chars:
        raise InvalidInput(f"{name} is longer than {max_chars} characters")
    if required and not value.strip():
        raise InvalidInput(f"{name}: must not be empty")
    return value


def integer(value: Any, name: str, low: int, high: int) -> int:
    """``value`` as a whole number from ``low`` to ``high`` (no strings, floats or bools)."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"{name} must be a whole number, not {excerpt(str(value), 20)}")
    if not low <= value <= high:
        raise InvalidInput(f"{name} must be from {low} to {high}")
    return value
