"""``groundkb eval``: retrieval and verdict quality on a BEIR-format folder or a verdict
set. Registered on the main command group by ``cli.py``."""

from __future__ import annotations

from typing import Any

import click

from .cli_common import settings_of


@click.command("eval")
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

    settings = settings_of(ctx)
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
