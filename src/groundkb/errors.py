"""Errors raised by groundkb.

Every error has a stable machine-readable ``code`` and an HTTP ``status``; the shells
(CLI, MCP, HTTP) map them in one place each and never show a traceback to an agent.

    GroundKBError
    ├── InvalidInput          bad query, filter, argument or file content      400
    │   └── IngestError       a file or entry that cannot be ingested          422
    ├── Unauthorized          no or a wrong credential for an admin action     401
    ├── Forbidden             the action is not allowed (e.g. admin disabled)  403
    ├── NotFound              unknown document, source or command              404
    ├── Conflict              duplicate id owned by another source             409
    ├── IndexMismatch         index built with other settings or schema        409
    ├── ConfigError           unreadable or invalid settings                   400
    ├── MissingDependency     an optional package is not installed             501
    └── StoreError            the store failed (locked, corrupt, disk full)    503
        └── StoreUnavailable  the database cannot be reached now; retry later  503
"""

from __future__ import annotations

from collections.abc import Sequence


class GroundKBError(Exception):
    """Base class of every error groundkb raises on purpose."""

    code = "error"
    status = 500

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


class InvalidInput(GroundKBError):
    code = "invalid_input"
    status = 400


class IngestError(InvalidInput):
    """A file, entry or field that cannot be ingested; ``path`` and ``field`` locate it."""

    code = "ingest_error"
    status = 422

    def __init__(self, message: str, path: str = "", field: str = "") -> None:
        where = path + (f" [{field}]" if field else "")
        super().__init__(f"{where}: {message}" if where else message)
        self.path = path
        self.field = field
        self.reason = message


class Unauthorized(GroundKBError):
    code = "unauthorized"
    status = 401


class TokenExpired(Unauthorized):
    """A bearer token that was valid here but has expired: get a new one."""

    code = "token_expired"


class Forbidden(GroundKBError):
    code = "forbidden"
    status = 403


class NotFound(GroundKBError):
    """Nothing by that id or name; ``suggestions``: the names the caller may have meant
    (a command's did-you-mean), also in the message."""

    code = "not_found"
    status = 404

    def __init__(self, message: str, suggestions: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.suggestions = tuple(suggestions)


class Conflict(GroundKBError):
    code = "conflict"
    status = 409


class IndexMismatch(GroundKBError):
    code = "index_mismatch"
    status = 409


class ConfigError(GroundKBError):
    code = "config_error"
    status = 400


class MissingDependency(GroundKBError):
    code = "missing_dependency"
    status = 501


class StoreError(GroundKBError):
    code = "store_error"
    status = 503


class StoreUnavailable(StoreError):
    """The database server cannot be reached (down, restarting, network); a later call
    may succeed without any change on the caller's side."""

    code = "store_unavailable"
    status = 503
