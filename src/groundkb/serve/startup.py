"""What ``groundkb serve`` does before it serves: logging, the banner, the socket.

- Logs go to stderr (stdout belongs to the stdio protocol). The per-query log
  (``groundkb.queries``, one JSON line per search) goes where ``query_log`` says:
  ``stderr`` (default), ``off``, or a file path (JSON Lines, appended).
- The banner (stderr) names the index, its size, the retrieval mode searches will run
  in (and why, when it is not the configured one) and every URL served.
- The HTTP socket is bound here, before the server starts, so that a port in use is
  our ``config_error`` suggesting ``--port``, not a server traceback; ``--port 0``
  picks a free port and the banner shows which.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import socket
import sys
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..access import audit
from ..errors import ConfigError
from ..ops import querylog
from ..ops.querylog import RedactingFormatter

if TYPE_CHECKING:
    from ..api import KnowledgeBase
    from ..settings import Settings

log = logging.getLogger(__name__)
_QUERY_HANDLER = "groundkb-query-log"


def configure_logging(settings: Settings) -> None:
    stderr = logging.StreamHandler(sys.stderr)  # secrets redacted, tracebacks included
    stderr.setFormatter(RedactingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=settings.log_level.upper(), handlers=[stderr], force=True)
    _route(querylog.LOGGER_NAME, settings.query_log, "query_log")
    _route(audit.LOGGER_NAME, settings.audit_log, "audit_log")
    for secret in (settings.admin_token,):
        querylog.add_secret(secret)


def _route(logger_name: str, target: str, setting: str) -> None:
    """Send one JSON-lines logger (query log, audit log) to stderr, a file, or nowhere."""
    logger = logging.getLogger(logger_name)
    name = f"groundkb-{setting}"
    for h in [h for h in logger.handlers if h.get_name() == name]:
        logger.removeHandler(h)
        h.close()
    target = target.strip()
    logger.propagate = False
    if target.lower() in ("off", "none", "", "false", "0"):
        logger.setLevel(logging.CRITICAL)
        return
    handler: logging.Handler
    if target.lower() == "stderr":
        handler = logging.StreamHandler(sys.stderr)
    else:
        try:
            handler = logging.FileHandler(target, encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"{setting}: cannot write {target}: {exc.strerror}") from exc
    handler.set_name(name)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)


@contextlib.contextmanager
def opened(settings: Settings) -> Iterator[KnowledgeBase]:
    from ..api import KnowledgeBase

    kb = KnowledgeBase.open(settings=settings, create=False)
    try:
        yield kb
    finally:
        kb.close()


def retrieval_state(kb: KnowledgeBase) -> tuple[str, str, str, str]:
    """(configured, mode searches run in now, why it differs, detail)."""
    state = kb.ops.retrieval(kb)
    return state.configured, state.mode, state.reason, state.detail


def banner(kb: KnowledgeBase, urls: list[tuple[str, str]]) -> str:
    s = kb.stats()
    configured, mode, _reason, detail = retrieval_state(kb)
    how = mode if mode == configured else f"{mode} ({detail}; configured {configured})"
    lines = [
        f"groundkb: index {s.path} ({s.backend}): {s.documents} documents, "
        f"{s.chunks} chunks in {s.sources} sources",
        f"groundkb: retrieval {how}",
    ]
    off = kb.disabled_sources()
    if off:
        lines.append(f"groundkb: disabled sources: {', '.join(sorted(off))}")
    width = max((len(label) for label, _ in urls), default=0)
    lines += [f"groundkb: {label.ljust(width)}  {url}" for label, url in urls]
    return "\n".join(lines)


def print_banner(kb: KnowledgeBase, urls: list[tuple[str, str]]) -> None:
    print(banner(kb, urls), file=sys.stderr, flush=True)


def warm_in_background(kb: KnowledgeBase) -> threading.Thread:
    """Warm ``kb`` up (``KnowledgeBase.warm``) on a thread of its own while the server
    starts answering."""
    thread = threading.Thread(target=kb.warm, name="groundkb-warm", daemon=True)
    thread.start()
    return thread


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port``, or our error (port in use, bad address)."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    except socket.gaierror as exc:
        raise ConfigError(f"cannot listen on {host!r}: {exc.strerror}; check --host") from exc
    # proto=IPPROTO_TCP: asyncio turns Nagle off (TCP_NODELAY) only on sockets that say
    # so; without it every keep-alive response waits ~40 ms for a delayed ACK
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError(
                f"port {port} on {host} is already in use (another server?); "
                f"choose another with --port, e.g. --port {port + 1}"
            ) from exc
        if exc.errno in (errno.EACCES, errno.EPERM):
            raise ConfigError(
                f"not allowed to listen on port {port}; use a port above 1023 with --port"
            ) from exc
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror}") from exc
    sock.set_inheritable(True)
    return sock


def url_host(host: str) -> str:
    if host in ("0.0.0.0", "::", ""):
        return "127.0.0.1"
    return f"[{host}]" if ":" in host else host
