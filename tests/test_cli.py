"""The command line, run as a real subprocess on a real index file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from .conftest import EXAMPLES


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "groundkb", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_ingest_search_get_sources_stats_delete(tmp_path: Path) -> None:
    db = str(tmp_path / "kb.db")
    r = run("--db", db, "ingest", str(EXAMPLES / "docs"), "--source", "docs", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "8 inserted, 0 updated, 0 unchanged, 0 deleted" in r.stdout
    r = run("--db", db, "ingest", str(EXAMPLES / "docs"), "-s", "docs", "--json", cwd=tmp_path)
    assert json.loads(r.stdout)["unchanged"] == 8

    r = run("--db", db, "search", "explain workspace", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.startswith("verdict: answer")
    assert "concepts/workspace#0" in r.stdout
    r = run("--db", db, "search", "explain workspace", "--json", "--limit", "1", cwd=tmp_path)
    data = json.loads(r.stdout)
    assert data["verdict"]["kind"] == "answer" and len(data["hits"]) == 1

    r = run("--db", db, "get", "concepts/notes", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.startswith("# Notes")
    r = run("--db", db, "sources", cwd=tmp_path)
    assert "docs" in r.stdout and "8" in r.stdout
    r = run("--db", db, "stats", "--json", cwd=tmp_path)
    assert json.loads(r.stdout)["documents"] == 8
    r = run("--db", db, "delete", "concepts/notes", cwd=tmp_path)
    assert r.returncode == 0 and "deleted 1" in r.stdout


def test_errors_are_one_line_with_a_code_and_exit_2(tmp_path: Path) -> None:
    db = str(tmp_path / "kb.db")
    assert (
        run("--db", db, "ingest", str(EXAMPLES / "docs"), "-s", "d", cwd=tmp_path).returncode == 0
    )
    r = run("--db", db, "get", "missing", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip() == "error [not_found]: no document with id 'missing'"
    r = run("--db", db, "search", "x", "--type", "bogus", cwd=tmp_path)
    assert r.returncode == 2 and "error [invalid_input]" in r.stderr


def test_failed_files_give_exit_1_and_name_the_file(tmp_path: Path) -> None:
    d = tmp_path / "docs"
    d.mkdir()
    (d / "ok.md").write_text("# Ok\n\nfine")
    (d / "bad.md").write_bytes(b"\xff\xfe\x00bad")
    r = run("--db", str(tmp_path / "kb.db"), "ingest", str(d), "-s", "d", cwd=tmp_path)
    assert r.returncode == 1
    assert "1 inserted" in r.stdout and "bad.md: binary file" in r.stdout


def test_config_file_sets_db_and_synonyms(tmp_path: Path) -> None:
    (tmp_path / "groundkb.toml").write_text(
        f'db = "kb.db"\nsynonyms = "{EXAMPLES / "synonyms.txt"}"\n'
    )
    assert run("ingest", str(EXAMPLES / "docs"), "-s", "docs", cwd=tmp_path).returncode == 0
    assert (tmp_path / "kb.db").exists()
    r = run("search", "shortcuts", "--json", cwd=tmp_path)
    assert json.loads(r.stdout)["hits"][0]["doc_id"] == "widgets/quick-links"


def test_help_lists_every_command_with_a_description(tmp_path: Path) -> None:
    r = run("--help", cwd=tmp_path)
    for cmd in ("ingest", "search", "get", "sources", "delete", "stats", "serve", "settings"):
        assert cmd in r.stdout
