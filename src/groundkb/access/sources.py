"""Which sources a caller may read.

A source's reader groups come from its ``[[sources]]`` table in ``groundkb.toml``
(``groups = ["legal"]``), which takes effect on reload without re-ingesting, or else from
what the store recorded when it was ingested. A source with no groups is readable by
every caller; one with groups by callers in at least one of them, and by the admin group
(setting ``admin_group``). A source with ``capability_env`` is a low-trust source: on
top of that, each call must carry the credential held in that environment variable
(reference 003's "capability" mode); the credential opens the source for that call only.

The operator (the command line, or a stdio server with no ``local_user``) reads every
source. Everything a caller reads goes through ``KnowledgeBase.reader``, which narrows the
store and every index built from it to :func:`readable_sources`.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..errors import ConfigError
from ..models import SourceInfo
from ..settings import Settings
from .principal import Principal

READERS_CACHED = 16  # views (one per set of readable sources) a knowledge base keeps


@dataclass(frozen=True, slots=True)
class SourceAccess:
    """How one source may be read: ``groups`` (empty: every caller) and, for a low-trust
    source, the environment variable holding its per-call credential."""

    name: str
    groups: tuple[str, ...]
    capability_env: str = ""

    @property
    def auth_mode(self) -> str:
        """Reference 003's ``authMode``: capability, username (groups) or none."""
        if self.capability_env:
            return "capability"
        return "username" if self.groups else "none"


def table_access(table: Mapping[str, object], where: str) -> tuple[tuple[str, ...] | None, str]:
    """``groups`` (None when the table does not say) and ``capability_env`` of one
    ``[[sources]]`` table; ConfigError when they are malformed."""
    groups = table.get("groups")
    if groups is not None and (
        not isinstance(groups, list) or not all(isinstance(g, str) and g.strip() for g in groups)
    ):
        raise ConfigError(f"{where}: 'groups' must be a list of group names")
    cap = table.get("capability_env", "")
    if not isinstance(cap, str):
        raise ConfigError(f"{where}: 'capability_env' must be an environment variable name")
    return (tuple(g.strip() for g in groups) if groups is not None else None), cap.strip()


def access_rules(infos: Sequence[SourceInfo], settings: Settings) -> dict[str, SourceAccess]:
    """Every stored source's access: the settings file's table wins over the store."""
    tables = {str(t.get("name", "")).strip(): t for t in settings.sources}
    rules = {}
    for info in infos:
        name = info.source.name
        groups: tuple[str, ...] | None = None
        cap = ""
        if name in tables:
            groups, cap = table_access(tables[name], f"[[sources]] {name}")
        rules[name] = SourceAccess(name, info.source.groups if groups is None else groups, cap)
    return rules


def may_see(principal: Principal, rule: SourceAccess, settings: Settings) -> bool:
    """Whether the source is listed for ``principal`` (groups allow it; a capability
    source is listed even while locked, so the caller knows a credential opens it)."""
    if principal.operator or not rule.groups:
        return True
    return bool(principal.groups & {*rule.groups, settings.admin_group})


def readable_sources(
    principal: Principal, infos: Sequence[SourceInfo], settings: Settings
) -> frozenset[str]:
    """The names of the sources ``principal`` may read in this call."""
    readable = set()
    for name, rule in access_rules(infos, settings).items():
        if not may_see(principal, rule, settings):
            continue
        if rule.capability_env and not principal.operator and name not in principal.unlocked:
            continue
        readable.add(name)
    return frozenset(readable)


def capability_valid(rule: SourceAccess, credential: str) -> bool:
    """Whether ``credential`` opens the low-trust source ``rule`` (constant time). The
    expected value is read from the environment at each call, so rotating it needs no
    restart; an unset variable opens nothing."""
    expected = os.environ.get(rule.capability_env, "") if rule.capability_env else ""
    if not expected or not credential:
        return False
    digest = hashlib.sha256(credential.encode()).digest()
    return hmac.compare_digest(digest, hashlib.sha256(expected.encode()).digest())
