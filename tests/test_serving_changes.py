"""Serving while the index changes: derived data rebuilt in the background at a bounded
rate (the previous version serving meanwhile), a replaced database file reopened, and
/health guarded like /mcp."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import httpx2
import pytest

from groundkb import KnowledgeBase, Settings
from groundkb.refreshing import Refreshing
from groundkb.serve.http import create_app

from .conftest import EXAMPLES
from .serving import running


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Spawned:
    """Background builds held until the test runs them."""

    def __init__(self) -> None:
        self.pending: list[Callable[[], None]] = []

    def __call__(self, fn: Callable[[], None]) -> None:
        self.pending.append(fn)

    def run(self) -> None:
        while self.pending:
            self.pending.pop(0)()


def _refreshing(key: list[int], clock: Clock, spawn: Spawned, took: float = 1.0
                ) -> tuple[Refreshing[int, str], list[int]]:  # fmt: skip
    built: list[int] = []

    def build(k: int) -> str:
        built.append(k)
        clock.now += took
        return f"v{k}"

    return Refreshing(lambda: key[0], build, wait_s=0.0, clock=clock, spawn=spawn), built


def test_a_change_is_built_in_the_background_while_the_previous_version_serves() -> None:
    key, clock, spawn = [1], Clock(), Spawned()
    data, built = _refreshing(key, clock, spawn)
    assert data.get() == "v1" and built == [1]  # the first build: in the caller
    clock.now += 10
    key[0] = 2
    assert data.get() == "v1"  # served at once from the previous version
    assert data.get() == "v1" and len(spawn.pending) == 1  # one build, however many asks
    spawn.run()
    assert data.get() == "v2" and built == [1, 2]


def test_a_value_built_before_is_rebuilt_in_the_background_on_request() -> None:
    """``refresh_in_background``: for a caller that takes another way meanwhile (the
    store's term statistics and keyword candidates read FTS5); never the first build."""
    key, clock, spawn = [1], Clock(), Spawned()
    data, built = _refreshing(key, clock, spawn)
    data.refresh_in_background()
    assert not spawn.pending and data.peek() is None  # never the first build
    data.get()
    clock.now += 10
    key[0] = 2  # another process wrote
    assert data.peek() is None
    data.refresh_in_background()
    data.refresh_in_background()
    assert len(spawn.pending) == 1  # one build at a time
    spawn.run()
    assert data.peek() == "v2" and built == [1, 2]
    clock.now += 10
    data.invalidate()  # this process wrote: a build that starts after it reads it
    assert data.peek() is None
    data.refresh_in_background()
    spawn.run()
    assert data.peek() == "v2" and built == [1, 2, 2]
    clock.now += 10
    data.invalidate()
    data.refresh_in_background()
    data.invalidate()  # a write while that build runs: it may not have read it
    spawn.run()
    assert data.peek() is None and data.get() == "v2" and built == [1, 2, 2, 2, 2]


def test_rebuilds_rest_four_times_their_duration_however_fast_the_index_changes() -> None:
    key, clock, spawn = [1], Clock(), Spawned()
    data, built = _refreshing(key, clock, spawn, took=1.0)
    data.get()
    for k in range(2, 40):  # a write, then a search, every 0.1 s
        key[0] = k
        clock.now += 0.1
        data.get()
        spawn.run()
    # 3.8 s of writes: a build takes 1 s and rests 4 s, so one background build at most
    assert len(built) <= 2
    clock.now += 5
    data.get()
    spawn.run()
    assert data.get() == "v39"


def test_after_its_own_write_the_next_read_is_fresh() -> None:
    key, clock, spawn = [1], Clock(), Spawned()
    data, built = _refreshing(key, clock, spawn)
    data.get()
    key[0] = 2
    data.invalidate()
    assert data.get() == "v2"  # built in the caller, not stale
    assert spawn.pending == [] and built == [1, 2]


def test_an_older_background_build_never_replaces_a_newer_value() -> None:
    key, clock, spawn = [1], Clock(), Spawned()
    data, _ = _refreshing(key, clock, spawn)
    data.get()
    clock.now += 10
    key[0] = 2
    data.get()  # a background build is queued for key 2 ...
    key[0] = 3
    data.invalidate()
    assert data.get() == "v3"  # ... but an own write built 3 in the meantime
    key[0] = 2  # the queued build now reads key 2 (as a slow build started earlier would)
    spawn.run()
    key[0] = 3
    assert data.get() == "v3"


def test_searches_while_another_process_ingests_use_the_previous_index_until_rebuilt(
    tmp_path: Path,
) -> None:
    db = tmp_path / "kb.db"
    docs = tmp_path / "docs"
    shutil.copytree(EXAMPLES / "docs", docs)
    settings = Settings(db=str(db), embedder="none")
    with (
        KnowledgeBase.open(settings=settings) as serving,
        KnowledgeBase.open(settings=settings) as writer,
    ):
        assert writer.ingest(docs, source="docs").ok
        spawn, clock = Spawned(), Clock()
        data = serving.searcher._derived_data
        data._spawn, data.clock, data.wait_s = spawn, clock, 0.0
        assert serving.search("explain workspace").verdict.kind == "answer"
        builds = data.builds
        for n in range(20):  # another process writes one document at a time
            (docs / f"new{n}.md").write_text(f"# Gizmo {n}\n\nGizmo number {n} frobnicates.\n")
            writer.ingest(docs, source="docs")
            serving.search("gizmo frobnicates")
        assert data.builds == builds and len(spawn.pending) == 1  # not one build per write
        spawn.run()
        found = serving.search("gizmo frobnicates")
        assert found.hits and found.hits[0].title.startswith("Gizmo")
        assert data.builds == builds + 1


def test_a_database_file_deleted_and_built_again_is_reopened(tmp_path: Path) -> None:
    db = tmp_path / "kb.db"
    settings = Settings(db=str(db), embedder="none")
    serving = KnowledgeBase.open(settings=settings)
    try:
        assert serving.ingest(EXAMPLES / "docs", source="docs").ok
        assert serving.search("explain workspace").hits
        for suffix in ("", "-wal", "-shm"):
            if Path(f"{db}{suffix}").exists():
                os.remove(f"{db}{suffix}")
        assert serving.search("explain workspace").hits  # the open copy serves meanwhile
        with KnowledgeBase.open(settings=settings) as other:
            assert other.ingest(EXAMPLES / "entries", source="commands").ok
        assert [s.source.name for s in serving.sources()] == ["commands"]
        assert not serving.search("explain workspace", source="docs").hits
        assert serving.get_command("helios gw users list").id == "cmd-gw-users-list"
    finally:
        serving.close()


def test_health_refuses_other_hosts_like_mcp_on_loopback(tmp_path: Path) -> None:
    with KnowledgeBase.open(tmp_path / "kb.db", Settings(embedder="none")) as kb:
        kb.ingest(EXAMPLES / "docs", source="docs")
        with running(create_app(kb)) as base, httpx2.Client(base_url=base) as http:
            evil = {"Host": "attacker.example"}
            health = http.get("/health", headers=evil)
            assert health.status_code == 403 and "documents" not in health.text
            assert http.get("/mcp", headers=evil).status_code in (403, 421)
            assert http.get("/health").json()["documents"] == 8


@pytest.mark.parametrize("location", [":memory:", "postgresql://x/y"])
def test_only_sqlite_files_are_watched(location: str) -> None:
    from groundkb.ops.dbfile import FileWatch

    assert FileWatch(location).replaced() is False
