"""Word (.docx) files: headings as the header path, tables and code kept.

python-docx (MIT, the standard reader) walks the body in order. Each paragraph becomes
Markdown by its style: ``Title`` and ``Heading 1``–``Heading 9`` (or a style based on
one) become headings (below the title when there is one), list styles list items, code
styles (a style name containing "code" or "preformatted") a fenced block; hyperlinks
keep their URL; tables become pipe tables. The Markdown is chunked like any page, so a
section's chunks carry the path of headings above them.

A .docx is a ZIP archive, so before python-docx opens one the archive is checked: at
most 5,000 entries, 256 MiB uncompressed in all, and no entry over 1 MiB that expands
more than 200 times (Word's XML compresses about 5-20 times). A ZIP bomb is a per-file
error; reading then stays within the sizes the archive declares (Python's zipfile stops
at the declared size and fails the CRC check on a lie).
"""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import PurePosixPath
from typing import Any

from ..analyze.chunk import chunk_markdown
from ..errors import MissingDependency
from ..models import Document, FileError
from .base import LoadContext, Loaded, finalize, require
from .markdown import first_paragraph

MAX_ENTRIES = 5000
MAX_UNCOMPRESSED = 256 * 2**20
MAX_RATIO = 200
_HEADING_STYLE = re.compile(r"^heading\s*([1-9])$", re.I)


def zip_problem(data: bytes) -> str | None:
    """Why this archive is not a Word document we will open, or None."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            infos = z.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        return f"not a DOCX file (not a ZIP archive: {exc})"
    if len(infos) > MAX_ENTRIES:
        return f"ZIP archive with {len(infos):,} entries (more than {MAX_ENTRIES:,})"
    total = sum(i.file_size for i in infos)
    if total > MAX_UNCOMPRESSED:
        return (
            f"ZIP archive expands to {total:,} bytes (a ZIP bomb?); "
            f"the limit is {MAX_UNCOMPRESSED:,}"
        )
    for i in infos:
        if i.file_size > 2**20 and i.file_size > MAX_RATIO * max(i.compress_size, 1):
            return (
                f"ZIP entry {i.filename!r} expands {i.file_size // max(i.compress_size, 1)} "
                f"times (a ZIP bomb?)"
            )
    if not any(i.filename == "word/document.xml" for i in infos):
        return "not a Word document (no word/document.xml)"
    return None


def _level(style: Any) -> int:
    """Heading level of a paragraph style (through its base styles): 0 for body text,
    -1 for the document's ``Title``."""
    depth = 0
    while style is not None and depth < 10:
        name = str(getattr(style, "name", "") or "")
        if name.lower() == "title":
            return -1
        m = _HEADING_STYLE.match(name)
        if m:
            return int(m.group(1))
        style = getattr(style, "base_style", None)
        depth += 1
    return 0


def _inline(paragraph: Any) -> str:
    parts: list[str] = []
    for item in paragraph.iter_inner_content():
        text = str(item.text or "")
        url = str(getattr(item, "url", "") or "")
        parts.append(f"[{text}]({url})" if url and text.strip() else text)
    return "".join(parts)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _table(table: Any) -> str:
    rows = [[_cell(c.text) for c in row.cells] for row in table.rows]
    if not rows:
        return ""
    width = max(len(r) for r in rows)
    rows = [r + [""] * (width - len(r)) for r in rows]
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + " --- |" * width]
    lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
    return "\n".join(lines)


def docx_markdown(document: Any) -> tuple[str, str]:
    """(Markdown of the body, first heading) of a python-docx Document."""
    blocks: list[str] = []
    code: list[str] = []
    first_heading = ""
    items = list(document.iter_inner_content())
    # With a Title paragraph, the title is the top heading and "Heading 1" sits below it.
    shift = int(any(hasattr(i, "style") and not hasattr(i, "rows") and _level(i.style) < 0
                    for i in items))  # fmt: skip

    def end_code() -> None:
        if code:
            blocks.append("```\n" + "\n".join(code) + "\n```")
            code.clear()

    for item in items:
        if not hasattr(item, "style") or hasattr(item, "rows"):
            end_code()
            blocks.append(_table(item))
            continue
        style = item.style
        name = str(getattr(style, "name", "") or "").lower()
        if "code" in name or "preformatted" in name:
            code.append(str(item.text))
            continue
        end_code()
        text = _inline(item).strip()
        if not text:
            continue
        level = _level(style)
        if level:
            heading = " ".join(text.split())
            first_heading = first_heading or heading
            depth = 1 if level < 0 else level + shift
            blocks.append(f"{'#' * min(depth, 6)} {heading}")
        elif name.startswith("list number"):
            blocks.append(f"1. {text}")
        elif name.startswith("list"):
            blocks.append(f"- {text}")
        else:
            blocks.append(text)
    end_code()
    return "\n\n".join(b for b in blocks if b) + "\n", first_heading


def load_docx(
    data: bytes,
    ctx: LoadContext,
    *,
    doc_id: str,
    uri: str,
    category: str,
    updated_at: str = "",
) -> tuple[list[Loaded], list[FileError]]:
    where = ctx.origin
    try:
        docx = require("docx", "docx", "reading Word files")
    except MissingDependency as exc:
        return [], [FileError(where, exc.message)]
    problem = zip_problem(data)
    if problem:
        return [], [FileError(where, problem)]
    try:
        document = docx.Document(io.BytesIO(data))
        markdown, heading = docx_markdown(document)
        core_title = str(document.core_properties.title or "").strip()
    except Exception as exc:  # untrusted input into python-docx and lxml: per-file error
        return [], [FileError(where, f"corrupt DOCX: {exc or type(exc).__name__}")]
    if not markdown.strip():
        return [], [FileError(where, "no text in the document")]
    stem = PurePosixPath(doc_id.split("?")[0]).stem
    doc = Document(
        id=doc_id,
        source=ctx.source,
        title=core_title or heading or stem.replace("-", " ").replace("_", " "),
        content=markdown,
        category=category,
        summary=first_paragraph(markdown),
        uri=uri,
        origin=ctx.origin,
        origin_hash=ctx.origin_hash,
        updated_at=updated_at,
    )
    return [finalize(doc, chunk_markdown(doc, markdown, ctx.max_chunk_tokens))], []


class DocxLoader:
    """Local ``.docx`` files: id = path without suffix, like Markdown pages."""

    name = "docx"
    version = "1"
    suffixes: tuple[str, ...] = (".docx",)

    def sniff(self, data: bytes) -> bool:
        return True

    def load(self, data: bytes, ctx: LoadContext) -> tuple[list[Loaded], list[FileError]]:
        path = PurePosixPath(ctx.origin)
        return load_docx(
            data,
            ctx,
            doc_id=path.with_suffix("").as_posix(),
            uri="",
            category=path.parent.name,
        )


__all__ = ["DocxLoader", "docx_markdown", "load_docx", "zip_problem"]
