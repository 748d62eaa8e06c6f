"""``groundkb command``, ``commands``, ``endpoint``, ``endpoints`` and ``get``: exact
look-ups of commands, API operations and documents. Registered on the main command group
by ``cli.py``."""

from __future__ import annotations

import sys

import click

from ..apigraph import Endpoint
from .cli_common import EXIT_FAILED, fail, open_kb


@click.command("command")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print the command as JSON.")
@click.pass_context
def command_cmd(ctx: click.Context, name: str, as_json: bool) -> None:
    """Print a CLI command by exact name or alias; anything else: not found + did-you-mean.
    An alias of another command is followed by that command.

    With --json a command that does not exist prints {"found": false, "suggestions": [...]}
    (exit 1) rather than an error.
    """
    from .render import document_text, to_json

    with open_kb(ctx) as kb:
        found = kb.lookup_command(name)
        if not as_json:
            # not found: get_command's error names the did-you-mean commands
            click.echo(document_text(found.document or kb.get_command(name)))
            if found.alias_of is not None:
                alias = found.alias_of
                click.echo(f"\n(an alias of `{alias.command}`:)\n\n" + document_text(alias))
            return
    click.echo(to_json(found))
    if not found.found:
        sys.exit(EXIT_FAILED)


@click.command("commands")
@click.option("--category", "-c", help="Only this category.")
@click.option("--limit", "-n", default=50, show_default=True, type=click.IntRange(1, 500))
@click.option("--offset", default=0, type=click.IntRange(0), help="Skip this many.")
@click.option("--json", "as_json", is_flag=True, help="Print the page as JSON (the MCP shape).")
@click.pass_context
def commands_cmd(
    ctx: click.Context, category: str | None, limit: int, offset: int, as_json: bool
) -> None:
    """List documented CLI commands, a page at a time."""
    with open_kb(ctx) as kb:
        docs, total = kb.list_commands(category, limit=limit, offset=offset)
    if as_json:
        from .schemas import commands_out

        click.echo(commands_out(docs, total, offset).model_dump_json(indent=2))
        return
    for d in docs:
        click.echo(f"{d.command or d.title}\t{d.summary}")
    click.echo(f"{offset + 1 if docs else offset}-{offset + len(docs)} of {total}", err=True)


def _endpoint_line(e: Endpoint, *middle: str) -> str:
    """``METHOD path<TAB>…<TAB>title``, the title marked when the spec deprecates it
    (unless it says so already: "Get Playlist Items [DEPRECATED]")."""
    marked = e.deprecated and "deprecated" not in e.title.lower()
    title = e.title + (" (deprecated)" if marked else "")
    return "\t".join((f"{e.method} {e.path}", *middle, title))


@click.command()
@click.argument("path")
@click.option("--method", "-m", help="HTTP method (GET, POST, ...).")
@click.option("--json", "as_json", is_flag=True, help="Print the lookup as JSON.")
@click.pass_context
def endpoint(ctx: click.Context, path: str, method: str | None, as_json: bool) -> None:
    """Look up an API operation by path: exact, template (/users/123) or without version."""
    from .render import document_text, to_data, to_json

    with open_kb(ctx) as kb:
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
            fail(f"no endpoint {found.method} {found.path}{others}{did}".replace("  ", " "))
        click.echo(f"match: {found.match}")
        if len(found.endpoints) == 1:
            click.echo(document_text(kb.get(found.endpoints[0].doc_id)))
        for e in found.endpoints if len(found.endpoints) > 1 else ():
            click.echo(_endpoint_line(e))
        for label, group in (("same resource", found.same_resource), ("parents", found.parents),
                             ("children", found.children)):  # fmt: skip
            if group:
                click.echo(f"\n{label}:")
                for e in group:
                    click.echo("  " + _endpoint_line(e))


@click.command()
@click.argument("resource")
@click.argument("operation", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_context
def endpoints(ctx: click.Context, resource: str, operation: str | None, as_json: bool) -> None:
    """Find API operations on RESOURCE, optionally of one OPERATION (create, add, set up, ...)."""
    from .render import to_json

    with open_kb(ctx) as kb:
        found = kb.find_endpoints(resource, operation)
    if as_json:
        click.echo(to_json(found))
        return
    if not found:
        fail(f"no {operation + ' ' if operation else ''}operations on {resource!r}")
    for e in found:
        click.echo(_endpoint_line(e, e.operation_kind))


@click.command()
@click.argument("doc_id")
@click.option("--json", "as_json", is_flag=True, help="Print the document as JSON.")
@click.pass_context
def get(ctx: click.Context, doc_id: str, as_json: bool) -> None:
    """Print one document by id."""
    from .render import document_text, to_json

    with open_kb(ctx) as kb:
        doc = kb.get(doc_id)
    click.echo(to_json(doc) if as_json else document_text(doc))
