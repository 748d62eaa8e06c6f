"""Connections to PostgreSQL: the URL, a pool that survives outages, and error mapping.

``postgresql://user:password@host:port/database?schema=kb&sslmode=...``: every query
parameter but ``schema`` goes to libpq; ``schema`` (default ``groundkb``) is the
PostgreSQL schema that holds the tables, so one database can hold several knowledge
bases beside other applications' tables. The password never appears in messages or
logs (:func:`redact`).

:class:`Connections` hands out pooled connections (psycopg_pool). When a call fails
because the connection broke, it looks at the server once: if the server answers, the
pool is checked and the call retried once (reads only); if it does not, calls fail at
once with :class:`~groundkb.errors.StoreUnavailable` — no waiting on a pool that cannot
fill — until a probe connects again, and then a fresh pool takes over. A server that
comes back is therefore used by the next call, with no restart.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from ..errors import ConfigError, GroundKBError, IndexMismatch, StoreError, StoreUnavailable

log = logging.getLogger(__name__)
T = TypeVar("T")

_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
DEFAULT_SCHEMA = "groundkb"


@dataclass(frozen=True, slots=True)
class Target:
    conninfo: str  # what libpq gets (password included)
    schema: str
    display: str  # for people: no password


def redact(url: str) -> str:
    """The URL with its password replaced by ``***``."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)
    user = (parts.username or "") + ":***"
    return urlunsplit(parts._replace(netloc=f"{user}@{netloc[1]}"))


def parse_url(url: str) -> Target:
    """Split ``schema`` off a postgresql:// URL; ConfigError for anything malformed."""
    parts = urlsplit(url)
    if parts.scheme not in ("postgresql", "postgres"):
        raise ConfigError(f"not a PostgreSQL URL: {redact(url)}")
    params = parse_qsl(parts.query, keep_blank_values=True)
    schema = DEFAULT_SCHEMA
    rest = []
    for key, value in params:
        if key == "schema":
            schema = value
        else:
            rest.append((key, value))
    if not _SCHEMA_NAME.match(schema):
        raise ConfigError(
            f"schema {schema!r} in {redact(url)}: use lower-case letters, digits and _"
        )
    conninfo = urlunsplit(parts._replace(scheme="postgresql", query=urlencode(rest)))
    return Target(conninfo, schema, redact(url))


def _connection_broken(exc: BaseException) -> bool:
    """Whether an error means the connection (not the query) failed."""
    if isinstance(exc, PoolTimeout | psycopg.InterfaceError):
        return True
    if isinstance(exc, psycopg.OperationalError):
        state = exc.sqlstate or ""
        return not state or state.startswith("08") or state in ("57P01", "57P02", "57P03")
    return False


def map_error(exc: BaseException, where: str) -> GroundKBError:
    """Our error for a psycopg error, with a message a person can act on."""
    if isinstance(exc, GroundKBError):
        return exc
    text = " ".join(str(exc).split())
    low = text.lower()
    if (
        "password authentication failed" in low
        or "no password supplied" in low
        or ("authentication failed" in low)
    ):
        return StoreError(f"PostgreSQL at {where} refused the credentials: {text}")
    if "does not exist" in low and "database" in low and isinstance(exc, psycopg.OperationalError):
        return StoreError(f"PostgreSQL at {where}: {text} (create it first, e.g. `createdb`)")
    if isinstance(exc, PoolTimeout):
        return StoreUnavailable(f"no connection to PostgreSQL at {where} in time ({text})")
    if _connection_broken(exc):
        return StoreUnavailable(f"cannot reach PostgreSQL at {where}: {text}")
    if isinstance(exc, psycopg.errors.InsufficientPrivilege):
        return StoreError(f"PostgreSQL at {where}: permission denied ({text})")
    if isinstance(exc, psycopg.errors.DataException) and "dimensions" in low:
        return IndexMismatch(f"PostgreSQL at {where}: {text}")
    return StoreError(f"PostgreSQL at {where}: {text}")


def connect(
    target: Target,
    timeout: float,
    configure: Callable[[psycopg.Connection[Any]], None] | None = None,
) -> psycopg.Connection[Any]:
    """A fresh connection outside any pool (migrations, checks, probes); caller closes it."""
    try:
        conn = psycopg.connect(
            target.conninfo, autocommit=True, connect_timeout=max(1, round(timeout))
        )
    except psycopg.Error as exc:
        raise map_error(exc, target.display) from None
    if configure is not None:
        try:
            configure(conn)
        except BaseException as exc:
            conn.close()
            if isinstance(exc, psycopg.Error):
                raise map_error(exc, target.display) from None
            raise
    return conn


class Connections:
    """A pool of connections to one database, with outage handling (module docstring)."""

    def __init__(
        self,
        target: Target,
        *,
        pool_size: int,
        timeout: float,
        configure: Callable[[psycopg.Connection[Any]], None],
    ) -> None:
        self.target = target
        self.pool_size = max(1, pool_size)
        self.timeout = timeout
        self._configure = configure
        self._lock = threading.Lock()
        self._down = False
        self._closed = False
        self._pool = self._new_pool()

    def _new_pool(self) -> ConnectionPool[Any]:
        pool: ConnectionPool[Any] = ConnectionPool(
            self.target.conninfo,
            min_size=1,
            max_size=self.pool_size,
            kwargs={"autocommit": True, "connect_timeout": max(1, round(self.timeout))},
            configure=self._configure,
            timeout=self.timeout,
            open=False,
            name="groundkb",
        )
        pool.open(wait=False)
        return pool

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._pool.close(timeout=self.timeout)

    def _recover(self) -> None:
        """While the server is down: one probe; a fresh pool once it answers."""
        connect(self.target, self.timeout).close()  # StoreUnavailable while still down
        with self._lock:
            if self._down:
                old, self._pool, self._down = self._pool, self._new_pool(), False
                log.warning("PostgreSQL at %s is back", self.target.display)
                threading.Thread(target=old.close, args=(self.timeout,), daemon=True).start()

    def _reachable(self) -> bool:
        try:
            connect(self.target, self.timeout).close()
        except StoreUnavailable:
            return False
        return True

    def run(self, fn: Callable[[psycopg.Connection[Any]], T], *, write: bool = False) -> T:
        """``fn(connection)`` on a pooled connection; our errors only (module docstring)."""
        if self._closed:
            raise StoreError(f"the store at {self.target.display} is closed")
        if self._down:
            self._recover()
        for attempt in (1, 2):
            try:
                with self._pool.connection() as conn:
                    return fn(conn)
            except GroundKBError:
                raise
            except psycopg.Error as exc:
                if not _connection_broken(exc):
                    raise map_error(exc, self.target.display) from None
                if attempt == 1 and not write and self._reachable():
                    self._pool.check()  # stale connections (a server restart): drop them
                    continue
                if not self._reachable():
                    with self._lock:
                        if not self._down:
                            log.warning(
                                "PostgreSQL at %s is unreachable: %s", self.target.display, exc
                            )
                        self._down = True
                raise map_error(exc, self.target.display) from None
        raise AssertionError("unreachable")  # pragma: no cover
