"""``groundkb token`` and ``groundkb access``: issue bearer tokens and check who reads
what (see docs/access.md). Registered on the main command group by ``cli.py``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from ..settings import Settings


@click.command()
@click.option("--user", "-u", required=True, help="Who the token identifies.")
@click.option("--groups", "-g", default="", help="Comma-separated groups of the user.")
@click.option(
    "--file",
    "path",
    type=click.Path(dir_okay=False),
    help="Append the entry to this tokens file (default: the auth_tokens_file setting).",
)
@click.option("--print-only", is_flag=True, help="Print the entry; change no file.")
@click.pass_context
def token(ctx: click.Context, user: str, groups: str, path: str | None, print_only: bool) -> None:
    """Issue a bearer token for USER: prints the token once (keep it; only its sha256
    is stored) and appends its entry to the tokens file. A running server picks the
    entry up without a restart."""
    from ..access.tokens import new_token

    settings: Settings = ctx.obj
    names = [g.strip() for g in groups.split(",") if g.strip()]
    secret, entry = new_token(user.strip(), names)
    target = None if print_only else (path or settings.auth_tokens_file.strip() or None)
    if target is None:
        click.echo(entry)
    else:
        file = Path(target)
        before = file.read_text(encoding="utf-8") if file.exists() else ""
        sep = (
            ""
            if not before or before.endswith("\n\n")
            else ("\n" if before.endswith("\n") else "\n\n")
        )
        file.write_text(before + sep + entry.rstrip("\n") + "\n", encoding="utf-8")
        click.echo(f"added {user.strip()} to {file}", err=True)
    click.echo(f"token (shown once): {secret}", err=True)
    if not names:
        click.echo("note: no groups: this user reads only sources without groups", err=True)


@click.command()
@click.option("--user", "-u", default="someone", help="The caller's name (for the report).")
@click.option("--groups", "-g", default="", help="Comma-separated groups of the caller.")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_context
def access(ctx: click.Context, user: str, groups: str, as_json: bool) -> None:
    """Show which sources a caller with these groups may read, and why not the others."""
    from ..access import Principal
    from ..access.sources import access_rules, may_see
    from ..api import KnowledgeBase

    settings: Settings = ctx.obj
    principal = Principal(
        user.strip(), frozenset(g.strip() for g in groups.split(",") if g.strip()), via="local"
    )
    with KnowledgeBase.open(settings=settings, create=False) as kb:
        infos = kb.sources()
        readable = kb.reader(principal).readable or frozenset()
        rules = access_rules(infos, settings)
    rows: list[dict[str, Any]] = []
    for info in infos:
        rule = rules[info.source.name]
        name = info.source.name
        if name in readable:
            why = "no groups: every caller" if not rule.groups else "in its groups"
        elif may_see(principal, rule, settings):
            why = f"needs its capability credential ({rule.capability_env}) per call"
        else:
            why = "not in its groups"
        rows.append({"source": name, "reads": name in readable, "groups": list(rule.groups),
                     "auth_mode": rule.auth_mode, "why": why})  # fmt: skip
    if as_json:
        click.echo(json.dumps({"user": principal.user, "groups": sorted(principal.groups),
                               "sources": rows}, indent=2))  # fmt: skip
        return
    click.echo(principal.describe())
    for r in rows:
        mark = "reads  " if r["reads"] else "cannot "
        groups_text = ", ".join(r["groups"]) or "-"
        click.echo(f"  {mark} {r['source']}  (groups: {groups_text}; {r['why']})")
