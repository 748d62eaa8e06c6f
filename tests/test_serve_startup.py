"""`groundkb serve` start-up, as a user runs it: the banner names the index, its size,
the retrieval mode and every URL; a port in use is our error suggesting --port."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

from groundkb import KnowledgeBase
from groundkb.serve.startup import bind

from .conftest import EXAMPLES


def _db(tmp_path: Path) -> Path:
    db = tmp_path / "kb.db"
    with KnowledgeBase.open(db) as kb:
        assert kb.ingest(EXAMPLES / "docs", source="docs").ok
    return db


def test_serve_prints_the_index_its_size_the_mode_and_the_urls(tmp_path: Path) -> None:
    db = _db(tmp_path)
    cmd = [sys.executable, "-m", "groundkb", "--db", str(db), "serve", "--http", "--port", "0"]
    server = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert server.stderr is not None
        lines = []
        for line in server.stderr:  # the banner ends with the admin line
            lines.append(line.rstrip())
            if "admin" in line:
                break
        banner = "\n".join(lines)
        assert f"index {db} (sqlite): 8 documents, 20 chunks in 1 sources" in banner
        assert "retrieval keyword (no embedder configured or installed; configured hybrid)" in (
            banner
        )
        console = next(x for x in lines if "console" in x).split()[-1]
        assert console.startswith("http://127.0.0.1:") and not console.endswith(":0/")
        for label in ("REST API", "MCP", "metrics"):
            assert label in banner
        assert "admin     off (no admin_token)" in banner
        with urllib.request.urlopen(console + "health", timeout=10) as r:
            assert json.loads(r.read())["documents"] == 8
    finally:
        server.terminate()
        server.wait(timeout=10)
        if server.stderr:
            server.stderr.close()


def test_a_port_in_use_is_our_error_suggesting_another_port(tmp_path: Path) -> None:
    db = _db(tmp_path)
    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        cmd = ["groundkb", "--db", str(db), "serve", "--http", "--port", str(port)]
        r = subprocess.run(
            [sys.executable, "-m", *cmd],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert r.returncode == 2
    assert r.stderr.strip() == (
        f"error [config_error]: port {port} on 127.0.0.1 is already in use (another server?); "
        f"choose another with --port, e.g. --port {port + 1}"
    )
    assert "Traceback" not in r.stderr


def test_the_listening_socket_is_tcp_so_responses_are_not_delayed() -> None:
    # asyncio disables Nagle only on sockets whose proto is IPPROTO_TCP; a plain
    # socket(family, SOCK_STREAM) made every keep-alive response wait ~40 ms for an ACK
    with bind("127.0.0.1", 0) as sock:
        assert sock.proto == socket.IPPROTO_TCP
