"""Numbered schema migrations, one runner for every backend.

A backend declares its schema as a tuple of :class:`Migration`: migration ``n`` brings a
database from version ``n - 1`` to ``n`` (version 0 is an empty database). The runner
applies the pending ones in order, each in its own transaction together with the new
version number, while holding the backend's migration lock, so two processes migrating
at once apply every migration exactly once. A schema newer than this groundkb knows is
never touched: it is refused with a message that says to upgrade.

SQLite, an embedded file, migrates when it is opened. A PostgreSQL database is shared
by servers that may run different releases during a rollout, so it is migrated only by
``groundkb migrate``; servers check the version at start and refuse an older or newer
schema (:func:`check_current`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol

from ..errors import IndexMismatch

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Migration:
    version: int  # the schema version this migration brings the database to
    name: str
    sql: str


class MigrationTarget(Protocol):
    """What a backend gives the runner."""

    location: str

    def schema_version(self) -> int:
        """The recorded version; 0 for a database without a groundkb schema."""
        ...

    def migration_lock(self) -> AbstractContextManager[None]:
        """Held while migrating: excludes other migrators of the same database."""
        ...

    def apply(self, migration: Migration) -> None:
        """Run the migration and record its version atomically (in a transaction of its
        own, or in the one the lock holds)."""
        ...


def latest(migrations: Sequence[Migration]) -> int:
    versions = [m.version for m in migrations]
    if versions != list(range(1, len(versions) + 1)):
        raise ValueError(f"migrations must be numbered 1..n in order, got {versions}")
    return len(versions)


def refuse_newer(version: int, migrations: Sequence[Migration], location: str) -> None:
    newest = latest(migrations)
    if version > newest:
        raise IndexMismatch(
            f"{location} has schema version {version}; this groundkb reads up to "
            f"{newest}. Upgrade groundkb."
        )


def check_current(version: int, migrations: Sequence[Migration], location: str) -> None:
    """Refuse a database whose schema is not exactly the one this groundkb uses."""
    refuse_newer(version, migrations, location)
    newest = latest(migrations)
    if version == 0:
        raise IndexMismatch(f"{location} has no groundkb schema yet: run `groundkb migrate`")
    if version < newest:
        raise IndexMismatch(
            f"{location} has schema version {version}, this groundkb needs {newest}: "
            "run `groundkb migrate`"
        )


def migrate(target: MigrationTarget, migrations: Sequence[Migration]) -> tuple[int, int]:
    """Apply every pending migration; returns (version before, version after)."""
    newest = latest(migrations)
    with target.migration_lock():
        before = target.schema_version()  # read under the lock: another may have run
        refuse_newer(before, migrations, target.location)
        # upgrading data someone has (not creating a schema) is said where a user sees
        # it: a large file can take seconds
        level = logging.WARNING if before > 0 else logging.INFO
        for migration in migrations[before:]:
            log.log(
                level,
                "migrating %s: schema %d -> %d (%s)",
                target.location,
                migration.version - 1,
                migration.version,
                migration.name,
            )
            target.apply(migration)
    return before, newest
