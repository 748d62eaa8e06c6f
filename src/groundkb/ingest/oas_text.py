"""The text of an OpenAPI operation document: a short card, then the details.

An operation is stored as Markdown in two parts, so that a long description never
drowns what the operation is:

- **the card** (the document's first chunk, with a vector of its own): the title,
  ``METHOD path``, the lead of the description (its first sentences, at most
  :data:`LEAD_CHARS`) and each tag with the lead of its description;
- **the details** (``## Details``, packed into further chunks): the whole description,
  parameters and request-body fields with their descriptions and allowed values,
  responses with the name of the returned schema and its fields, request examples and
  the spec's own code samples (``x-codeSamples``), and a ``curl`` line.

Search scores every chunk and keeps an operation's best one, so a question phrased like
the summary finds the card and a question about a field finds the details.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .oas_schema import FieldInfo, html_to_text, short

LEAD_CHARS = 240
MAX_PARAMS_SHOWN = 60
MAX_REQUEST_FIELDS_SHOWN = 80
MAX_RESPONSE_FIELDS_SHOWN = 40
MAX_DESCRIPTION_CHARS = 4000
MAX_EXAMPLE_CHARS = 600
MAX_CODE_SAMPLES = 3

_SENTENCE = re.compile(r"(.+?[.!?])(?:\s|$)", re.S)


@dataclass(frozen=True, slots=True)
class Param:
    name: str
    location: str
    type: str
    required: bool
    description: str


@dataclass(frozen=True, slots=True)
class CodeSample:
    lang: str
    source: str


@dataclass
class OperationText:
    """Everything the text of one operation is made of."""

    method: str
    path: str
    title: str
    description: str = ""
    deprecated: bool = False
    tags: Sequence[tuple[str, str]] = ()  # (name, description lead)
    params: Sequence[Param] = ()
    media: str = ""
    body_required: bool = False
    fields: Sequence[FieldInfo] = ()
    fields_left: int = 0
    body_example: str = ""
    responses: Sequence[tuple[str, str]] = ()
    returns: str = ""  # name of the schema a success returns
    response_fields: Sequence[str] = ()
    response_left: int = 0
    samples: Sequence[CodeSample] = field(default_factory=tuple)
    curl: str = ""


def lead(text: str, limit: int = LEAD_CHARS) -> str:
    """The first sentences of ``text`` that fit in ``limit`` characters (at least one,
    cut at a word when even that is longer)."""
    para = " ".join(text.split("\n\n", 1)[0].split())
    out = ""
    for m in _SENTENCE.finditer(para):
        sentence = m.group(1).strip()
        if out and len(out) + 1 + len(sentence) > limit:
            break
        out = f"{out} {sentence}".strip()
        if len(out) >= limit:
            break
    if not out:
        out = para
    return short(out, limit) if len(out) > limit else out


def description_text(raw: Any) -> str:
    text = html_to_text(str(raw or ""))
    if len(text) > MAX_DESCRIPTION_CHARS:
        text = text[:MAX_DESCRIPTION_CHARS].rsplit(" ", 1)[0] + " … (truncated)"
    return text


def card(op: OperationText) -> list[str]:
    """The card's Markdown lines (see the module docstring)."""
    lines = [f"`{op.method} {op.path}`" + (" (deprecated)" if op.deprecated else "")]
    first = lead(op.description) if op.description else ""
    if first and first.rstrip(".") != op.title.rstrip("."):
        lines += ["", first]
    for name, about in op.tags:
        lines += ["", f"{name}: {about}" if about else name]
    return lines


def details(op: OperationText) -> list[str]:
    """The details' Markdown lines (see the module docstring); empty when there are none."""
    lines: list[str] = []
    if op.description and lead(op.description) != op.description:
        lines += ["", op.description]
    if op.params:
        lines += ["", "**Parameters**", ""]
        for p in op.params[:MAX_PARAMS_SHOWN]:
            flags = ", ".join(
                x for x in (f"in {p.location}", p.type, "required" if p.required else "") if x
            )
            about = f": {p.description}" if p.description else ""
            lines.append(f"- `{p.name}` ({flags}){about}")
        if len(op.params) > MAX_PARAMS_SHOWN:
            lines.append(f"- … {len(op.params) - MAX_PARAMS_SHOWN} more parameters not shown")
    if op.media or op.fields:
        lines += ["", "**Request body**", ""]
        lines.append(f"`{op.media}`" + (" (required)" if op.body_required else ""))
        if op.fields:
            lines.append("")
            lines += [field_line(f) for f in op.fields[:MAX_REQUEST_FIELDS_SHOWN]]
            hidden = len(op.fields) - MAX_REQUEST_FIELDS_SHOWN + op.fields_left
            if hidden > 0:
                lines.append(f"- … {hidden} more fields not shown")
        if op.body_example:
            lines += ["", "Example body:", "", "```json", op.body_example, "```"]
    if op.responses:
        lines += ["", "**Responses**", ""]
        lines += [f"- `{status}`" + (f": {desc}" if desc else "") for status, desc in op.responses]
        if op.returns:
            lines += ["", f"Returns `{op.returns}`."]
        if op.response_fields:
            shown = ", ".join(f"`{n}`" for n in op.response_fields[:MAX_RESPONSE_FIELDS_SHOWN])
            more = len(op.response_fields) - MAX_RESPONSE_FIELDS_SHOWN + op.response_left
            lines += ["", f"Response fields: {shown}" + (f" and {more} more" if more > 0 else "")]
    for sample in op.samples[:MAX_CODE_SAMPLES]:
        lines += ["", f"**Example ({sample.lang})**", "", "```", sample.source, "```"]
    if op.curl:
        lines += ["", "**Example request**", "", "```sh", op.curl, "```"]
    return lines


def body(op: OperationText) -> str:
    """The whole Markdown content: ``# title``, the card, ``## Details``."""
    lines = [f"# {op.title}", "", *card(op)]
    more = details(op)
    if more:
        lines += ["", "## Details", *more]
    return "\n".join(lines)


def field_line(f: FieldInfo) -> str:
    flags = ", ".join(x for x in (f.type, "required" if f.required else "") if x)
    return f"- `{f.name}` ({flags})" + (f": {f.description}" if f.description else "")


def example_text(value: Any) -> str:
    """An example value as compact JSON, cut to :data:`MAX_EXAMPLE_CHARS`."""
    try:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return ""
    return text if len(text) <= MAX_EXAMPLE_CHARS else text[: MAX_EXAMPLE_CHARS - 1] + "…"


def media_example(entry: Mapping[str, Any]) -> Any:
    """The example of a media type object: ``example``, else the first of ``examples``."""
    if "example" in entry:
        return entry["example"]
    examples = entry.get("examples")
    if isinstance(examples, Mapping):
        for ex in examples.values():
            if isinstance(ex, Mapping) and "value" in ex:
                return ex["value"]
    return None


def _placeholder(f: FieldInfo) -> str:
    return f"<{f.type.split(' ')[0].split('<')[0]}>"


def _json_value(f: FieldInfo) -> str:
    kind = f.type.split(" ")[0].split("<")[0]
    if kind == "array":
        return "[]"
    if kind in ("integer", "number"):
        return "0"
    if kind == "boolean":
        return "false"
    if kind == "string":
        return '"<string>"'
    return "{}"


def curl(
    method: str, server: str, path: str, params: Sequence[Param], media: str,
    fields: Sequence[FieldInfo],
) -> str:  # fmt: skip
    """An example ``curl`` line with the required query parameters, headers and fields."""
    query = [p for p in params if p.location == "query" and p.required]
    url = server + path
    if query:
        url += "?" + "&".join(f"{p.name}=<{p.type}>" for p in query[:4])
    parts = [f"curl -X {method} '{url}'"]
    for p in params:
        if p.location == "header" and p.required:
            parts.append(f"-H '{p.name}: <{p.type}>'")
    top = [f for f in fields if "." not in f.name and "[]" not in f.name and f.name != "(body)"]
    chosen = [f for f in top if f.required][:6] or top[:3]
    if media and "json" in media:
        parts.append("-H 'Content-Type: application/json'")
        if chosen:
            data = ", ".join(f'"{f.name}": {_json_value(f)}' for f in chosen)
            parts.append(f"-d '{{{data}}}'")
    elif media and chosen:
        flag = "-F" if "multipart" in media else "-d"
        parts.extend(f"{flag} '{f.name}={_placeholder(f)}'" for f in chosen)
    line = " ".join(parts)
    return line if len(line) <= 600 else line[:599] + "…"
