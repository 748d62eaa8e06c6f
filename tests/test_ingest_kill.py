"""A process killed in the middle of an ingest loses nothing: the next run finishes it.

The kill is not left to timing: the child process wraps the store's ``write`` so that it
sends itself SIGKILL right after the Nth document is committed, at a known point.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from groundkb import KnowledgeBase, Settings

pytestmark = pytest.mark.skipif(os.name != "posix", reason="needs SIGKILL")

_KILLER = """
import os, signal, sys
from groundkb.store.sqlite import SQLiteStore

after = int(os.environ["KILL_AFTER_WRITES"])
real = SQLiteStore.write
written = 0

def write(self, doc, chunks):
    global written
    result = real(self, doc, chunks)
    written += 1
    if written >= after:
        os.kill(os.getpid(), signal.SIGKILL)
    return result

SQLiteStore.write = write
from groundkb.serve.cli import main
sys.argv = ["groundkb", *sys.argv[1:]]
main()
"""


def _spec(operations: int) -> dict[str, object]:
    paths = {
        f"/things{n}": {"get": {"summary": f"List things number {n}", "responses": {}}}
        for n in range(operations)
    }
    return {"openapi": "3.0.3", "info": {"title": "T", "version": "1"}, "paths": paths}


def _groundkb(db: Path, *args: str, kill_after: int = 0) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GROUNDKB_EMBEDDER": "none"}
    if kill_after:
        env["KILL_AFTER_WRITES"] = str(kill_after)
        cmd = [sys.executable, "-c", _KILLER, "--db", str(db), *args]
    else:
        cmd = [sys.executable, "-m", "groundkb", "--db", str(db), *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)


def test_an_openapi_ingest_killed_after_some_operations_is_completed_by_the_next_run(
    tmp_path: Path,
) -> None:
    spec = tmp_path / "api" / "things.json"
    spec.parent.mkdir()
    spec.write_text(json.dumps(_spec(40)))
    db = tmp_path / "kb.db"
    killed = _groundkb(db, "ingest", str(spec.parent), "-s", "api", "--json", kill_after=7)
    assert killed.returncode == -signal.SIGKILL
    with KnowledgeBase.open(db, Settings(embedder="none")) as kb:
        assert kb.stats().documents == 7  # the kill happened where the test put it

    again = _groundkb(db, "ingest", str(spec.parent), "-s", "api", "--json")
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    assert (report["inserted"], report["unchanged"]) == (33, 7)
    third = json.loads(_groundkb(db, "ingest", str(spec.parent), "-s", "api", "--json").stdout)
    assert (third["inserted"], third["updated"], third["unchanged"]) == (0, 0, 40)
    with KnowledgeBase.open(db, Settings(embedder="none")) as kb:
        assert kb.stats().documents == 40


def test_a_changed_spec_killed_half_way_is_rewritten_and_its_removed_operations_deleted(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "api"
    folder.mkdir()
    spec = folder / "things.json"
    spec.write_text(json.dumps(_spec(20)))
    db = tmp_path / "kb.db"
    assert _groundkb(db, "ingest", str(folder), "-s", "api").returncode == 0
    smaller = _spec(12)
    for item in smaller["paths"].values():  # type: ignore[attr-defined]
        item["get"]["description"] = "Changed."
    spec.write_text(json.dumps(smaller))
    killed = _groundkb(db, "ingest", str(folder), "-s", "api", kill_after=12)
    assert killed.returncode == -signal.SIGKILL  # all 12 written, the 8 others not deleted
    report = json.loads(_groundkb(db, "ingest", str(folder), "-s", "api", "--json").stdout)
    assert (report["unchanged"], report["deleted"]) == (12, 8)
    with KnowledgeBase.open(db, Settings(embedder="none")) as kb:
        assert kb.stats().documents == 12
        assert "Changed." in kb.get("things:GET /things3").content
