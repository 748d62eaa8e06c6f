"""CLI command catalogs in JSON or YAML: one ``command`` document per command.

A catalog is an object with a top-level ``commands`` list (that list is what tells a
catalog from an entries file)::

    program: helios                # optional; prefixed to names that lack it
    category: developer-console    # optional default category
    commands:
      - name: gw users list        # required (or ``syntax``); "helios gw users list" also works
        description: Lists all users synced from Google Workspace.   # required
        title: List Google Workspace users      # optional; default: the full name
        category: google-workspace              # optional; default: the catalog's, else the program
        syntax: helios gw users list [--format <fmt>]
        options:                                # objects or plain strings
          - name: --format
            description: Output format
            required: false
            default: table
        examples:                               # objects {description, code, output} or strings
          - description: List all users
            code: helios gw users list
        aliases: [list google users]
        keywords: [users, directory]
        related: [cmd:helios gw users get]
        id: cmd-gw-users-list                   # optional; default: ``cmd:{full name}``

``metadata["command"]`` is the full command name (``helios gw users list``), which is
what exact look-ups (``get_command``) match, and ``metadata["syntax"]`` the syntax line.
A bad command is reported with its index (``commands[3].name``); the others are ingested.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..analyze.chunk import chunk_markdown
from ..errors import IngestError
from ..models import Document, Example, FileError
from .base import LoadContext, Loaded, decode_text, finalize
from .entries import EntriesLoader, common_fields, parse_structured

_SNIFF_JSON = re.compile(rb'(?<!\\)"commands"\s*:\s*\[')
_SNIFF_YAML = re.compile(rb"^[\"']?commands[\"']?[ \t]*:[ \t]*(?:\[|#|\r?\n)", re.M)
_PLACEHOLDER_START = ("-", "<", "[", "{", "$", "'", '"', "|", ">")


@dataclass(frozen=True, slots=True)
class Option:
    name: str
    description: str = ""
    required: bool = False
    default: str = ""


@dataclass(frozen=True, slots=True)
class CommandSpec:
    """Everything a command document is built from, whatever the origin."""

    name: str  # full name, program first: "helios gw users list"
    description: str
    syntax: str = ""
    title: str = ""
    category: str = ""
    subcategory: str = ""
    options: tuple[Option, ...] = ()
    examples: tuple[Example, ...] = ()
    aliases: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    related_ids: tuple[str, ...] = ()
    id: str = ""
    uri: str = ""


def _summary(text: str, limit: int = 200) -> str:
    para = " ".join(text.strip().split("\n\n", 1)[0].split())
    m = re.match(r"(.+?[.!?])(?:\s|$)", para)
    first = m.group(1) if m else para
    return first if len(first) <= limit else first[: limit - 1].rsplit(" ", 1)[0] + "…"


def command_document(spec: CommandSpec, ctx: LoadContext, metadata: Mapping[str, Any]) -> Loaded:
    """A ``command`` document with name, syntax, options and examples in its content."""
    syntax = spec.syntax or spec.name
    lines = [f"# {spec.title or spec.name}", ""]
    if spec.description:
        lines += [spec.description.strip(), ""]
    lines += ["## Syntax", "", "```", syntax, "```"]
    if spec.options:
        lines += ["", "## Options", ""]
        for opt in spec.options:
            flags = ", ".join(
                x for x in ("required" if opt.required else "",
                            f"default: {opt.default}" if opt.default else "") if x
            )  # fmt: skip
            line = f"- `{opt.name}`" + (f" ({flags})" if flags else "")
            lines.append(line + (f": {opt.description}" if opt.description else ""))
    if spec.examples:
        lines += ["", "## Examples", ""]
        for ex in spec.examples:
            if ex.description:
                lines += [ex.description, ""]
            lines += ["```", ex.code, "```", ""]
            if ex.output:
                lines += ["Output:", "", "```", ex.output, "```", ""]
    body = "\n".join(lines).rstrip() + "\n"
    program = spec.name.split()[0] if spec.name.split() else ""
    doc = Document(
        id=spec.id or f"cmd:{spec.name}",
        source=ctx.source,
        title=spec.title or spec.name,
        content=body,
        type="command",
        category=spec.category or program,
        subcategory=spec.subcategory,
        summary=_summary(spec.description) if spec.description else spec.name,
        keywords=spec.keywords,
        aliases=spec.aliases,
        examples=spec.examples,
        related_ids=spec.related_ids,
        uri=spec.uri,
        origin=ctx.origin,
        origin_hash=ctx.origin_hash,
        metadata={"command": spec.name, "syntax": syntax, **metadata},
    )
    return finalize(doc, chunk_markdown(doc, body, ctx.max_chunk_tokens))


def _text(value: Any) -> str | None:
    if value is None:
        return ""
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        return str(value).strip()
    return None


def _options(raw: Any, where: str, path: str, errors: list[FileError]) -> tuple[Option, ...] | None:
    if raw is None:
        return ()
    if isinstance(raw, Mapping):  # {"--all": "Show all"}
        raw = [{"name": k, "description": v} for k, v in raw.items()]
    if not isinstance(raw, list):
        errors.append(FileError(path, "must be a list of options", f"{where}options"))
        return None
    out: list[Option] = []
    for i, opt in enumerate(raw):
        if isinstance(opt, str) and opt.strip():
            out.append(Option(opt.strip()))
            continue
        name = _text(opt.get("name") or opt.get("flag")) if isinstance(opt, Mapping) else None
        if not isinstance(opt, Mapping) or not name:
            errors.append(
                FileError(
                    path, "must be a string or an object with a 'name'", f"{where}options[{i}]"
                )
            )
            return None
        default = opt.get("default")
        out.append(
            Option(
                name=name,
                description=_text(opt.get("description") or opt.get("help")) or "",
                required=opt.get("required") is True,
                default="" if default is None else str(default),
            )
        )
    return tuple(out)


class CatalogLoader:
    name = "catalog"
    version = "1"
    suffixes: tuple[str, ...] = (".json", ".yaml", ".yml")

    def sniff(self, data: bytes) -> bool:
        return bool(_SNIFF_YAML.search(data) or _SNIFF_JSON.search(data))

    def load(self, data: bytes, ctx: LoadContext) -> tuple[list[Loaded], list[FileError]]:
        path = ctx.origin
        try:
            parsed = parse_structured(decode_text(data, path), path)
        except IngestError as exc:
            return [], [FileError(path, exc.reason, exc.field)]
        if not isinstance(parsed, Mapping) or not isinstance(parsed.get("commands"), list):
            return EntriesLoader().load(data, ctx)  # the sniff saw a nested key
        errors: list[FileError] = []
        program = _text(parsed.get("program"))
        default_category = _text(parsed.get("category"))
        if program is None or default_category is None:
            errors.append(FileError(path, "program and category must be strings"))
            return [], errors
        out: list[Loaded] = []
        for i, raw in enumerate(parsed["commands"]):
            where = f"commands[{i}]."
            spec = self._command(raw, program, default_category, where, path, errors)
            if spec is not None:
                meta = {"program": spec.name.split()[0]} if spec.name else {}
                out.append(command_document(spec, ctx, meta))
        return out, errors

    def _command(
        self, raw: Any, program: str, category: str, where: str, path: str, errors: list[FileError]
    ) -> CommandSpec | None:
        if not isinstance(raw, Mapping):
            errors.append(FileError(path, "a command must be an object", where.rstrip(".")))
            return None
        before = len(errors)
        name = _text(raw.get("name") or raw.get("command"))
        syntax = _text(raw.get("syntax") or raw.get("usage"))
        description = _text(raw.get("description") or raw.get("help") or raw.get("summary"))
        if name is None or syntax is None or description is None:
            errors.append(FileError(path, "name, syntax and description must be strings", where))
            return None
        if not name and syntax:
            name = name_from_syntax(syntax)
        if not name:
            errors.append(FileError(path, "is required", f"{where}name"))
        if not description:
            errors.append(FileError(path, "is required", f"{where}description"))
        options = _options(raw.get("options") or raw.get("flags"), where, path, errors)
        fields = common_fields(
            {k: v for k, v in raw.items() if k not in ("command", "syntax", "url")},
            path,
            where,
            errors,
        )
        if len(errors) > before or options is None:
            return None
        full = " ".join(name.split())
        if program and full.split()[0] != program:
            full = f"{program} {full}"
        doc_id = _text(raw.get("id")) or ""
        if any(ch.isspace() for ch in doc_id):
            errors.append(FileError(path, "must not contain spaces", f"{where}id"))
            return None
        return CommandSpec(
            name=full,
            description=description,
            syntax=syntax or full,
            title=fields.get("title", ""),
            category=fields.get("category") or category or program,
            subcategory=fields.get("subcategory", ""),
            options=options,
            examples=fields.get("examples", ()),
            aliases=fields.get("aliases", ()),
            keywords=fields.get("keywords", ()),
            related_ids=fields.get("related_ids", ()),
            id=doc_id,
            uri=_text(raw.get("url")) or "",
        )


def name_from_syntax(syntax: str) -> str:
    """The command words of a syntax line, up to the first option or placeholder."""
    words: list[str] = []
    for word in syntax.split():
        if word.startswith(_PLACEHOLDER_START) or "=" in word or word.isupper():
            break
        words.append(word)
    return " ".join(words)
