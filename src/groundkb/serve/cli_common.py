"""What the ``groundkb`` commands share: exit codes, the settings and knowledge base of
the invocation, the ``--no-embed`` flag and the one-line failure."""

from __future__ import annotations

import sys
from typing import Any, NoReturn

import click

from ..settings import Settings

EXIT_FAILED = 1  # the command ran but something failed (e.g. files not ingested)
EXIT_ERROR = 2  # bad input or configuration


no_embed_flag = click.option(
    "--no-embed",
    is_flag=True,
    help="Store documents and return (keyword-searchable at once); a running "
    "`groundkb serve` embeds them in the background, or run `groundkb reindex`.",
)


def settings_of(ctx: click.Context) -> Settings:
    settings: Settings = ctx.obj
    return settings


def open_kb(ctx: click.Context, *, create: bool = False) -> Any:
    """The knowledge base of the settings; only commands that write one create it."""
    from ..api import KnowledgeBase

    return KnowledgeBase.open(settings=settings_of(ctx), create=create)


def embed_later(ctx: click.Context, no_embed: bool) -> None:
    if no_embed:
        ctx.obj = settings_of(ctx).replace(embed_on_ingest=False)


def fail(message: str) -> NoReturn:
    click.echo(message, err=True)
    sys.exit(EXIT_FAILED)
