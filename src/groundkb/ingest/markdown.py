"""Markdown pages with optional YAML front matter.

Front matter may set ``id``, ``title``, ``type``, ``category``, ``subcategory``,
``summary``, ``keywords``, ``aliases``, ``related``, ``examples``, ``command`` and ``url``.
Defaults: id = path without suffix, title = first heading (else the file name),
type = ``page``, category = parent folder, summary = first paragraph. A man page (a
``NAME`` section reading ``name - description``, see ``manpage.py``) is the command it
documents unless the front matter sets a type or a command.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

import yaml

from ..analyze.chunk import chunk_markdown, first_heading, split_sections
from ..errors import IngestError
from ..models import Document, FileError
from .base import LoadContext, Loaded, decode_text, finalize
from .entries import common_fields
from .manpage import as_man_page, man_page
from .structured import load_yaml

_FRONT = re.compile(r"\A---[ \t]*\n(.*?)\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
_INLINE = re.compile(r"!?\[([^\]]*)\]\([^)]*\)|[*_`>#]")


def split_front_matter(text: str, path: str) -> tuple[Mapping[str, Any], str]:
    m = _FRONT.match(text)
    if not m:
        if text.startswith("---\n"):
            raise IngestError(
                "front matter starts with '---' but is never closed", path, "front matter"
            )
        return {}, text
    try:
        meta = load_yaml(m.group(1), path)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 2}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise IngestError(f"invalid YAML{where}: {problem}", path, "front matter") from exc
    if meta is None:
        meta = {}
    if not isinstance(meta, Mapping):
        raise IngestError("must be a mapping of fields", path, "front matter")
    return meta, text[m.end() :]


def plain(text: str) -> str:
    return " ".join(_INLINE.sub(lambda m: m.group(1) or "", text).split())


def first_paragraph(body: str, limit: int = 280) -> str:
    for section in split_sections(body):
        for block in section.blocks:
            if block.lstrip().startswith(("```", "~~~", "|", "<")):
                continue
            text = plain(block)
            if text:
                return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"
    return ""


class MarkdownLoader:
    name = "markdown"
    version = "2"
    suffixes: tuple[str, ...] = (".md", ".markdown", ".mdx")

    def sniff(self, data: bytes) -> bool:
        return True

    def load(self, data: bytes, ctx: LoadContext) -> tuple[list[Loaded], list[FileError]]:
        path = ctx.origin
        try:
            meta, body = split_front_matter(decode_text(data, path), path)
        except IngestError as exc:
            return [], [FileError(path, exc.reason, exc.field)]
        errors: list[FileError] = []
        fields = common_fields(meta, path, "front matter.", errors)
        doc_id = meta.get("id", PurePosixPath(path).with_suffix("").as_posix())
        if not isinstance(doc_id, str | int) or not str(doc_id).strip():
            errors.append(FileError(path, "must be a non-empty string", "front matter.id"))
        if errors:
            return [], errors
        heading = first_heading(body)
        stem = PurePosixPath(path).stem
        title = fields.get("title") or (heading[1] if heading else "") or stem.replace("-", " ")
        parent = PurePosixPath(path).parent.name
        metadata: dict[str, Any] = {}
        if fields.get("command"):
            metadata["command"] = fields["command"]
        doc = Document(
            id=str(doc_id).strip(),
            source=ctx.source,
            title=title,
            content=body,
            type=fields.get("type", "page"),
            category=fields.get("category", parent),
            subcategory=fields.get("subcategory", ""),
            summary=fields.get("summary") or first_paragraph(body),
            keywords=fields.get("keywords", ()),
            aliases=fields.get("aliases", ()),
            examples=fields.get("examples", ()),
            related_ids=fields.get("related_ids", ()),
            uri=fields.get("uri", ""),
            origin=path,
            origin_hash=ctx.origin_hash,
            updated_at=fields.get("updated_at", ""),
            metadata=metadata,
        )
        if "type" not in fields and "command" not in metadata:
            man = man_page(title, body)
            if man is not None:
                doc = as_man_page(doc, man, keep_summary="summary" in fields)
        return [finalize(doc, chunk_markdown(doc, body, ctx.max_chunk_tokens))], []
