"""Stores by name, loaded lazily: ``sqlite`` (default) and, later, others.

``open_store("kb.db")`` or ``open_store("sqlite:///path/kb.db")`` gives a SQLite store.
"""

from __future__ import annotations

import importlib
from typing import cast

from ..errors import ConfigError, MissingDependency
from .base import Store

BACKENDS: dict[str, tuple[str, str, str]] = {
    # scheme: (module, class, extra to install)
    "sqlite": ("groundkb.store.sqlite", "SQLiteStore", ""),
}


def open_store(location: str, *, read_only: bool = False) -> Store:
    """Open the store at ``location``: a file path or ``scheme://...`` URL."""
    scheme, sep, rest = location.partition("://")
    if not sep:
        scheme, rest = "sqlite", location
    elif scheme == "sqlite":
        rest = rest.removeprefix("/") if rest.startswith("//") else rest
    if scheme not in BACKENDS:
        raise ConfigError(f"unknown store {scheme!r}; known: {', '.join(sorted(BACKENDS))}")
    module_name, cls_name, extra = BACKENDS[scheme]
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:  # pragma: no cover - optional backends only
        raise MissingDependency(
            f"the {scheme} store needs extra packages: pip install 'groundkb[{extra}]' ({exc})"
        ) from exc
    return cast(Store, getattr(module, cls_name)(rest, read_only=read_only))


__all__ = ["BACKENDS", "Store", "open_store"]
