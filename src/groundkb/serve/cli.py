"""The ``groundkb`` command line: parse, call one KnowledgeBase method, render."""

from __future__ import annotations

import gc
import logging
import sys
from typing import Any

import click

from ..errors import GroundKBError
from ..ops.querylog import RedactingFormatter
from ..settings import load_settings, settings_markdown
from .cli_common import (
    EXIT_ERROR,
    EXIT_FAILED,
    embed_later,
    fail,
    no_embed_flag,
    open_kb,
    settings_of,
)
from .cli_progress import CrawlProgress, Progress

log = logging.getLogger(__name__)


class _Group(click.Group):
    """Maps every error to one line on stderr and exit code 2, in one place: ours as
    ``error [code]: message``; anything else (a bug) as ``internal_error`` naming its
    type, with the traceback in the log at debug level, never on the terminal."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except GroundKBError as exc:
            from .errors import cli_line

            click.echo(cli_line(exc), err=True)
            ctx.exit(EXIT_ERROR)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except Exception as exc:
            log.debug("internal error", exc_info=exc)
            click.echo(
                f"error [internal_error]: {type(exc).__name__} "
                "(run with --log-level debug for the details)",
                err=True,
            )
            ctx.exit(EXIT_ERROR)


# ingest.LOADER_NAMES, written out: the CLI does not import the loaders to start
LOADERS = ("markdown", "tldr", "openapi", "catalog", "entries", "records", "html", "rst", "pdf",
           "docx")  # fmt: skip


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--db",
    envvar="GROUNDKB_DB",
    help="Index: a SQLite file (default: groundkb.db) or a postgresql:// URL.",
)
@click.option(
    "--config",
    "config",
    type=click.Path(dir_okay=False),
    help="Settings file (default: ./groundkb.toml if present).",
)
@click.option("--log-level", help="debug, info, warning or error (logs go to stderr).")
@click.version_option(package_name="groundkb")
@click.pass_context
def cli(ctx: click.Context, db: str | None, config: str | None, log_level: str | None) -> None:
    """groundkb: a grounded knowledge base for AI agents.

    Ingest docs and knowledge entries, search them with evidence and a verdict,
    and serve them to agents over MCP.
    """
    try:
        settings = load_settings(config, overrides={"db": db, "log_level": log_level})
    except GroundKBError as exc:
        click.echo(f"error [{exc.code}]: {exc.message}", err=True)
        ctx.exit(EXIT_ERROR)
    handler = logging.StreamHandler(sys.stderr)  # secrets redacted, tracebacks included
    handler.setFormatter(RedactingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=settings.log_level.upper(), handlers=[handler])
    ctx.obj = settings


def _crawl_flags(f: Any) -> Any:
    f = click.option(
        "--concurrency", type=click.IntRange(1, 32), help="Requests in flight per host."
    )(f)
    f = click.option(
        "--rate", type=click.FloatRange(min=0.001), help="Requests per second per host."
    )(f)
    f = click.option("--max-depth", type=click.IntRange(0), help="Most links followed from URL.")(f)
    f = click.option("--max-pages", type=click.IntRange(1), help="Most URLs visited.")(f)
    f = click.option(
        "--allow-network",
        "allow_networks",
        multiple=True,
        help="Network (CIDR) that may be fetched although not public, e.g. 127.0.0.1/32.",
    )(f)
    f = click.option(
        "--allow",
        multiple=True,
        help="URL prefix to crawl (repeatable; default: the URL's folder).",
    )(f)
    return f


def _crawl_table(**flags: Any) -> dict[str, Any]:
    return {
        k: (list(v) if isinstance(v, tuple) else v)
        for k, v in flags.items()
        if v is not None and v != ()
    }


@cli.command()
@click.argument("path", required=False)
@click.option("--source", "-s", required=True, help="Source name; the source becomes this path.")
@click.option(
    "--loader",
    type=click.Choice(LOADERS),
    help="Read every file with this loader instead of choosing by content; rst and "
    "markdown also read .txt files, which are skipped otherwise.",
)
@click.option("--python", "target", help="Ingest a Python CLI instead: 'module:object'.")
@click.option("--program", help="Program name for --python (default: from the CLI).")
@_crawl_flags
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@no_embed_flag
@click.pass_context
def ingest(
    ctx: click.Context,
    path: str | None,
    source: str,
    loader: str | None,
    target: str | None,
    program: str | None,
    allow: tuple[str, ...],
    allow_networks: tuple[str, ...],
    max_pages: int | None,
    max_depth: int | None,
    rate: float | None,
    concurrency: int | None,
    as_json: bool,
    quiet: bool,
    no_embed: bool,
) -> None:
    """Ingest docs, entries, OpenAPI specs, command catalogs, HTML, PDF, Word and
    reStructuredText files under PATH into a source, or crawl a website from a URL (a
    page or a sitemap).

    Re-ingesting is incremental: unchanged files (and pages) are skipped, changed chunks
    rewritten, and documents whose files disappeared are deleted. Exits 1 if any file
    failed. With --python module:object, the commands of a click, typer or argparse
    program.
    """
    from ..ingest.web import crawl_options, is_url
    from .render import report_text, to_json

    if bool(path) == bool(target):
        raise click.UsageError("give PATH or --python module:object (one of them)")
    embed_later(ctx, no_embed)
    with open_kb(ctx, create=True) as kb:
        progress = Progress(quiet)
        crawl_progress = CrawlProgress(quiet, source)
        try:
            if target:
                report = kb.ingest_python_cli(target, source, program=program)
            elif is_url(path):
                if loader:
                    raise click.UsageError("--loader applies to files, not to a URL")
                flags = _crawl_table(
                    allow=allow,
                    allow_networks=allow_networks,
                    max_pages=max_pages,
                    max_depth=max_depth,
                    rate=rate,
                    concurrency=concurrency,
                )
                opts = crawl_options(kb.settings, flags, "flags")
                report = kb.ingest_url(str(path), source, options=opts, progress=crawl_progress)
            else:
                crawl_flags = (allow, allow_networks, max_pages, max_depth, rate, concurrency)
                if any(f not in (None, ()) for f in crawl_flags):
                    raise click.UsageError("crawl options apply to a URL, not to files")
                report = kb.ingest(path, source, progress=progress, loader=loader)
        finally:
            progress.close()
            crawl_progress.close()
    click.echo(to_json(report) if as_json else report_text(report))
    if report.errors:
        sys.exit(EXIT_FAILED)


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print the reports as JSON.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@no_embed_flag
@click.pass_context
def sync(ctx: click.Context, as_json: bool, quiet: bool, no_embed: bool) -> None:
    """Re-ingest every source listed in groundkb.toml ([[sources]]); a pre-build step."""
    from .render import report_text, to_json

    embed_later(ctx, no_embed)
    with open_kb(ctx, create=True) as kb:
        progress = Progress(quiet)
        crawl_progress = CrawlProgress(quiet, "url sources")
        try:
            reports = kb.sync(progress=progress, crawl_progress=crawl_progress)
        finally:
            progress.close()
            crawl_progress.close()
    if as_json:
        click.echo(to_json(reports))
    else:
        for r in reports:
            click.echo(report_text(r))
    if any(r.errors for r in reports):
        sys.exit(EXIT_FAILED)


@cli.command()
@click.argument("url")
@click.option("--source", "-s", help="Source to add the page to when it is not indexed yet.")
@click.option(
    "--allow-network",
    "allow_networks",
    multiple=True,
    help="Network (CIDR) that may be fetched although not public, e.g. 127.0.0.1/32.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def refresh(
    ctx: click.Context, url: str, source: str | None, allow_networks: tuple[str, ...], as_json: bool
) -> None:
    """Fetch one web page again now: update, insert or delete its documents (conditional
    request; unchanged pages are not re-chunked). Exits 1 if the fetch failed."""
    from ..ingest.web import crawl_options
    from .render import report_text, to_json

    with open_kb(ctx, create=True) as kb:
        options = None
        if allow_networks:
            table = {"allow_networks": list(allow_networks)}
            options = crawl_options(kb.settings, table, "flags")
        report = kb.refresh_url(url, source=source, options=options)
    click.echo(to_json(report) if as_json else report_text(report))
    if report.errors:
        sys.exit(EXIT_FAILED)


@cli.command()
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@click.pass_context
def reindex(ctx: click.Context, quiet: bool) -> None:
    """Embed every chunk with the configured embedder (after changing models).

    Unchanged chunks that already have vectors of this model are kept, so an interrupted
    reindex resumes where it stopped.
    """
    with open_kb(ctx) as kb:
        progress = Progress(quiet, "embedding")
        try:
            done = kb.reindex(progress=progress)
        finally:
            progress.close()
        emb = kb.embedder()
        click.echo(f"embedded {done} chunks with {emb.name if emb else '-'}")


@cli.command()
@click.option("--source", "-s", help="Only these sources (comma-separated).")
@click.option("--json", "as_json", is_flag=True, help="Print the problems as JSON.")
@click.pass_context
def validate(ctx: click.Context, source: str | None, as_json: bool) -> None:
    """Report dangling related ids, operations without summaries, commands without
    examples and duplicates. Exits 1 when there is an error (warnings alone exit 0)."""
    from .render import to_json

    sources = tuple(s.strip() for s in (source or "").split(",") if s.strip())
    with open_kb(ctx) as kb:
        problems = kb.validate(sources)
    if as_json:
        click.echo(to_json(problems))
    else:
        from .render import problems_text

        click.echo(problems_text(problems))
    if any(p.severity == "error" for p in problems):
        sys.exit(EXIT_FAILED)


@cli.command()
@click.argument("query")
@click.option("--type", "-t", "type_", help="Only these types (comma-separated).")
@click.option("--category", "-c", help="Only these categories (comma-separated).")
@click.option("--source", "-s", help="Only these sources (comma-separated).")
@click.option("--limit", "-n", type=click.IntRange(1, 100), help="Most hits to show.")
@click.option(
    "--mode",
    type=click.Choice(["auto", "keyword", "vector", "hybrid"]),
    help="Retrieval mode for this search (default: the `retrieval` setting).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the full result as JSON.")
@click.pass_context
def search(
    ctx: click.Context,
    query: str,
    type_: str | None,
    category: str | None,
    source: str | None,
    limit: int | None,
    mode: str | None,
    as_json: bool,
) -> None:
    """Search the knowledge base; prints the verdict and the hits with evidence.

    --json prints what the MCP tool returns, plus ``signals`` (what the verdict weighed).
    """
    from .render import search_text, to_json

    with open_kb(ctx) as kb:
        result = kb.search(
            query, type=type_, category=category, source=source, limit=limit, mode=mode
        )
    if as_json:
        from .schemas import search_out

        data = search_out(result).model_dump(mode="json")
        click.echo(to_json({**data, "signals": dict(result.signals)}))
        return
    click.echo(search_text(result))


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_context
def sources(ctx: click.Context, as_json: bool) -> None:
    """List sources with their document and chunk counts."""
    from .render import sources_text, to_data, to_json

    with open_kb(ctx) as kb:
        infos = kb.sources()
        off = kb.disabled_sources()
    if as_json:
        click.echo(to_json([{**to_data(i), "enabled": i.source.name not in off} for i in infos]))
        return
    click.echo(sources_text(infos))
    if off:
        click.echo(f"disabled (left out of searches): {', '.join(sorted(off))}")


@cli.command()
@click.argument("source")
@click.pass_context
def disable(ctx: click.Context, source: str) -> None:
    """Leave SOURCE out of searches, look-ups and listings (its index is kept)."""
    with open_kb(ctx) as kb:
        changed = kb.set_source_enabled(source, False)
    click.echo(f"source {source} disabled" + ("" if changed else " (it already was)"))


@cli.command()
@click.argument("source")
@click.pass_context
def enable(ctx: click.Context, source: str) -> None:
    """Let searches, look-ups and listings see SOURCE again."""
    with open_kb(ctx) as kb:
        changed = kb.set_source_enabled(source, True)
    click.echo(f"source {source} enabled" + ("" if changed else " (it already was)"))


@cli.command()
@click.argument("doc_ids", nargs=-1)
@click.option("--source", "-s", help="Delete this whole source and its documents.")
@click.pass_context
def delete(ctx: click.Context, doc_ids: tuple[str, ...], source: str | None) -> None:
    """Delete documents by id, or a whole source with --source."""
    if bool(doc_ids) == bool(source):
        raise click.UsageError("give document ids or --source, not both and not neither")
    with open_kb(ctx) as kb:
        n = kb.delete(doc_ids, source=source)
    click.echo(f"deleted {n} document(s)")
    if doc_ids and n < len(doc_ids):
        fail(f"{len(doc_ids) - n} id(s) were not found")


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_context
def stats(ctx: click.Context, as_json: bool) -> None:
    """Show index size and document counts."""
    from .render import stats_text, to_json

    with open_kb(ctx) as kb:
        s = kb.stats()
    click.echo(to_json(s) if as_json else stats_text(s))


@cli.command("settings")
@click.option("--markdown", is_flag=True, help="Print the settings reference instead.")
@click.option("--json", "as_json", is_flag=True, help="Print the settings as JSON.")
@click.pass_context
def settings_cmd(ctx: click.Context, markdown: bool, as_json: bool) -> None:
    """Show the effective settings (defaults < groundkb.toml < env < flags)."""
    if markdown:
        click.echo(settings_markdown(), nl=False)
        return
    s = settings_of(ctx)
    from ..settings import SECRET_SETTINGS
    from .render import to_data, to_json

    data = {
        key: ("(set, hidden)" if value else "") if key in SECRET_SETTINGS else value
        for key, value in to_data(s).items()
    }
    if as_json:
        click.echo(to_json(data))
        return
    for key, value in data.items():
        if key != "sources":
            click.echo(f"{key} = {value!r}")


@cli.command()
@click.option("--http", is_flag=True, help="Serve HTTP: console, REST API, MCP at /mcp, metrics.")
@click.option("--host", default="127.0.0.1", show_default=True, help="HTTP bind address.")
@click.option(
    "--port", default=8765, show_default=True, type=click.IntRange(0, 65535), help="HTTP port."
)
@click.pass_context
def serve(ctx: click.Context, http: bool, host: str, port: int) -> None:
    """Run the MCP server over stdio, or with --http the web console (/), the REST API
    (/api, docs at /docs), MCP (/mcp) and Prometheus metrics (/metrics)."""
    if http:
        from .startup import bind

        sock = bind(host, port)  # a port in use fails here, before the server's imports
        from .http import serve_http

        serve_http(settings_of(ctx), host=host, sock=sock)
        return
    from .mcp import run

    run(settings_of(ctx))


@cli.command()
@click.pass_context
def migrate(ctx: click.Context) -> None:
    """Create or upgrade the index's schema. PostgreSQL needs this before first use and
    after upgrading groundkb (servers refuse other schemas); SQLite migrates itself."""
    from ..store import migrate_store

    settings = settings_of(ctx)
    before, after = migrate_store(settings.db, timeout=settings.db_timeout)
    if before == after:
        click.echo(f"schema is current (version {after})")
    else:
        click.echo(f"migrated schema from version {before} to {after}")


@cli.command("copy")
@click.option("--from", "origin", required=True, help="Copy from this index (file or URL).")
@click.option("--to", "target", required=True, help="Into this one (migrated if needed).")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@click.pass_context
def copy_cmd(ctx: click.Context, origin: str, target: str, quiet: bool) -> None:
    """Copy every source, document, chunk and vector between indexes (e.g. sqlite:///kb.db
    to postgresql://...) without re-embedding; the target's copies become equal to them."""
    from ..store import open_store
    from ..store.copy import copy_store

    settings = settings_of(ctx)
    timeout = settings.db_timeout
    source = open_store(origin, read_only=True, pool_size=2, timeout=timeout)
    try:
        dest = open_store(target, migrate=True, pool_size=2, timeout=timeout)
        progress = Progress(quiet, "copying")
        try:
            report = copy_store(source, dest, progress)
        finally:
            progress.close()
            dest.close()
    finally:
        source.close()
    click.echo(
        f"copied {report.sources} sources, {report.documents} documents, {report.chunks} chunks"
        f" and {report.vectors} vectors in {report.seconds} s; deleted {report.deleted}"
    )


def main() -> None:
    try:
        cli(prog_name="groundkb")
    finally:
        # The process is about to end: the interpreter's last garbage collections need
        # not walk every object the command built (the derived data, the model's
        # session); they are freed all the same. A hybrid search exits 30-40 ms sooner.
        gc.freeze()


def _register() -> None:
    from .cli_access import access, token
    from .cli_eval import eval_cmd
    from .cli_lookup import command_cmd, commands_cmd, endpoint, endpoints, get
    from .cli_prompts import prompt, templates

    for command in (token, access, eval_cmd, command_cmd, commands_cmd, endpoint, endpoints,
                    get, prompt, templates):  # fmt: skip
        cli.add_command(command)


_register()
