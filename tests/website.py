"""A small documentation site served over real HTTP on loopback, for crawler tests.

Pages live in a dict the test edits between crawls. Every response carries an ETag
(unless a page opts out) and honours If-None-Match / If-Modified-Since with 304, and
every request is recorded (path and headers) for assertions.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Page:
    body: bytes = b""
    content_type: str = "text/html; charset=utf-8"
    status: int = 200
    location: str = ""
    etag: bool = True
    last_modified: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    stall: threading.Event | None = None  # wait for this before answering


@dataclass
class Request:
    path: str
    headers: dict[str, str]
    status: int


class Site:
    def __init__(self) -> None:
        self.pages: dict[str, Page] = {}
        self.requests: list[Request] = []
        self.lock = threading.Lock()
        self.base = ""

    def html(self, path: str, body: str, **kw: object) -> None:
        self.pages[path] = Page(body.encode("utf-8"), **kw)  # type: ignore[arg-type]

    def raw(self, path: str, body: bytes, content_type: str, **kw: object) -> None:
        self.pages[path] = Page(body, content_type, **kw)  # type: ignore[arg-type]

    def redirect(self, path: str, location: str, status: int = 301) -> None:
        self.pages[path] = Page(status=status, location=location)

    def url(self, path: str) -> str:
        return self.base + path

    def hits(self, path: str) -> list[Request]:
        with self.lock:
            return [r for r in self.requests if r.path == path]


def _handler(site: Site) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            page = site.pages.get(self.path)
            status = 404 if page is None else page.status
            headers: dict[str, str] = {}
            body = b"not found"
            if page is not None:
                if page.stall is not None:
                    page.stall.wait(10)
                headers.update(page.headers)
                body = page.body
                if page.location:
                    headers["Location"] = page.location
                if status == 200:
                    headers["Content-Type"] = page.content_type
                    etag = '"' + hashlib.sha1(body).hexdigest()[:12] + '"' if page.etag else ""
                    if etag:
                        headers["ETag"] = etag
                    if page.last_modified:
                        headers["Last-Modified"] = page.last_modified
                    if (etag and self.headers.get("If-None-Match") == etag) or (
                        page.last_modified
                        and self.headers.get("If-Modified-Since") == page.last_modified
                    ):
                        status, body = 304, b""
            with site.lock:
                site.requests.append(Request(self.path, dict(self.headers.items()), status))
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            if status != 304:
                self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if status != 304:
                self.wfile.write(body)

    return Handler


@contextmanager
def serve(site: Site) -> Iterator[Site]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(site))
    server.daemon_threads = True
    site.base = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield site
    finally:
        for page in site.pages.values():
            if page.stall is not None:
                page.stall.set()
        server.shutdown()
        server.server_close()
        thread.join()
