"""Rendering core results as plain-data dicts (JSON, MCP) and as terminal text."""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..apinames import operation_in_id
from ..models import Document, Hit, IngestReport, SearchResult, SourceInfo, Stats

if TYPE_CHECKING:
    from ..ingest.validate import Problem


def to_data(obj: Any) -> Any:
    """Dataclasses, tuples and mappings to JSON-ready data."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_data(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, Mapping):
        return {str(k): to_data(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_data(v) for v in obj]
    return obj


def to_json(obj: Any) -> str:
    return json.dumps(to_data(obj), indent=2, ensure_ascii=False)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(1, width - 1)] + "…"


def search_text(result: SearchResult) -> str:
    v = result.verdict
    lines = [f"verdict: {v.kind} ({v.reason}, confidence {v.confidence:.2f}) — {v.message}"]
    if v.options:
        lines.append("options: " + " | ".join(o.label for o in v.options))
    if v.evidence:
        lines.append("evidence: " + "; ".join(v.evidence))
    if result.notice:
        lines.append(f"note: {result.notice}")
    if result.corrected_query:
        lines.append(f"corrected: {result.corrected_query}")
    if result.asked_of:
        lines.append(f"asked of: {', '.join(result.asked_of)} (named in the question)")
    titles = {o.title for o in v.options}
    if result.suggestions and not (v.kind == "clarify" and set(result.suggestions) <= titles):
        lines.append("did you mean: " + " | ".join(result.suggestions))  # not the options again
    if not result.hits:
        return "\n".join(lines)
    width = shutil.get_terminal_size((120, 20)).columns
    rows = [("#", "score", "id", "title", "section", "matched")]
    for i, h in enumerate(result.hits, 1):
        section = h.header_path if h.header_path != h.title else ""
        rows.append(
            (str(i), f"{h.score:.2f}", _hit_id(h), h.title, section, ", ".join(h.matched_terms))
        )
    apis = any(h.type == "api" for h in result.hits)
    caps = [3, 5, 48 if apis else 28, 32, 30, 24]
    widths = [min(cap, max(len(r[c]) for r in rows)) for c, cap in enumerate(caps)]
    lines.append("")
    for r in rows:
        lines.append("  ".join(_cut(cell, w).ljust(w) for cell, w in zip(r, widths, strict=True)))
    lines.append("")
    for i, h in enumerate(result.hits, 1):
        lines.append(f"[{i}] {h.citation}")
        lines.append("    " + _cut(h.snippet, max(40, width - 4)))
    return "\n".join(lines)


def _hit_id(h: Hit) -> str:
    """What identifies a hit in the table: an API operation's method and path (and
    "deprecated" when its spec says so), else the chunk id."""
    if h.method and h.path:
        return f"{h.method} {h.path}" + (" (deprecated)" if h.deprecated else "")
    if h.type == "api" and (op := operation_in_id(h.doc_id)):
        return op  # an operation found without its fields: its id is spec:METHOD /path
    return h.chunk_id


def problems_text(problems: list[Problem], shown: int = 3) -> str:
    """Validation problems, one per line, except that the same problem in more than
    ``shown`` documents of one file is one line with a count and examples."""
    groups: dict[tuple[str, str, str, str], list[Problem]] = {}
    for p in problems:
        groups.setdefault((p.severity, p.code, p.path, p.message), []).append(p)
    lines: list[str] = []
    for (severity, code, path, message), group in groups.items():
        if len(group) <= shown:
            lines += [f"{p} ({p.code})" for p in group]
            continue
        examples = ", ".join(p.doc_id for p in group[:shown])
        lines.append(
            f"{severity}: {path}: {message} — {len(group)} documents ({code}), e.g. {examples}, …"
        )
    errors = sum(1 for p in problems if p.severity == "error")
    lines.append(f"{errors} errors, {len(problems) - errors} warnings")
    return "\n".join(lines)


def document_text(doc: Document) -> str:
    head = [f"# {doc.title}", "", f"id: {doc.id}   type: {doc.type}   source: {doc.source}"]
    if doc.category:
        head.append(
            f"category: {doc.category}" + (f" / {doc.subcategory}" if doc.subcategory else "")
        )
    if doc.command:
        head.append(f"command: {doc.command}")
    if doc.keywords:
        head.append("keywords: " + ", ".join(doc.keywords))
    if doc.aliases:
        head.append("aliases: " + ", ".join(doc.aliases))
    if doc.related_ids:
        head.append("related: " + ", ".join(doc.related_ids))
    head += ["", doc.content.strip()]
    if doc.examples:
        head += ["", "## Examples"]
        for ex in doc.examples:
            head += (
                ["", ex.description, f"    {ex.code}"] if ex.description else ["", f"    {ex.code}"]
            )
    return "\n".join(head)


def report_text(r: IngestReport) -> str:
    lines = [
        f"source {r.source}: {r.inserted} inserted, {r.updated} updated, {r.unchanged} unchanged,"
        f" {r.deleted} deleted ({r.files} files, {r.chunks_written} chunks written,"
        + (f" {r.chunks_embedded} embedded," if r.chunks_embedded else "")
        + f" {r.seconds:.2f}s)"
    ]
    if r.notice:
        lines.append(f"note: {r.notice}")
    if r.skipped:
        lines.append(skipped_text(r.skipped))
    if r.errors:
        lines.append(f"{len(r.errors)} problem(s):")
        lines += [f"  {e}" for e in r.errors]
    return "\n".join(lines)


def skipped_text(paths: tuple[str, ...], shown: int = 5) -> str:
    """One line on the files an ingest left out: counts by type, then a few names."""
    by_type: dict[str, int] = {}
    for p in paths:
        name = p.rsplit("/", 1)[-1]
        suffix = "." + name.rsplit(".", 1)[-1].lower() if "." in name else "(no suffix)"
        by_type[suffix] = by_type.get(suffix, 0) + 1
    kinds = ", ".join(f"{k} {v}" for k, v in sorted(by_type.items(), key=lambda kv: -kv[1]))
    names = ", ".join(paths[:shown]) + (", …" if len(paths) > shown else "")
    hint = " (.txt is read with --loader rst or --loader markdown)" if ".txt" in by_type else ""
    return f"skipped {len(paths)} file(s) of types no loader reads ({kinds}): {names}{hint}"


def sources_text(infos: list[SourceInfo]) -> str:
    if not infos:
        return "no sources yet: run `groundkb ingest PATH --source NAME`"
    rows = [("source", "kind", "documents", "chunks", "updated", "location")]
    rows += [
        (
            i.source.name,
            i.source.kind,
            str(i.documents),
            str(i.chunks),
            i.updated_at,
            i.source.location,
        )
        for i in infos
    ]
    widths = [max(len(r[c]) for r in rows) for c in range(5)]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(r[:5], widths, strict=True)) + "  " + r[5]
        for r in rows
    )


def stats_text(s: Stats) -> str:
    types = ", ".join(f"{k} {v}" for k, v in sorted(s.by_type.items())) or "none"
    return (
        f"index: {s.path} ({s.backend}, schema {s.schema_version}, {s.size_bytes / 1e6:.1f} MB)\n"
        f"sources: {s.sources}   documents: {s.documents}   chunks: {s.chunks}\n"
        f"by type: {types}"
    )
