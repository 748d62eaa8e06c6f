"""The registry of remote knowledge servers: ``rag-mcp.json`` (reference 003's shape).

```json
{
  "docsRag": {
    "url": "https://docs.example.com/mcp",
    "groups": ["staff"],
    "enabled": true,
    "description": "Company docs",
    "timeout_s": 5,
    "auth": {"bearer_env": "DOCS_RAG_TOKEN"},
    "dataSources": [{"id": "legal", "name": "Legal", "groups": ["legal"]}]
  },
  "local": {"command": "groundkb", "args": ["--db", "other.db", "serve"]}
}
```

Each server is reached by ``url`` (streamable HTTP) or ``command`` + ``args`` (stdio).
``groups`` say which callers may use the server (none: every caller); a ``dataSources``
entry with ``groups`` narrows one of its sources further. Credentials are never written
in the file: ``auth.bearer_env`` names the environment variable that holds the server's
token (a token in the file is refused).

Where it is read from: the ``rag_registry`` setting if set; else ``rag-mcp.json`` beside
the settings file (or in the working directory), with ``rag-mcp.override.json`` beside it
replacing whole server entries, and ``~/.config/groundkb/rag-mcp.defaults.json``
providing servers neither names. :class:`Registry` re-reads the files when they change
(checked at most once a second) and logs what changed.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError

log = logging.getLogger(__name__)
BASE = "rag-mcp.json"
OVERRIDE = "rag-mcp.override.json"
DEFAULTS = Path("~/.config/groundkb/rag-mcp.defaults.json")
_KEYS = {"url", "command", "args", "groups", "enabled", "description", "timeout_s", "auth",
         "dataSources", "is_exclusive", "ui", "env"}  # fmt: skip
_SECRET_KEYS = {"token", "bearer", "api_key", "apikey", "password", "secret", "authorization"}


@dataclass(frozen=True, slots=True)
class DataSource:
    id: str
    name: str = ""
    groups: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RemoteServer:
    key: str
    url: str = ""
    command: str = ""
    args: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    enabled: bool = True
    description: str = ""
    timeout_s: float = 10.0
    bearer_env: str = ""
    data_sources: tuple[DataSource, ...] = ()

    def allows(self, groups: frozenset[str], admin_group: str) -> bool:
        """Whether a caller in ``groups`` may use this server."""
        return not self.groups or bool(groups & {*self.groups, admin_group})

    def source_allows(self, source: str, groups: frozenset[str], admin_group: str) -> bool:
        hint = next((d for d in self.data_sources if d.id == source), None)
        return hint is None or not hint.groups or bool(groups & {*hint.groups, admin_group})

    def token(self) -> str:
        return os.environ.get(self.bearer_env, "") if self.bearer_env else ""


def parse(data: Any, where: str) -> dict[str, RemoteServer]:
    """The servers of one registry file's JSON; ConfigError naming the file, the server
    and the field when something is wrong."""
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: must be an object of servers")
    return {str(k): _server(str(k), v, f"{where}: {k}") for k, v in data.items()}


def _server(key: str, raw: Any, where: str) -> RemoteServer:
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: must be an object")
    unknown = sorted(set(raw) - _KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown field {unknown[0]!r}")
    url, command = raw.get("url", ""), raw.get("command", "")
    if bool(url) == bool(command):
        raise ConfigError(f"{where}: give exactly one of 'url' or 'command'")
    if url and not (isinstance(url, str) and url.startswith(("http://", "https://"))):
        raise ConfigError(f"{where}: 'url' must be an http(s) URL")
    auth = raw.get("auth") or {}
    if not isinstance(auth, dict) or set(auth) - {"bearer_env"}:
        secret = sorted(set(auth) & _SECRET_KEYS) if isinstance(auth, dict) else []
        hint = (
            f"a credential ({secret[0]!r}) may not be written in the registry; "
            "put it in an environment variable and name it with 'bearer_env'"
            if secret
            else "'auth' takes only 'bearer_env' (the name of an environment variable)"
        )
        raise ConfigError(f"{where}: {hint}")
    timeout = raw.get("timeout_s", 10.0)
    if not isinstance(timeout, int | float) or not 0 < timeout <= 300:
        raise ConfigError(f"{where}: 'timeout_s' must be a number of seconds (0–300]")
    sources = raw.get("dataSources") or []
    if not isinstance(sources, list) or not all(
        isinstance(s, dict) and isinstance(s.get("id"), str) for s in sources
    ):
        raise ConfigError(f"{where}: 'dataSources' must be a list of objects with an 'id'")
    return RemoteServer(
        key=key,
        url=str(url),
        command=str(command),
        args=tuple(_strings(raw.get("args", []), f"{where}: args")),
        groups=tuple(_strings(raw.get("groups", []), f"{where}: groups")),
        enabled=bool(raw.get("enabled", True)),
        description=str(raw.get("description", "")),
        timeout_s=float(timeout),
        bearer_env=str(auth.get("bearer_env", "")),
        data_sources=tuple(
            DataSource(
                s["id"],
                str(s.get("name", "")),
                tuple(_strings(s.get("groups", []), f"{where}: dataSources groups")),
            )
            for s in sources
        ),
    )


def _strings(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where} must be a list of strings")
    return value


def registry_files(setting: str, config_path: str) -> tuple[Path, ...]:
    """The files to read, lowest precedence first (module doc); () when there is none."""
    if setting.strip():
        path = Path(setting.strip()).expanduser()
        if not path.is_file():
            raise ConfigError(f"rag_registry: {path} does not exist")
        return (path,)
    folder = Path(config_path).parent if config_path else Path.cwd()
    base = folder / BASE
    if not base.is_file():
        return ()
    defaults = DEFAULTS.expanduser()
    return tuple(p for p in (defaults, base, folder / OVERRIDE) if p.is_file())


def read(files: Sequence[Path]) -> dict[str, RemoteServer]:
    """The servers of ``files``, a later file's entry replacing an earlier one's."""
    servers: dict[str, RemoteServer] = {}
    for path in files:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ConfigError(f"cannot read {path}: {exc}") from exc
        servers.update(parse(data, str(path)))
    return servers


class Registry:
    """The current servers, re-read when a registry file changes."""

    def __init__(self, files: Sequence[Path]) -> None:
        self.files = tuple(files)
        self._lock = threading.Lock()
        self._servers = read(self.files)
        self._stamps = self._stat()
        self._checked = time.monotonic()

    @classmethod
    def from_settings(cls, rag_registry: str, config_path: str) -> Registry | None:
        files = registry_files(rag_registry, config_path)
        return cls(files) if files else None

    def _stat(self) -> tuple[tuple[int, int] | None, ...]:
        out: list[tuple[int, int] | None] = []
        for p in self.files:
            try:
                st = p.stat()
                out.append((st.st_mtime_ns, st.st_size))
            except OSError:
                out.append(None)
        return tuple(out)

    def servers(self) -> Mapping[str, RemoteServer]:
        """The servers now (re-read first if a file changed since the last check)."""
        if time.monotonic() - self._checked >= 1.0:
            self._checked = time.monotonic()
            if self._stat() != self._stamps:
                self.reload()
        return self._servers

    def reload(self) -> dict[str, list[str]]:
        """Re-read the files; returns (and logs) the servers added, removed and changed.
        A file that fails to parse leaves the previous servers in place (logged)."""
        with self._lock:
            stamps = self._stat()
            try:
                fresh = read(self.files)
            except ConfigError as exc:
                self._stamps = stamps
                log.warning("registry not reloaded, keeping the previous servers: %s", exc)
                return {"added": [], "removed": [], "changed": [], "error": [exc.message]}
            old = self._servers
            changes = {
                "added": sorted(set(fresh) - set(old)),
                "removed": sorted(set(old) - set(fresh)),
                "changed": sorted(k for k in set(fresh) & set(old) if fresh[k] != old[k]),
            }
            self._servers, self._stamps = fresh, stamps
        if any(changes.values()):
            log.warning(
                "registry reloaded: added %s, removed %s, changed %s",
                changes["added"] or "none",
                changes["removed"] or "none",
                changes["changed"] or "none",
            )
        return changes
