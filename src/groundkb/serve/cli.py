"""The ``groundkb`` command line: parse, call one KnowledgeBase method, render."""

from __future__ import annotations

import logging
import sys
import time
from typing import Any, NoReturn

import click

from ..errors import GroundKBError
from ..ops.querylog import RedactingFormatter
from ..settings import Settings, load_settings, settings_markdown

EXIT_FAILED = 1  # the command ran but something failed (e.g. files not ingested)
EXIT_ERROR = 2  # bad input or configuration


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


def _settings(ctx: click.Context) -> Settings:
    settings: Settings = ctx.obj
    return settings


def _kb(ctx: click.Context, *, create: bool = False) -> Any:
    """The knowledge base of the settings; only commands that write one create it."""
    from ..api import KnowledgeBase

    return KnowledgeBase.open(settings=_settings(ctx), create=create)


_no_embed_flag = click.option(
    "--no-embed",
    is_flag=True,
    help="Store documents and return (keyword-searchable at once); a running "
    "`groundkb serve` embeds them in the background, or run `groundkb reindex`.",
)


def _embed_later(ctx: click.Context, no_embed: bool) -> None:
    if no_embed:
        ctx.obj = _settings(ctx).replace(embed_on_ingest=False)


def _fail(message: str) -> NoReturn:
    click.echo(message, err=True)
    sys.exit(EXIT_FAILED)


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


class _Progress:
    """Progress on stderr for ingest, sync and reindex: a bar with the rate and the time
    left on a terminal, else a plain line every ``every`` seconds (and one at the end).

    A call with ``done == 0`` starts a phase named by its ``name`` ("ingesting",
    "embedding"); without one, a phase starts when ``done`` goes back or ``total``
    changes, and takes the next of ``labels``."""

    def __init__(
        self, quiet: bool, *labels: str, every: float = 10.0, tty: bool | None = None
    ) -> None:
        self.quiet = quiet
        self.tty = sys.stderr.isatty() if tty is None else tty
        self.labels = list(labels) or ["ingesting", "embedding"]
        self.label = ""
        self.every = every
        self.bar: Any = None
        self.done = 0
        self.total = 0
        self.phase = -1
        self.running = False
        self.started = self.last = 0.0

    def __call__(self, done: int, total: int, name: str) -> None:
        if self.quiet:
            return
        if done == 0 or not self.running or done < self.done or total != self.total:
            self.close()  # a new phase (e.g. embedding after ingesting)
            self.running = True
            self.phase += 1
            self.label = name if done == 0 and name else self.labels[self.phase % len(self.labels)]
            self.done, self.total = 0, total
            self.started = self.last = time.monotonic()
            if self.tty:
                self.bar = click.progressbar(
                    length=total,
                    label=self.label,
                    file=sys.stderr,
                    show_eta=True,
                    item_show_func=lambda _: self._rate(),
                )
                self.bar.__enter__()
        if self.bar is not None:
            self.bar.update(done - self.done, name)
        self.done = done
        now = time.monotonic()
        if not self.tty and now - self.last >= self.every:
            self.last = now
            click.echo(self._line(), err=True)

    def _rate(self) -> str:
        elapsed = time.monotonic() - self.started
        return f"{self.done / elapsed:.0f}/s" if elapsed > 0.5 and self.done else ""

    def _line(self) -> str:
        elapsed = time.monotonic() - self.started
        rate = self.done / elapsed if elapsed > 0 else 0.0
        line = f"{self.label}: {self.done}/{self.total}"
        if rate > 0:
            left = (self.total - self.done) / rate
            line += f" ({rate:.1f}/s, {left:.0f} s left)" if self.done < self.total else ""
        return line + f" after {elapsed:.0f} s"

    def close(self) -> None:
        """End the current phase: close its bar, or print its last line."""
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None
        elif self.running and not self.tty:
            click.echo(self._line(), err=True)
        self.running = False


class _CrawlProgress:
    """Crawl progress on stderr: a status line on a terminal, else a line every 10 s."""

    def __init__(self, quiet: bool, label: str, every: float = 10.0) -> None:
        self.quiet = quiet
        self.tty = sys.stderr.isatty()
        self.label = label
        self.every = every if not self.tty else 0.1
        self.last = 0.0
        self.line = ""

    def __call__(self, status: Any) -> None:
        self.line = (
            f"crawling {self.label}: {status.fetched} fetched, {status.queued} queued,"
            f" {status.failed} failed, {status.skipped} skipped"
        )
        now = time.monotonic()
        if self.quiet or now - self.last < self.every:
            return
        self.last = now
        if self.tty:
            click.echo("\r" + _cut_line(self.line + f"  {status.url}"), nl=False, err=True)
        else:
            click.echo(self.line, err=True)

    def close(self) -> None:
        if not self.quiet and self.line:
            click.echo(("\r\033[K" if self.tty else "") + self.line, err=True)


def _cut_line(text: str) -> str:
    import shutil

    width = shutil.get_terminal_size((100, 20)).columns - 1
    return text if len(text) <= width else text[: width - 1] + "…"


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
    type=click.Choice(
        ["markdown", "tldr", "openapi", "catalog", "entries", "records", "html", "pdf", "docx"]
    ),
    help="Read every file with this loader instead of choosing by content.",
)
@click.option("--python", "target", help="Ingest a Python CLI instead: 'module:object'.")
@click.option("--program", help="Program name for --python (default: from the CLI).")
@_crawl_flags
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@_no_embed_flag
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
    """Ingest docs, entries, OpenAPI specs, command catalogs, HTML, PDF and Word files
    under PATH into a source, or crawl a website from a URL (a page or a sitemap).

    Re-ingesting is incremental: unchanged files (and pages) are skipped, changed chunks
    rewritten, and documents whose files disappeared are deleted. Exits 1 if any file
    failed. With --python module:object, the commands of a click, typer or argparse
    program.
    """
    from ..ingest.web import crawl_options, is_url
    from .render import report_text, to_json

    if bool(path) == bool(target):
        raise click.UsageError("give PATH or --python module:object (one of them)")
    _embed_later(ctx, no_embed)
    with _kb(ctx, create=True) as kb:
        progress = _Progress(quiet)
        crawl_progress = _CrawlProgress(quiet, source)
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
@_no_embed_flag
@click.pass_context
def sync(ctx: click.Context, as_json: bool, quiet: bool, no_embed: bool) -> None:
    """Re-ingest every source listed in groundkb.toml ([[sources]]); a pre-build step."""
    from .render import report_text, to_json

    _embed_later(ctx, no_embed)
    with _kb(ctx, create=True) as kb:
        progress = _Progress(quiet)
        crawl_progress = _CrawlProgress(quiet, "url sources")
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

    with _kb(ctx, create=True) as kb:
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
    with _kb(ctx) as kb:
        progress = _Progress(quiet, "embedding")
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
    with _kb(ctx) as kb:
        problems = kb.validate(sources)
    if as_json:
        click.echo(to_json(problems))
    else:
        from .render import problems_text

        click.echo(problems_text(problems))
    if any(p.severity == "error" for p in problems):
        sys.exit(EXIT_FAILED)


@cli.command("command")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print the command as JSON.")
@click.pass_context
def command_cmd(ctx: click.Context, name: str, as_json: bool) -> None:
    """Print a CLI command by exact name or alias; anything else: not found + did-you-mean.

    With --json a command that does not exist prints {"found": false, "suggestions": [...]}
    (exit 1) rather than an error.
    """
    from .render import document_text, to_json

    with _kb(ctx) as kb:
        if not as_json:
            click.echo(document_text(kb.get_command(name)))
            return
        found = kb.lookup_command(name)
    click.echo(to_json(found))
    if not found.found:
        sys.exit(EXIT_FAILED)


@cli.command("commands")
@click.option("--category", "-c", help="Only this category.")
@click.option("--limit", "-n", default=50, show_default=True, type=click.IntRange(1, 500))
@click.option("--offset", default=0, type=click.IntRange(0), help="Skip this many.")
@click.option("--json", "as_json", is_flag=True, help="Print the page as JSON (the MCP shape).")
@click.pass_context
def commands_cmd(
    ctx: click.Context, category: str | None, limit: int, offset: int, as_json: bool
) -> None:
    """List documented CLI commands, a page at a time."""
    with _kb(ctx) as kb:
        docs, total = kb.list_commands(category, limit=limit, offset=offset)
    if as_json:
        from .schemas import commands_out

        click.echo(commands_out(docs, total, offset).model_dump_json(indent=2))
        return
    for d in docs:
        click.echo(f"{d.command or d.title}\t{d.summary}")
    click.echo(f"{offset + 1 if docs else offset}-{offset + len(docs)} of {total}", err=True)


@cli.command()
@click.argument("path")
@click.option("--method", "-m", help="HTTP method (GET, POST, ...).")
@click.option("--json", "as_json", is_flag=True, help="Print the lookup as JSON.")
@click.pass_context
def endpoint(ctx: click.Context, path: str, method: str | None, as_json: bool) -> None:
    """Look up an API operation by path: exact, template (/users/123) or without version."""
    from .render import document_text, to_data, to_json

    with _kb(ctx) as kb:
        found = kb.get_api_endpoint(path, method)
        if as_json:
            click.echo(to_json({**to_data(found), "found": found.found}))
            if not found.found:
                sys.exit(EXIT_FAILED)
            return
        if not found.endpoints:
            others = (
                f" (this path has {', '.join(found.other_methods)})" if found.other_methods else ""
            )
            did = "; did you mean " + ", ".join(found.suggestions) if found.suggestions else ""
            _fail(f"no endpoint {found.method} {found.path}{others}{did}".replace("  ", " "))
        click.echo(f"match: {found.match}")
        if len(found.endpoints) == 1:
            click.echo(document_text(kb.get(found.endpoints[0].doc_id)))
        for e in found.endpoints if len(found.endpoints) > 1 else ():
            click.echo(f"{e.method} {e.path}\t{e.title}")
        for label, group in (("same resource", found.same_resource), ("parents", found.parents),
                             ("children", found.children)):  # fmt: skip
            if group:
                click.echo(f"\n{label}:")
                for e in group:
                    click.echo(f"  {e.method} {e.path}\t{e.title}")


@cli.command()
@click.argument("resource")
@click.argument("operation", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_context
def endpoints(ctx: click.Context, resource: str, operation: str | None, as_json: bool) -> None:
    """Find API operations on RESOURCE, optionally of one OPERATION (create, add, set up, ...)."""
    from .render import to_json

    with _kb(ctx) as kb:
        found = kb.find_endpoints(resource, operation)
    if as_json:
        click.echo(to_json(found))
        return
    if not found:
        _fail(f"no {operation + ' ' if operation else ''}operations on {resource!r}")
    for e in found:
        click.echo(f"{e.method} {e.path}\t{e.operation_kind}\t{e.title}")


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

    with _kb(ctx) as kb:
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
@click.argument("question")
@click.option("--template", "-t", help="Prompt template id (see `groundkb templates`).")
@click.option(
    "--grounding",
    "-g",
    type=click.Choice(["strict", "moderate", "flexible"]),
    help="How strictly the model must stay inside the knowledge.",
)
@click.option(
    "--budget",
    "-b",
    help="Context tokens: a total (3000) or per part (knowledge=2000,messages=300).",
)
@click.option(
    "--format", "fmt", type=click.Choice(["yaml", "json", "markdown"]), help="Knowledge format."
)
@click.option("--state", help="UI/application state to include: JSON or YAML text, or @FILE.")
@click.option("--messages", help="Recent messages: a JSON/YAML list of {role, content}, or @FILE.")
@click.option("--instructions", default="", help="Extra instructions for the model.")
@click.option("--json", "as_json", is_flag=True, help="Print the whole build as JSON.")
@click.pass_context
def prompt(
    ctx: click.Context,
    question: str,
    template: str | None,
    grounding: str | None,
    budget: str | None,
    fmt: str | None,
    state: str | None,
    messages: str | None,
    instructions: str,
    as_json: bool,
) -> None:
    """Build a knowledge-aware prompt for QUESTION: the system and user prompt with the
    knowledge found for it, within a token budget. The audit line (template, tokens,
    ids included and dropped) goes to stderr; --json prints everything."""
    from ..answer import parse_budget
    from .prompt_text import prompt_audit, read_structured
    from .render import to_json

    with _kb(ctx) as kb:
        built = kb.build_prompt(
            question,
            template=template,
            grounding=grounding,
            format=fmt,
            budget=parse_budget(budget) if budget else None,
            state=read_structured(state, "--state") if state else None,
            messages=read_structured(messages, "--messages") if messages else (),
            instructions=instructions,
        )
    if as_json:
        click.echo(to_json(built))
        return
    click.echo(f"=== system ===\n{built.system}\n\n=== user ===\n{built.user}")
    click.echo(prompt_audit(built), err=True)


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_context
def templates(ctx: click.Context, as_json: bool) -> None:
    """List the prompt templates: built-ins and the `prompt_templates` folder."""
    from ..answer import load_registry
    from .render import to_json

    registry = load_registry(_settings(ctx).prompt_templates)
    if as_json:
        click.echo(to_json({"templates": registry.list(), "problems": registry.problems}))
        return
    for t in registry.list():
        broken = f"  [does not compile: {t.error}]" if t.error else ""
        click.echo(f"{t.id}\t{t.version}\t{t.name}\t{t.origin}{broken}")
    for problem in registry.problems.values():
        click.echo(f"skipped: {problem}", err=True)


@cli.command()
@click.argument("doc_id")
@click.option("--json", "as_json", is_flag=True, help="Print the document as JSON.")
@click.pass_context
def get(ctx: click.Context, doc_id: str, as_json: bool) -> None:
    """Print one document by id."""
    from .render import document_text, to_json

    with _kb(ctx) as kb:
        doc = kb.get(doc_id)
    click.echo(to_json(doc) if as_json else document_text(doc))


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_context
def sources(ctx: click.Context, as_json: bool) -> None:
    """List sources with their document and chunk counts."""
    from .render import sources_text, to_data, to_json

    with _kb(ctx) as kb:
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
    with _kb(ctx) as kb:
        changed = kb.set_source_enabled(source, False)
    click.echo(f"source {source} disabled" + ("" if changed else " (it already was)"))


@cli.command()
@click.argument("source")
@click.pass_context
def enable(ctx: click.Context, source: str) -> None:
    """Let searches, look-ups and listings see SOURCE again."""
    with _kb(ctx) as kb:
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
    with _kb(ctx) as kb:
        n = kb.delete(doc_ids, source=source)
    click.echo(f"deleted {n} document(s)")
    if doc_ids and n < len(doc_ids):
        _fail(f"{len(doc_ids) - n} id(s) were not found")


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_context
def stats(ctx: click.Context, as_json: bool) -> None:
    """Show index size and document counts."""
    from .render import stats_text, to_json

    with _kb(ctx) as kb:
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
    s = _settings(ctx)
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


@cli.command("eval")
@click.argument("dataset", type=click.Path(exists=True, file_okay=False))
@click.option(
    "--mode",
    type=click.Choice(["keyword", "vector", "hybrid"]),
    help="Retrieval mode (default: keyword for retrieval sets, the setting for verdict sets).",
)
@click.option("--embedder", help="Embedder for vector/hybrid (default: the `embedder` setting).")
@click.option("--fusion", type=click.Choice(["rrf", "weighted"]), help="Hybrid fusion.")
@click.option("--max-queries", type=click.IntRange(1), help="Evaluate only the first N queries.")
@click.option(
    "--source",
    "sources",
    multiple=True,
    metavar="NAME=PATH",
    help="Verdict sets: a source to ingest (repeatable; default: the folder's groundkb.toml "
    "or its sub-folders).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def eval_cmd(
    ctx: click.Context,
    dataset: str,
    mode: str | None,
    embedder: str | None,
    fusion: str | None,
    max_queries: int | None,
    sources: tuple[str, ...],
    as_json: bool,
) -> None:
    """Evaluate retrieval or verdicts on DATASET.

    A BEIR-format folder (corpus.jsonl, queries.jsonl, qrels.tsv): nDCG@10, Recall@10/100,
    MRR@10, hit@1, latency and how the verdicts came out. A verdict set (sources and
    labelled questions with `expect`, or API questions): verdict accuracy, confusion
    matrix, false-answer rate, answered-right rate, hit@1/hit@5 and a per-kind breakdown.
    """
    from ..evaluate import evaluate
    from ..evaluate_verdicts import evaluate_verdicts, is_verdict_set
    from .render import to_data, to_json

    settings = _settings(ctx)
    if embedder:
        settings = settings.replace(embedder=embedder)
    if fusion:
        settings = settings.replace(fusion=fusion)
    report: Any
    if is_verdict_set(dataset):
        given = {}
        for item in sources:
            name, sep, path = item.partition("=")
            if not sep or not name.strip() or not path.strip():
                raise click.BadParameter(f"expected NAME=PATH, got {item!r}", param_hint="--source")
            given[name.strip()] = path.strip()
        report = evaluate_verdicts(
            dataset, settings, mode=mode or settings.retrieval, sources=given or None
        )
    else:
        report = evaluate(dataset, settings, mode=mode or "keyword", max_queries=max_queries)
    if as_json:
        click.echo(to_json(report))
        return
    for key, value in to_data(report).items():
        if key == "wrong":
            click.echo(f"{'wrong':>20}: {len(value)} (see --json)")
        else:
            click.echo(f"{key:>20}: {value}")


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

        serve_http(_settings(ctx), host=host, sock=sock)
        return
    from .mcp import run

    run(_settings(ctx))


@cli.command()
@click.pass_context
def migrate(ctx: click.Context) -> None:
    """Create or upgrade the index's schema. PostgreSQL needs this before first use and
    after upgrading groundkb (servers refuse other schemas); SQLite migrates itself."""
    from ..store import migrate_store

    settings = _settings(ctx)
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

    settings = _settings(ctx)
    timeout = settings.db_timeout
    source = open_store(origin, read_only=True, pool_size=2, timeout=timeout)
    try:
        dest = open_store(target, migrate=True, pool_size=2, timeout=timeout)
        progress = _Progress(quiet, "copying")
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
    cli(prog_name="groundkb")


def _register() -> None:
    from .cli_access import access, token

    cli.add_command(token)
    cli.add_command(access)


_register()
