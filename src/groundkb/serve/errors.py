"""One error mapper for every shell: REST, MCP tools, MCP resources and the CLI.

Every failure a caller sees is one of our errors (``errors.py``): a stable ``code``, an
HTTP ``status`` and a message written for people. :func:`as_error` turns anything raised
into one:

- our errors pass through;
- argument validation errors (pydantic, FastAPI) become ``invalid_input`` with one
  short clause per field ("limit: must be at most 50"), never pydantic's raw text or
  its documentation links;
- anything else is an ``internal_error`` (500) whose message says only that; the
  traceback goes to the server log, never to the caller.

Then each shell renders the same error its own way: :func:`http_body` (status and
``{"error": {"code", "message"}}``), :func:`tool_text` (``[code] message``, the text of
an MCP tool or resource error) and :func:`cli_line` (``error [code]: message``).

Light on purpose: the CLI imports it, so nothing here imports pydantic or a web
framework at module level.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import GroundKBError, InvalidInput, NotFound

log = logging.getLogger(__name__)


class InternalError(GroundKBError):
    """A bug or an unexpected failure; the details are in the server log only."""

    code = "internal_error"
    status = 500


_LOCATIONS = {"body", "query", "path", "header", "cookie"}


def _clause(err: Mapping[str, Any]) -> str:
    loc = [str(p) for p in err.get("loc", ()) if p != "__root__"]
    if len(loc) > 1 and loc[0] in _LOCATIONS:  # FastAPI: ("query", "limit")
        loc = loc[1:]
    where = ".".join(loc)
    kind = str(err.get("type", ""))
    ctx = err.get("ctx") or {}
    if kind == "json_invalid":
        return "the body is not valid JSON"
    if kind == "missing":
        what = "is required"
    elif kind in ("less_than_equal", "less_than", "greater_than_equal", "greater_than"):
        bound = next(iter(ctx.values()), "")
        what = {
            "less_than_equal": f"must be at most {bound}",
            "less_than": f"must be less than {bound}",
            "greater_than_equal": f"must be at least {bound}",
            "greater_than": f"must be more than {bound}",
        }[kind]
    elif kind == "string_too_short":
        n = ctx.get("min_length", 1)
        what = "must not be empty" if n == 1 else f"must be at least {n} characters"
    elif kind == "string_too_long":
        what = f"must be at most {ctx.get('max_length')} characters"
    elif kind == "literal_error":
        what = f"must be one of {ctx.get('expected', '')}".replace("'", "")
    elif kind == "extra_forbidden":
        what = "is not a known field"
    else:
        msg = str(err.get("msg", "is invalid"))
        what = msg[:1].lower() + msg[1:]
    return f"{where}: {what}" if where else what


def validation_message(errors: Iterable[Mapping[str, Any]]) -> str:
    """Pydantic-style error dicts as one line: ``limit: must be at most 50; q: is required``."""
    clauses = list(dict.fromkeys(_clause(e) for e in errors))
    return "; ".join(clauses) or "invalid input"


def as_error(exc: BaseException) -> GroundKBError:
    """Any exception as one of our errors (see the module docstring)."""
    if isinstance(exc, GroundKBError):
        return exc
    errors = getattr(exc, "errors", None)
    if callable(errors) and type(exc).__name__ in ("ValidationError", "RequestValidationError"):
        try:
            return InvalidInput(validation_message(errors()))
        except Exception:  # pragma: no cover - a validation error without details
            return InvalidInput("invalid input")
    log.error("internal error: %s", type(exc).__name__, exc_info=exc)
    return InternalError("internal error; the server log has the details")


def _message(err: GroundKBError) -> str:
    """The message a caller sees: credentials it may echo (a token passed as an id, a
    secret in a URL) redacted."""
    from ..ops.querylog import redact_credentials

    return redact_credentials(err.message)


def http_body(exc: BaseException) -> tuple[int, dict[str, Any]]:
    """The HTTP status and JSON body of an error."""
    err = as_error(exc)
    body: dict[str, Any] = {"code": err.code, "message": _message(err)}
    if isinstance(err, NotFound) and err.suggestions:
        body["suggestions"] = list(err.suggestions)
    return err.status, {"error": body}


def tool_text(exc: BaseException) -> str:
    """An MCP tool or resource error's text: ``[code] message``."""
    err = as_error(exc)
    return f"[{err.code}] {_message(err)}"


def cli_line(exc: BaseException) -> str:
    """The CLI's one line on stderr: ``error [code]: message``."""
    err = as_error(exc)
    return f"error [{err.code}]: {_message(err)}"
