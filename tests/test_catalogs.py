from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from groundkb import KnowledgeBase
from groundkb.errors import InvalidInput, NotFound
from groundkb.ingest import ingest_python_cli
from groundkb.ingest.validate import validate_store
from groundkb.serve.cli import cli
from groundkb.serve.schemas import command_lookup_out

from .conftest import FIXTURES, SHARED
from .docmaker import TLDR_ALIAS_PAGES, write_pages

CATALOGS = FIXTURES / "catalogs"
TLDR = FIXTURES / "tldr"
TLDR_PAGES = SHARED / "corpora" / "tldr" / "pages"


# ------------------------------------------------------------------------- catalogs


def test_catalog_commands_become_command_documents(kb: KnowledgeBase) -> None:
    r = kb.ingest(CATALOGS / "helios.yaml", source="helios")
    assert r.inserted == 3
    assert [str(e) for e in r.errors] == [
        "helios.yaml [commands[3].description]: is required",
        "helios.yaml [commands[3].options]: must be a list of options",
    ]
    assert kb.sources()[0].source.kind == "commands"
    doc = kb.get("cmd:helios gw users list")
    assert doc.type == "command" and doc.title == "List Google Workspace users"
    assert doc.category == "google-workspace"
    assert doc.command == "helios gw users list"
    assert doc.metadata["syntax"] == "helios gw users list [--format <table|json>] [--limit <n>]"
    assert doc.summary == "Lists all users synced from Google Workspace."
    assert "- `--format` (default: table): Output format." in doc.content
    assert [e.code for e in doc.examples] == [
        "helios gw users list",
        "helios gw users list --format json",
    ]
    assert doc.aliases == ("list google users", "show all users")
    # The program is prefixed once; explicit ids and the catalog's category are kept.
    assert kb.get("cmd:helios gw users get").related_ids == ("cmd:helios gw users list",)
    sync = kb.get("cmd-sync-run")
    assert sync.command == "helios sync run" and sync.category == "developer-console"


def test_catalog_commands_are_found_by_exact_name(kb: KnowledgeBase) -> None:
    kb.ingest(CATALOGS / "helios.yaml", source="helios")
    assert kb.get_command("helios gw users list").id == "cmd:helios gw users list"
    assert kb.get_command("helios sync run").id == "cmd-sync-run"
    with pytest.raises(NotFound, match="did you mean"):
        kb.get_command("helios get-users")
    result = kb.search("helios gw users get john@example.com")
    assert result.verdict.kind == "answer"
    assert result.hits[0].doc_id == "cmd:helios gw users get"


def test_json_catalog_without_program_takes_names_from_syntax(kb: KnowledgeBase) -> None:
    r = kb.ingest(CATALOGS / "tools.json", source="tools")
    assert r.ok, r.errors
    assert sorted(d.id for d in kb.list_documents()) == ["cmd:kbtool index", "cmd:kbtool serve"]
    assert kb.get("cmd:kbtool serve").metadata["syntax"] == "kbtool serve --port <port>"
    again = kb.ingest(CATALOGS / "tools.json", source="tools")
    assert (again.unchanged, again.inserted, again.updated) == (2, 0, 0)


def test_validate_reports_commands_without_examples(kb: KnowledgeBase) -> None:
    kb.ingest(CATALOGS / "helios.yaml", source="helios")
    problems = validate_store(kb.store)
    assert [(p.severity, p.code, p.doc_id) for p in problems] == [
        ("warning", "no_examples", "cmd-sync-run")
    ]


# ----------------------------------------------------------------------------- tldr


def test_tldr_pages_are_commands_and_other_markdown_stays_a_page(kb: KnowledgeBase) -> None:
    r = kb.ingest(TLDR, source="tldr")
    assert r.ok, r.errors
    assert r.inserted == 4
    assert kb.sources()[0].source.kind == "mixed"  # tldr pages and one Markdown page
    tar = kb.get("tldr:common/tar")
    assert tar.type == "command" and tar.command == "tar" and tar.category == "common"
    assert tar.summary == (
        "Archiving utility. Often combined with a compression method, such as `gzip` or `bzip2`."
    )
    assert tar.metadata["more_info"] == "https://www.gnu.org/software/tar"
    assert tar.examples[1].description == (
        "E[x]tract a (compressed) archive [f]ile into the current directory [v]erbosely"
    )
    assert tar.examples[1].code == "tar xvf {{path/to/source.tar[.gz|.bz2|.xz]}}"
    # The same command on another platform is another document.
    assert kb.get("tldr:linux/tar").category == "linux"
    assert kb.get("notes").type == "page"
    assert kb.get_command("git commit").id == "tldr:common/git-commit"
    assert kb.search("git commit --amend").hits[0].doc_id == "tldr:common/git-commit"


def test_each_tldr_example_is_a_chunk_headed_by_its_task(kb: KnowledgeBase) -> None:
    """A task question meets the one example that does it: the hit's section names the
    task and its snippet is the command line."""
    assert kb.ingest(TLDR, source="tldr").ok
    chunks = kb.store.chunks(["tldr:common/tar"])
    tar = kb.get("tldr:common/tar")
    assert len(chunks) == 1 + len(tar.examples)
    # the heading without tldr's mnemonic brackets ("E[x]tract" would be "e x tract")
    assert chunks[2].header_path == (
        "tar > Examples > Extract a (compressed) archive file into the current directory verbosely"
    )
    assert chunks[2].text == "```\ntar xvf {{path/to/source.tar[.gz|.bz2|.xz]}}\n```"
    hit = kb.search("extract a compressed archive into the current directory").hits[0]
    assert hit.doc_id == "tldr:common/tar" and hit.chunk_id == "tldr:common/tar#2"
    assert "tar xvf" in hit.snippet


def test_a_tldr_alias_page_leads_to_the_command_it_stands_for(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    """Looking up an alias answers with the alias and, as the next hit, the page of the
    command it stands for (on the alias's platform first), whose examples the alias page
    does not repeat; an alias of a command the knowledge base lacks says so."""
    pages = write_pages(tmp_path / "pages", TLDR_ALIAS_PAGES)
    assert kb.ingest(pages, source="tldr").ok
    assert kb.get("tldr:common/docker-commit").metadata["alias_of"] == "docker container commit"
    assert "alias_of" not in kb.get("tldr:common/docker-container-commit").metadata

    r = kb.search("docker commit")
    assert (r.verdict.kind, r.verdict.reason) == ("answer", "exact_command")
    assert [h.doc_id for h in r.hits] == [
        "tldr:common/docker-commit",
        "tldr:common/docker-container-commit",
    ]
    assert "alias of `docker container commit`" in r.verdict.message
    assert r.hits[0].score > r.hits[1].score  # scores follow rank order
    # GNU `ls` on macOS: the macOS page of ls, not the Linux one
    assert [h.doc_id for h in kb.search("gls").hits] == ["tldr:osx/gls", "tldr:osx/ls"]
    # the command it stands for is not in the knowledge base: said, not invented
    r = kb.search("kafkacat")
    assert [h.doc_id for h in r.hits] == ["tldr:common/kafkacat"]
    assert "does not document" in r.verdict.message
    # a search for one hit is the alias alone, and says so
    r = kb.search("docker commit", limit=1)
    assert [h.doc_id for h in r.hits] == ["tldr:common/docker-commit"]
    assert "alias of `docker container commit`, a documented command" in r.verdict.message
    # the exact look-up (get_command, `groundkb command`) brings the command along
    found = kb.lookup_command("docker commit")
    assert found.document is not None and found.document.id == "tldr:common/docker-commit"
    assert found.alias_of is not None and found.alias_of.id == "tldr:common/docker-container-commit"
    out = command_lookup_out(found)
    assert out.alias_of is not None and out.alias_of.examples[0].code.startswith("docker container")
    assert kb.lookup_command("kafkacat").alias_of is None
    assert kb.lookup_command("docker container commit").alias_of is None


def test_the_command_cli_prints_an_alias_with_the_command_it_stands_for(tmp_path: Path) -> None:
    pages = write_pages(tmp_path / "pages", TLDR_ALIAS_PAGES)
    db = str(tmp_path / "kb.db")
    runner = CliRunner()
    assert runner.invoke(cli, ["--db", db, "ingest", str(pages), "-s", "tldr"]).exit_code == 0
    r = runner.invoke(cli, ["--db", db, "command", "gls"])
    assert r.exit_code == 0, r.output
    assert "an alias of `ls`" in r.output and "ls -1" in r.output
    r = runner.invoke(cli, ["--db", db, "command", "gls", "--json"])
    assert json.loads(r.output)["alias_of"]["id"] == "tldr:osx/ls"


def test_a_single_tldr_page_takes_its_platform_from_its_folder(kb: KnowledgeBase) -> None:
    kb.ingest(TLDR / "linux" / "tar.md", source="one")
    assert [d.id for d in kb.list_documents()] == ["tldr:linux/tar"]


def test_forcing_the_tldr_loader_reports_pages_of_another_shape(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    from groundkb.ingest import ingest_path

    shutil.copy(TLDR / "notes.md", tmp_path / "notes.md")
    r = ingest_path(kb.store, tmp_path, "forced", loader="tldr")
    assert [e.path for e in r.errors] == ["notes.md"]
    with pytest.raises(InvalidInput, match="unknown loader"):
        ingest_path(kb.store, tmp_path, "forced", loader="rtf")


@pytest.mark.slow
@pytest.mark.skipif(not TLDR_PAGES.is_dir(), reason="tldr corpus not available")
def test_every_real_tldr_page_is_ingested(kb: KnowledgeBase) -> None:
    started = time.perf_counter()
    r = kb.ingest(TLDR_PAGES, source="tldr")
    seconds = time.perf_counter() - started
    # Hidden files are skipped: that is the page of the `.` builtin, named "..md".
    pages = [p for p in TLDR_PAGES.glob("*/*.md") if not p.name.startswith(".")]
    assert r.ok, r.errors[:5]
    assert r.inserted == len(pages) > 7000
    assert kb.stats().by_type == {"command": len(pages)}
    again = kb.ingest(TLDR_PAGES, source="tldr")
    assert again.unchanged == len(pages) and again.inserted == again.updated == 0
    assert kb.get_command("tar").command == "tar"
    print(f"tldr: {len(pages)} pages in {seconds:.2f} s, re-ingest {again.seconds:.2f} s")


# ------------------------------------------------------------------- Python CLIs


@click.group(name="shop")
def shop_cli() -> None:
    """Manage the shop."""


@shop_cli.group()
def orders() -> None:
    """Orders placed by customers."""


@orders.command("list")
@click.option("--status", type=click.Choice(["open", "shipped"]), default="open", help="Filter.")
@click.option("--limit", type=int, help="At most this many.")
def orders_list(status: str, limit: int | None) -> None:
    """List orders, newest first."""


@orders.command("cancel")
@click.argument("order_id")
@click.option("--reason", required=True, help="Why the order is cancelled.")
def orders_cancel(order_id: str, reason: str) -> None:
    """Cancel an order that has not shipped yet."""


@shop_cli.command(hidden=True)
def debug() -> None:
    """Not for users."""


@shop_cli.command()
def status() -> None:
    """Show the shop's status."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="notes", description="Keep notes.")
    sub = parser.add_subparsers(dest="cmd")
    add = sub.add_parser("add", help="Add a note.", aliases=["new"])
    add.add_argument("text", help="The note's text.")
    add.add_argument("--tag", action="append", help="A tag (repeatable).")
    tags = sub.add_parser("tags", help="Work with tags.")
    tag_sub = tags.add_subparsers(dest="tags_cmd")
    rename = tag_sub.add_parser("rename", description="Rename a tag everywhere.")
    rename.add_argument("old")
    rename.add_argument("new")
    rename.add_argument("--dry-run", action="store_true", help="Only show what would change.")
    return parser


def test_click_commands_are_ingested_recursively(kb: KnowledgeBase) -> None:
    r = ingest_python_cli(kb.store, "tests.test_catalogs:shop_cli", "shop")
    assert r.ok, r.errors
    ids = sorted(d.id for d in kb.list_documents())
    assert ids == ["cmd:shop orders cancel", "cmd:shop orders list", "cmd:shop status"]
    cancel = kb.get("cmd:shop orders cancel")
    assert cancel.command == "shop orders cancel"
    assert cancel.metadata["syntax"] == "shop orders cancel [OPTIONS] ORDER_ID"
    assert cancel.summary == "Cancel an order that has not shipped yet."
    assert cancel.category == "orders"
    assert "- `--reason` (required): Why the order is cancelled." in cancel.content
    listing = kb.get("cmd:shop orders list")
    assert "- `--status` (default: open): Filter." in listing.content
    assert kb.get("cmd:shop status").category == "shop"
    assert kb.sources()[0].source.kind == "commands"
    assert kb.get_command("shop orders list").id == "cmd:shop orders list"
    again = ingest_python_cli(kb.store, "tests.test_catalogs:shop_cli", "shop")
    assert (again.unchanged, again.inserted, again.updated, again.deleted) == (3, 0, 0, 0)


def test_argparse_parsers_and_subparsers_are_ingested(kb: KnowledgeBase) -> None:
    r = ingest_python_cli(kb.store, build_parser, "notes")
    assert r.ok, r.errors
    assert sorted(d.id for d in kb.list_documents()) == [
        "cmd:notes add",
        "cmd:notes tags rename",
    ]  # an alias ("new") is the same parser, so it gives no second document
    add = kb.get("cmd:notes add")
    assert add.summary == "Add a note."
    assert add.metadata["syntax"] == "notes add [-h] [--tag TAG] text"
    assert "- `text` (required): The note's text." in add.content
    rename = kb.get("cmd:notes tags rename")
    assert rename.metadata["syntax"] == "notes tags rename [-h] [--dry-run] old new"
    assert "- `--dry-run`: Only show what would change." in rename.content
    assert rename.category == "tags"
    assert kb.get_command("notes tags rename").id == "cmd:notes tags rename"


def test_a_cli_that_changes_rewrites_only_what_changed(kb: KnowledgeBase) -> None:
    parser = build_parser()
    ingest_python_cli(kb.store, parser, "notes")
    smaller = argparse.ArgumentParser(prog="notes")
    smaller.add_subparsers().add_parser("add", help="Add a note.").add_argument("text")
    r = ingest_python_cli(kb.store, smaller, "notes")
    assert (r.updated, r.deleted) == (1, 1)
    assert [d.id for d in kb.list_documents()] == ["cmd:notes add"]


def test_bad_python_cli_targets_are_input_errors(kb: KnowledgeBase) -> None:
    with pytest.raises(InvalidInput, match=r"expected 'package\.module:object'"):
        ingest_python_cli(kb.store, "tests.test_catalogs", "x")
    with pytest.raises(InvalidInput, match="cannot import"):
        ingest_python_cli(kb.store, "tests.no_such_module:cli", "x")
    with pytest.raises(InvalidInput, match="has no attribute"):
        ingest_python_cli(kb.store, "tests.test_catalogs:nothing", "x")
    with pytest.raises(InvalidInput, match="is not an argparse parser"):
        ingest_python_cli(kb.store, "tests.test_catalogs:CATALOGS", "x")


def test_typer_apps_are_ingested_through_click(kb: KnowledgeBase) -> None:
    typer = pytest.importorskip("typer")
    app = typer.Typer(name="todo")

    @app.command()
    def add(title: str) -> None:
        """Add a to-do item."""

    @app.command()
    def done(item: int) -> None:
        """Mark an item as done."""

    r = ingest_python_cli(kb.store, app, "todo", program="todo")
    assert r.ok, r.errors
    assert sorted(d.id for d in kb.list_documents()) == ["cmd:todo add", "cmd:todo done"]
