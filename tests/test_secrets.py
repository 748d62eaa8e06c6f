"""Credentials stay where they belong: in the request to the configured embedder only.

Real HTTP on loopback: an embeddings server that redirects, and a second server that
records what reaches it.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from groundkb import KnowledgeBase, Settings
from groundkb.embed import EmbedderError
from groundkb.embed.http import OpenAIEmbedder
from groundkb.errors import ConfigError
from groundkb.ops.querylog import RedactingFormatter, error_text
from groundkb.settings import load_settings

from .conftest import EXAMPLES

KEY = "sk-test1234567890abcdefghijkl"


class Recorder:
    """A loopback HTTP server; ``reply(path) -> (status, headers, body)`` answers."""

    def __init__(self, reply: Any) -> None:
        self.headers: list[dict[str, str]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _answer(self) -> None:
                outer.headers.append({k.lower(): v for k, v in self.headers.items()})
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                status, headers, out = reply(self.path, body)
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            do_GET = do_POST = _answer

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def elsewhere() -> Iterator[Recorder]:
    r = Recorder(lambda path, body: (200, {"Content-Type": "application/json"}, b"{}"))
    yield r
    r.close()


def test_an_api_key_with_a_trailing_newline_is_used_without_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    vector = json.dumps({"data": [{"index": 0, "embedding": [1.0, 0.0]}]}).encode()
    server = Recorder(lambda path, body: (200, {"Content-Type": "application/json"}, vector))
    try:
        monkeypatch.setenv("TEST_KEY", KEY + "\n")
        emb = OpenAIEmbedder("m", base_url=server.url + "/v1", api_key_env="TEST_KEY")
        assert emb.embed_query("x").shape == (2,)
        assert server.headers[0]["authorization"] == f"Bearer {KEY}"
    finally:
        server.close()


def test_an_api_key_that_no_header_can_carry_is_refused_without_showing_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TEST_KEY", KEY[:10] + "\n" + KEY[10:])
    with pytest.raises(ConfigError) as err:
        OpenAIEmbedder("m", base_url="http://127.0.0.1:9/v1", api_key_env="TEST_KEY")
    assert "$TEST_KEY" in err.value.message and KEY[:10] not in err.value.message


def test_a_redirect_is_not_followed_so_the_key_never_reaches_another_host(
    monkeypatch: pytest.MonkeyPatch, elsewhere: Recorder
) -> None:
    target = elsewhere.url + "/steal/embeddings"
    redirecting = Recorder(lambda path, body: (302, {"Location": target}, b""))
    try:
        monkeypatch.setenv("TEST_KEY", KEY)
        emb = OpenAIEmbedder(
            "m", base_url=redirecting.url + "/v1", api_key_env="TEST_KEY", max_retries=0
        )
        with pytest.raises(EmbedderError) as err:
            emb.embed_query("x")
        assert "redirects are not followed" in err.value.message
        assert elsewhere.url in err.value.message and KEY not in err.value.message
        assert elsewhere.headers == []  # nothing at all reached the other host
    finally:
        redirecting.close()


def test_an_exception_text_is_redacted_before_it_reaches_a_result_or_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from groundkb.embed.hashing import HashingEmbedder

    def leaky(self: HashingEmbedder, text: str) -> Any:
        raise ValueError(f"Invalid header value b'Bearer {KEY}\\n'")

    settings = Settings(db=str(tmp_path / "kb.db"), embedder="hashing", min_vector_hit=-1.0)
    with KnowledgeBase.open(settings=settings) as kb:
        assert kb.ingest(EXAMPLES / "docs", source="docs").ok
        monkeypatch.setattr(HashingEmbedder, "embed_query", leaky)
        with caplog.at_level(logging.WARNING):
            result = kb.search("explain workspace")
    assert result.fallback == "embedder_failed"
    assert "embedder failed" in result.notice and KEY not in result.notice
    assert "[redacted]" in result.notice
    assert all(KEY not in r.getMessage() for r in caplog.records)
    assert KEY not in error_text(RuntimeError(f"token={KEY}"))
    record = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed: %s", (KEY,), None)
    assert KEY not in RedactingFormatter("%(message)s").format(record)


def test_a_settings_file_found_in_the_working_directory_cannot_choose_where_keys_go(
    tmp_path: Path,
) -> None:
    config = tmp_path / "groundkb.toml"
    config.write_text('embedder = "openai:m"\nembedder_url = "http://attacker.example/v1"\n')
    with pytest.raises(ConfigError, match="GROUNDKB_EMBEDDER_URL"):
        _discovered(tmp_path)
    config.write_text('embedder_key_env = "AWS_SECRET_ACCESS_KEY"\n')
    with pytest.raises(ConfigError, match="embedder_key_env"):
        _discovered(tmp_path)
    trusted = load_settings(config, env={})  # named explicitly: the user trusts it
    assert trusted.embedder_key_env == "AWS_SECRET_ACCESS_KEY" and trusted.config_trusted
    from_env = load_settings(env={"GROUNDKB_EMBEDDER_URL": "http://127.0.0.1:1/v1"})
    assert from_env.embedder_url == "http://127.0.0.1:1/v1"


def _discovered(folder: Path) -> None:
    """Load settings as a command run in ``folder`` does, without naming the file."""
    code = "from groundkb.settings import load_settings; load_settings()"
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=folder, capture_output=True, text=True, timeout=60
    )
    if run.returncode:
        raise ConfigError(run.stderr.strip().splitlines()[-1])


def test_the_cli_refuses_such_a_file_in_one_line_and_accepts_it_with_config(
    tmp_path: Path,
) -> None:
    (tmp_path / "groundkb.toml").write_text('embedder_url = "http://attacker.example/v1"\n')
    cmd = [sys.executable, "-m", "groundkb", "settings", "--json"]
    refused = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2
    assert refused.stderr.startswith("error [config_error]: groundkb.toml sets embedder_url")
    named = [sys.executable, "-m", "groundkb", "--config", "groundkb.toml", "settings", "--json"]
    ok = subprocess.run(named, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0 and json.loads(ok.stdout)["embedder_url"].startswith("http://")
