"""The SQLite store's vector search: the int8 scan finds exactly what the float32 product
finds (``store/exact.py``), on real vectors stored by a real index and on adversarial ones."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from groundkb import KnowledgeBase, Settings
from groundkb.errors import ConfigError
from groundkb.models import Filters
from groundkb.store import exact
from groundkb.store.exact import Int8Scan, VectorMatrix

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")


def unit_rows(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    m = rng.standard_normal((n, dim)).astype(np.float32)
    m[:, 0] += 3.0  # all rows lean one way, as sentence embeddings do: scores crowd together
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def matrix_of(m: np.ndarray, sources: list[str] | None = None) -> VectorMatrix:
    n = len(m)
    sources = sources or ["a"] * n
    rows = [
        (
            f"doc{i // 3}#{i % 3}",
            "page" if i % 2 else "api",
            f"cat{i % 5}",
            sources[i],
            m[i].tobytes(),
        )
        for i in range(n)
    ]
    return VectorMatrix.build("t", rows, m.shape[1])


def exact_nearest(
    vm: VectorMatrix, q: np.ndarray, filters: Filters, k: int, monkeypatch: pytest.MonkeyPatch
) -> list[tuple[str, float]]:
    with monkeypatch.context() as patch:
        patch.setattr(exact, "INT8_MIN_ROWS", len(vm.ids) + 1)  # the float32 product alone
        return vm.nearest(q.tobytes(), filters, k)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(7)


def test_the_int8_bound_holds_for_every_row(rng: np.random.Generator) -> None:
    m = unit_rows(rng, 2000, 64)
    m[5] = 0.0
    m[5, 3] = 1.0  # one large component: the coarsest int8 step a row can have
    m[6] = 0.0  # no vector at all: scored 0, exactly
    scan = Int8Scan.build(m)
    assert scan is not None
    for q in unit_rows(rng, 50, 64):
        approx, bound = scan.scores(q)
        assert np.all(np.abs(m @ q - approx) <= bound)
        assert np.median(np.abs(m @ q - approx)) < np.median(bound)  # a bound, not a guess


@pytest.mark.parametrize("k", [1, 10, 50, 400])
def test_the_int8_scan_finds_what_the_float32_product_finds(
    rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch, k: int
) -> None:
    m = unit_rows(rng, 3000, 48)
    m[100:110] = m[7]  # duplicate chunks: equal scores, kept in row order by both
    m[200] = 0.0
    sources = ["a" if i % 3 else "b" for i in range(len(m))]
    vm = matrix_of(m, sources)
    scan = Int8Scan.build(vm.matrix)
    assert scan is not None
    queries = [*unit_rows(rng, 40, 48), m[7], m[2999]]
    for filters in (
        Filters(),
        Filters(sources=("b",)),
        Filters(types=("api",), categories=("cat1",)),
    ):
        for q in queries:
            want = exact_nearest(vm, q, filters, k, monkeypatch)
            got = vm.nearest(q.tobytes(), filters, k, scan=scan)
            assert got == want  # the same chunks in the same order with the same scores
    dup = vm.nearest(m[7].tobytes(), Filters(), 11, scan=scan)
    assert [c for c, _ in dup] == [vm.ids[7], *vm.ids[100:110]]


def test_a_filter_that_allows_nothing_or_few_rows(
    rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    m = unit_rows(rng, 500, 16)
    sources = ["a"] * 497 + ["b"] * 3
    vm = matrix_of(m, sources)
    scan = Int8Scan.build(vm.matrix)
    q = m[0]
    assert vm.nearest(q.tobytes(), Filters(sources=("none",)), 10, scan=scan) == []
    few = vm.nearest(q.tobytes(), Filters(sources=("b",)), 10, scan=scan)
    assert few == exact_nearest(vm, q, Filters(sources=("b",)), 10, monkeypatch)
    assert [c for c, _ in few] and len(few) == 3


def test_large_matrices_scan_int8_from_their_third_search(
    rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(exact, "INT8_MIN_ROWS", 100)
    vm = matrix_of(unit_rows(rng, 300, 16))
    small = matrix_of(unit_rows(rng, 99, 16))
    q = unit_rows(rng, 1, 16)[0].tobytes()
    for _ in range(5):
        small.nearest(q, Filters(), 5)
    assert small.int8 is None and not small._int8.started
    want = vm.nearest(q, Filters(), 5)
    vm.nearest(q, Filters(), 5)
    assert not vm._int8.started  # replaced vectors (a write) never paid for a copy
    assert vm.nearest(q, Filters(), 5) == want  # the third search starts the build
    assert vm._int8.ready.wait(30)
    assert isinstance(vm.int8, Int8Scan)
    assert vm.nearest(q, Filters(), 5) == want


def test_a_process_that_exits_while_the_int8_copy_is_built_exits_cleanly(
    tmp_path: Path,
) -> None:
    """A script that searches three times and ends at once: the build started by the
    third search is still inside onnxruntime. Python kills a daemon thread there as it
    retakes the GIL, and the unwinding aborted the process (exit 134, 2 runs in 10);
    the build now finishes first. The build here is made slow, so the exit surely
    comes while it runs."""
    marker = tmp_path / "built"
    script = tmp_path / "exit_early.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import time
            import numpy as np
            from groundkb.models import Filters
            from groundkb.store import exact

            real = exact.Int8Scan.build

            def slow(matrix):
                time.sleep(0.5)
                scan = real(matrix)
                open({str(marker)!r}, "w").write("built")
                return scan

            exact.Int8Scan.build = staticmethod(slow)
            exact.INT8_MIN_ROWS = 100
            m = np.random.default_rng(7).standard_normal((300, 16)).astype(np.float32)
            rows = [(f"d{{i}}#0", "page", "c", "s", m[i].tobytes()) for i in range(300)]
            vm = exact.VectorMatrix.build("t", rows, 16)
            for _ in range(3):
                vm.nearest(m[1].tobytes(), Filters(), 5)
            """
        )
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert marker.read_text() == "built"


def test_an_index_searches_the_same_through_the_int8_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real index (hashing embedder) answers hybrid searches the same with and without
    the int8 scan: hits, order, scores and verdicts."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(40):
        (docs / f"page{i}.md").write_text(
            f"# Topic {i}\n\nHow to configure widget {i} and rotate key {i % 7}.\n\n"
            f"## Details {i}\n\nThe gadget {i} needs restarting after an upgrade of {i % 3}.\n",
            encoding="utf-8",
        )
    settings = Settings(db=str(tmp_path / "kb.db"), embedder="hashing", retrieval="hybrid")
    queries = ["configure widget 3", "rotate key", "restart the gadget after upgrade", "topic 12"]
    with KnowledgeBase.open(settings=settings) as kb:
        kb.ingest(docs, source="docs")
        monkeypatch.setattr(exact, "INT8_MIN_ROWS", 10**9)
        plain = [kb.search(q, limit=10) for q in queries]
        monkeypatch.setattr(exact, "INT8_MIN_ROWS", 1)
        for q in queries[:3]:  # the third search of these vectors starts the int8 copy
            kb.search(q)
        matrix = kb.store._vectors()
        assert matrix._int8.ready.wait(30)
        assert isinstance(matrix.int8, Int8Scan)
        scanned = [kb.search(q, limit=10) for q in queries]
    for a, b in zip(plain, scanned, strict=True):
        assert [(h.chunk_id, h.score) for h in a.hits] == [(h.chunk_id, h.score) for h in b.hits]
        assert a.verdict == b.verdict


def test_the_int8_copy_can_be_turned_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(exact, "INT8_MIN_ROWS", 1)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Widgets\n\nConfigure a widget.\n", encoding="utf-8")
    settings = Settings(
        db=str(tmp_path / "kb.db"), embedder="hashing", retrieval="hybrid", int8_vectors=False
    )
    with KnowledgeBase.open(settings=settings) as kb:
        kb.ingest(docs, source="docs")
        for _ in range(4):
            assert kb.search("configure a widget").hits
        assert kb.store._vectors().int8 is None
        assert not kb.store._vectors()._int8.started
        with pytest.raises(ConfigError, match="int8_vectors"):
            kb.reload(settings.replace(int8_vectors=True))


def test_a_warm_up_builds_the_int8_copy_unless_chunks_wait_for_vectors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(exact, "INT8_MIN_ROWS", 1)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Widgets\n\nConfigure a widget.\n", encoding="utf-8")
    settings = Settings(db=str(tmp_path / "kb.db"), embedder="hashing", retrieval="hybrid")
    with KnowledgeBase.open(settings=settings) as kb:
        kb.ingest(docs, source="docs")
        kb.warm()  # no search yet: the warm-up built the copy on its own thread
        assert isinstance(kb.store._vectors().int8, Int8Scan)
        assert kb.search("configure a widget").hits
    (docs / "b.md").write_text("# Gadgets\n\nRestart a gadget.\n", encoding="utf-8")
    with KnowledgeBase.open(settings=settings.replace(embed_on_ingest=False)) as kb:
        kb.ingest(docs, source="docs")  # b.md waits for its vector
        kb.warm()
        assert not kb.store._vectors()._int8.started  # vectors about to change: no copy
