"""``groundkb prompt`` and ``groundkb templates``: knowledge-aware prompts from the
command line (docs/prompts.md). Registered on the main command group by ``cli.py``."""

from __future__ import annotations

import click

from .cli_common import open_kb, settings_of


@click.command()
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

    with open_kb(ctx) as kb:
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


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_context
def templates(ctx: click.Context, as_json: bool) -> None:
    """List the prompt templates: built-ins and the `prompt_templates` folder."""
    from ..answer import load_registry
    from .render import to_json

    registry = load_registry(settings_of(ctx).prompt_templates)
    if as_json:
        click.echo(to_json({"templates": registry.list(), "problems": registry.problems}))
        return
    for t in registry.list():
        broken = f"  [does not compile: {t.error}]" if t.error else ""
        click.echo(f"{t.id}\t{t.version}\t{t.name}\t{t.origin}{broken}")
    for problem in registry.problems.values():
        click.echo(f"skipped: {problem}", err=True)
