"""Serve an ASGI app over real HTTP on loopback, in a thread, for the duration of a test.

The socket is bound and listening before the server thread starts, so a client can
connect at once (the kernel queues it until the server accepts): no waiting loop.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

import uvicorn

from groundkb.serve.startup import bind


@contextlib.contextmanager
def running(app: Any) -> Iterator[str]:
    """Serve ``app`` on 127.0.0.1 (a free port); yields the base URL."""
    with running_at(lambda _base: app) as base:
        yield base


@contextlib.contextmanager
def running_at(make_app: Callable[[str], Any]) -> Iterator[str]:
    """Serve the app ``make_app(base_url)`` builds for the URL it will be reached at."""
    sock = bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    app = make_app(f"http://127.0.0.1:{port}")
    server = uvicorn.Server(
        uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()
