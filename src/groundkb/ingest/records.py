"""JSON Lines corpora: one record per line, ``{"id", "title", "text"}``.

This is the corpus format of BEIR-style evaluation sets and of most exported
knowledge dumps. Optional fields per record: ``type``, ``category``, ``url``,
``keywords``, ``aliases``, ``summary``, and ``meta`` (kept as metadata). A bad line is
reported with its line number; the other lines are still ingested.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..analyze.chunk import chunk_plain
from ..errors import IngestError
from ..models import DOC_TYPES, Document, FileError
from .base import LoadContext, Loaded, decode_text, finalize, str_list
from .structured import load_json


def record_document(rec: Mapping[str, Any], ctx: LoadContext, where: str
                    ) -> tuple[Document | None, str]:  # fmt: skip
    """A Document from one record, or None and the reason it is invalid."""
    doc_id = rec.get("id", rec.get("_id"))
    if not isinstance(doc_id, str | int) or isinstance(doc_id, bool) or not str(doc_id).strip():
        return None, "id is required"
    text = rec.get("text", rec.get("content", ""))
    title = rec.get("title") or ""
    if not isinstance(text, str) or not isinstance(title, str):
        return None, "title and text must be strings"
    if not text.strip() and not title.strip():
        return None, "title or text is required"
    doc_type = rec.get("type", "page")
    if doc_type not in DOC_TYPES:
        return None, f"type must be one of {', '.join(DOC_TYPES)}"
    keywords = str_list(rec.get("keywords"))
    aliases = str_list(rec.get("aliases"))
    if keywords is None or aliases is None:
        return None, "keywords and aliases must be lists of strings"
    meta = rec.get("meta") if isinstance(rec.get("meta"), Mapping) else {}
    return Document(
        id=str(doc_id).strip(),
        source=ctx.source,
        title=title.strip() or str(doc_id),
        content=text,
        type=doc_type,
        category=str(rec.get("category") or ""),
        summary=str(rec.get("summary") or ""),
        keywords=keywords,
        aliases=aliases,
        uri=str(rec.get("url") or ""),
        origin=ctx.origin,
        origin_hash=ctx.origin_hash,
        metadata=dict(meta or {}),
    ), ""


class RecordsLoader:
    name = "records"
    version = "1"
    suffixes: tuple[str, ...] = (".jsonl",)

    def sniff(self, data: bytes) -> bool:
        return True

    def load(self, data: bytes, ctx: LoadContext) -> tuple[list[Loaded], list[FileError]]:
        try:
            text = decode_text(data, ctx.origin)
        except IngestError as exc:
            return [], [FileError(ctx.origin, exc.reason)]
        out: list[Loaded] = []
        errors: list[FileError] = []
        for lineno, line in enumerate(text.split("\n"), 1):
            if not line.strip():
                continue
            where = f"line {lineno}"
            try:
                rec = load_json(line, ctx.origin)
            except json.JSONDecodeError as exc:
                errors.append(FileError(ctx.origin, f"invalid JSON: {exc.msg}", where))
                continue
            except IngestError as exc:
                errors.append(FileError(ctx.origin, exc.reason, where))
                continue
            if not isinstance(rec, Mapping):
                errors.append(FileError(ctx.origin, "a record must be an object", where))
                continue
            doc, problem = record_document(rec, ctx, where)
            if doc is None:
                errors.append(FileError(ctx.origin, problem, where))
                continue
            body = doc.content or doc.title
            out.append(finalize(doc, chunk_plain(doc, body, ctx.max_chunk_tokens)))
        return out, errors
