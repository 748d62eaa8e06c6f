"""Hand-written knowledge entries in JSON or YAML.

A file holds a list of entries, ``{"entries": [...]}``, or one entry. Each entry follows
the entry schema (camelCase or snake_case keys)::

    id, type, title, category, content            required
    subcategory, summary, keywords, aliases,      optional
    examples [{description, code, output}],
    relatedIds, source, lastUpdated, command, url

Every problem is reported with file and field (``entries.yaml [entries[3].keywords]``);
valid entries of the same file are still ingested.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import yaml

from ..analyze.chunk import chunk_markdown
from ..errors import IngestError
from ..models import DOC_TYPES, Document, Example, FileError
from .base import LoadContext, Loaded, decode_text, finalize, str_list
from .structured import load_json, load_yaml

_KNOWN = {
    "id",
    "type",
    "title",
    "category",
    "subcategory",
    "content",
    "summary",
    "keywords",
    "aliases",
    "examples",
    "relatedids",
    "related_ids",
    "related",
    "source",
    "lastupdated",
    "last_updated",
    "command",
    "syntax",
    "url",
    "uri",
}


def _get(entry: Mapping[str, Any], *names: str) -> Any:
    for key, value in entry.items():
        if isinstance(key, str) and key.lower().replace("-", "_") in names:
            return value
    return None


def common_fields(
    meta: Mapping[str, Any], path: str, where: str, errors: list[FileError]
) -> dict[str, Any]:
    """Validate the optional fields shared by entries and Markdown front matter."""
    out: dict[str, Any] = {}

    def bad(field: str, message: str) -> None:
        errors.append(FileError(path, message, f"{where}{field}"))

    doc_type = _get(meta, "type")
    if doc_type is not None:
        if doc_type not in DOC_TYPES:
            bad("type", f"must be one of {', '.join(DOC_TYPES)}; got {doc_type!r}")
        else:
            out["type"] = doc_type
    for name in ("category", "subcategory", "summary", "title"):
        value = _get(meta, name)
        if value is not None:
            if not isinstance(value, str | int | float) or isinstance(value, bool):
                bad(name, "must be a string")
            else:
                out[name] = str(value).strip()
    list_fields: tuple[tuple[str, tuple[str, ...]], ...] = (
        ("keywords", ("keywords",)),
        ("aliases", ("aliases",)),
        ("related_ids", ("relatedids", "related_ids", "related")),
    )
    for name, keys in list_fields:
        value = _get(meta, *keys)
        items = str_list(value)
        if items is None:
            bad(name if name != "related_ids" else "relatedIds", "must be a list of strings")
        elif items:
            out[name] = items
    examples = _get(meta, "examples")
    if examples is not None:
        if not isinstance(examples, list):
            bad("examples", "must be a list of {description, code, output}")
        else:
            parsed: list[Example] = []
            for i, ex in enumerate(examples):
                if isinstance(ex, str):
                    parsed.append(Example(code=ex))
                elif isinstance(ex, Mapping) and isinstance(ex.get("code"), str):
                    parsed.append(
                        Example(
                            code=ex["code"],
                            description=str(ex.get("description") or ""),
                            output=str(ex.get("output") or ""),
                        )
                    )
                else:
                    bad(f"examples[{i}]", "must be a string or an object with a string 'code'")
            out["examples"] = tuple(parsed)
    for name, keys in (("command", ("command", "syntax")), ("uri", ("url", "uri"))):
        value = _get(meta, *keys)
        if value is not None:
            if not isinstance(value, str):
                bad(name, "must be a string")
            else:
                out[name] = value.strip()
    updated = _get(meta, "lastupdated", "last_updated")
    if updated is not None:
        text = updated.isoformat() if isinstance(updated, datetime) else str(updated)
        try:
            datetime.fromisoformat(text.replace("Z", "+00:00"))
            out["updated_at"] = text
        except ValueError:
            bad("lastUpdated", f"must be an ISO 8601 timestamp; got {text!r}")
    return out


def parse_structured(text: str, path: str) -> Any:
    """JSON or YAML by suffix; errors name the line and column."""
    if path.lower().endswith(".json"):
        try:
            return load_json(text, path)
        except json.JSONDecodeError as exc:
            raise IngestError(
                f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}", path
            ) from exc
    try:
        return load_yaml(text, path)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise IngestError(f"invalid YAML{where}: {problem}", path) from exc


_ARGUMENT = re.compile(r"""[@/.:=\\"'$<>\[\]{}|*?]|^-|^\d|^[A-Z0-9_]+$""")


def command_name(invocation: str) -> str:
    """The command an example runs, without its arguments: the words of its first line
    up to the first that looks like an argument (an option, a placeholder, an email, a
    path, a number, a quoted or upper-case value): ``helios gw users get jane@example.com``
    → ``helios gw users get``."""
    lines = invocation.strip().splitlines()
    words: list[str] = []
    for word in lines[0].split() if lines else []:
        if _ARGUMENT.search(word):
            break
        words.append(word)
    return " ".join(words)


def example_markdown(examples: tuple[Example, ...]) -> str:
    parts = ["## Examples"]
    for ex in examples:
        if ex.description:
            parts.append(ex.description)
        parts.append(f"```\n{ex.code}\n```")
        if ex.output:
            parts.append(f"Output:\n```\n{ex.output}\n```")
    return "\n\n".join(parts)


def build_entry(entry: Any, ctx: LoadContext, where: str, errors: list[FileError]) -> Loaded | None:
    path = ctx.origin
    if not isinstance(entry, Mapping):
        errors.append(FileError(path, "an entry must be an object", where.rstrip(".")))
        return None
    before = len(errors)
    required: dict[str, str] = {}
    for name in ("id", "type", "title", "category", "content"):
        value = _get(entry, name)
        if value is None or (isinstance(value, str) and not value.strip()):
            errors.append(FileError(path, "is required", f"{where}{name}"))
        elif not isinstance(value, str | int) or isinstance(value, bool):
            errors.append(FileError(path, "must be a string", f"{where}{name}"))
        else:
            required[name] = str(value).strip()
    fields = common_fields(entry, path, where, errors)
    if "id" in required and any(ch.isspace() for ch in required["id"]):
        errors.append(FileError(path, "must not contain spaces", f"{where}id"))
    if len(errors) > before:
        return None
    examples: tuple[Example, ...] = fields.get("examples", ())
    command = fields.get("command", "")
    if not command and fields.get("type") == "command" and examples:
        command = command_name(examples[0].code)
    extra = {
        k: v
        for k, v in entry.items()
        if isinstance(k, str) and k.lower().replace("-", "_") not in _KNOWN
    }
    origin_source = _get(entry, "source")
    metadata: dict[str, Any] = {**extra}
    if command:
        metadata["command"] = command
    if isinstance(origin_source, str) and origin_source:
        metadata["generated_from"] = origin_source
    content = required["content"]
    doc = Document(
        id=required["id"],
        source=ctx.source,
        title=required["title"],
        content=content,
        type=fields["type"],
        category=required["category"],
        subcategory=fields.get("subcategory", ""),
        summary=fields.get("summary", ""),
        keywords=fields.get("keywords", ()),
        aliases=fields.get("aliases", ()),
        examples=examples,
        related_ids=fields.get("related_ids", ()),
        uri=fields.get("uri") or f"{ctx.source}:{ctx.origin}#{required['id']}",
        origin=ctx.origin,
        origin_hash=ctx.origin_hash,
        updated_at=fields.get("updated_at", ""),
        metadata=metadata,
    )
    body = content if not examples else f"{content}\n\n{example_markdown(examples)}"
    if doc.summary and doc.summary not in body:
        body = f"{doc.summary}\n\n{body}"
    return finalize(doc, chunk_markdown(doc, body, ctx.max_chunk_tokens))


class EntriesLoader:
    name = "entries"
    version = "2"
    suffixes: tuple[str, ...] = (".json", ".yaml", ".yml")

    def sniff(self, data: bytes) -> bool:
        return True

    def load(self, data: bytes, ctx: LoadContext) -> tuple[list[Loaded], list[FileError]]:
        try:
            parsed = parse_structured(decode_text(data, ctx.origin), ctx.origin)
        except IngestError as exc:
            return [], [FileError(ctx.origin, exc.reason, exc.field)]
        if parsed is None:
            return [], []
        if isinstance(parsed, Mapping) and "entries" in parsed:
            items, prefix = parsed["entries"], "entries"
        elif isinstance(parsed, Mapping):
            items, prefix = [parsed], ""
        else:
            items, prefix = parsed, ""
        if not isinstance(items, list):
            return [], [FileError(ctx.origin, "expected a list of entries", prefix)]
        errors: list[FileError] = []
        out: list[Loaded] = []
        for i, item in enumerate(items):
            where = (
                f"{prefix}[{i}]."
                if prefix or len(items) > 1 or not isinstance(parsed, Mapping)
                else ""
            )
            loaded = build_entry(item, ctx, where, errors)
            if loaded:
                out.append(loaded)
        return out, errors
