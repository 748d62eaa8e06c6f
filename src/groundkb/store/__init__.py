"""Stores by name, loaded lazily: ``sqlite`` (default) and ``postgresql``.

``open_store("kb.db")`` or ``open_store("sqlite:///path/kb.db")`` gives a SQLite store;
``open_store("postgresql://user@host/db")`` a PostgreSQL one (``pip install
'groundkb[postgres]'``), which must have been migrated first (``migrate=True``, what
``groundkb migrate`` does).
"""

from __future__ import annotations

import importlib
from typing import Any, cast

from ..errors import ConfigError, MissingDependency
from .base import Store

BACKENDS: dict[str, tuple[str, str, str]] = {
    # scheme: (module, class, extra to install)
    "sqlite": ("groundkb.store.sqlite", "SQLiteStore", ""),
    "postgresql": ("groundkb.store.postgres", "PostgresStore", "postgres"),
}
_ALIASES = {"postgres": "postgresql"}


def backend_of(location: str) -> str:
    """The backend name a location selects: its URL scheme, or sqlite for a path."""
    scheme, sep, _ = location.partition("://")
    if not sep:
        return "sqlite"
    return _ALIASES.get(scheme, scheme)


def open_store(
    location: str,
    *,
    read_only: bool = False,
    migrate: bool | None = None,
    pool_size: int = 10,
    timeout: float = 10.0,
    int8_vectors: bool = True,
    kept_scores_mb: int = 128,
) -> Store:
    """Open the store at ``location``: a file path or ``scheme://...`` URL.

    ``migrate``: apply pending schema migrations first. SQLite does by default (an
    embedded file); PostgreSQL only when asked, and otherwise refuses a database whose
    schema is not the current one. ``pool_size`` and ``timeout`` (seconds to connect or
    to wait for a pooled connection) apply to PostgreSQL; ``int8_vectors`` (scan an int8
    copy of the vectors first, ``store/exact.py``) and ``kept_scores_mb`` (memory for
    keyword candidate scores kept between questions, ``store/sqlite_kept.py``) to SQLite.
    """
    scheme = backend_of(location)
    if scheme not in BACKENDS:
        raise ConfigError(
            f"unknown store {scheme!r} in {location.split('@')[-1]!r}; "
            f"known: {', '.join(sorted(BACKENDS))}"
        )
    module_name, cls_name, extra = BACKENDS[scheme]
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise MissingDependency(
            f"the {scheme} store needs extra packages: pip install 'groundkb[{extra}]' ({exc})"
        ) from exc
    options: dict[str, Any] = {"read_only": read_only}
    if scheme == "sqlite":
        rest = location.partition("://")[2] if "://" in location else location
        if location.startswith("sqlite://"):
            rest = rest.removeprefix("/") if rest.startswith("//") else rest
        if migrate is not None:
            options["migrate"] = migrate
        options["int8_vectors"] = int8_vectors
        options["kept_scores_mb"] = kept_scores_mb
        return cast(Store, getattr(module, cls_name)(rest, **options))
    options.update(migrate=bool(migrate), pool_size=pool_size, timeout=timeout)
    return cast(Store, getattr(module, cls_name)(location, **options))


def migrate_store(location: str, *, timeout: float = 10.0) -> tuple[int, int]:
    """Create or upgrade the schema at ``location``; returns (version before, after)."""
    store = open_store(location, migrate=True, pool_size=1, timeout=timeout)
    try:
        migrated: tuple[int, int] = getattr(store, "migrated", (0, 0))
        return migrated
    finally:
        store.close()


__all__ = ["BACKENDS", "Store", "backend_of", "migrate_store", "open_store"]
