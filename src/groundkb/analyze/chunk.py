"""Header-aware chunking of Markdown text with stable ids and hashes.

A document is split at headings, then at blank lines, into chunks of at most
``max_tokens`` (estimated as characters / 4). A fenced code block is never split, even
when it alone is larger than the limit. Every chunk keeps the path of headings above
it, e.g. ``Widgets > Quick Links > Editing``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from ..models import Chunk, Document, content_hash

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")
_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")

DEFAULT_MAX_TOKENS = 500


def estimate_tokens(text: str) -> int:
    """A cheap token estimate (about four characters a token for English prose)."""
    return (len(text) + 3) // 4


@dataclass(frozen=True, slots=True)
class Section:
    path: tuple[str, ...]
    blocks: tuple[str, ...]


def clean_heading(text: str) -> str:
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # [label](url) -> label
    # Code spans keep their text; elsewhere emphasis marks go, but an underscore inside
    # a word (max_retries) stays.
    parts = re.split(r"(`[^`]+`)", text)
    return "".join(
        p.strip("`") if p.startswith("`") else re.sub(r"[`*]|(?<!\w)_+|_+(?!\w)", "", p)
        for p in parts
    ).strip()


def first_heading(markdown: str) -> tuple[int, str] | None:
    for section_line in _lines_outside_fences(markdown):
        m = _HEADING.match(section_line)
        if m:
            return len(m.group(1)), clean_heading(m.group(2))
    return None


def _lines_outside_fences(markdown: str) -> Iterator[str]:
    fence = ""
    for line in markdown.splitlines():
        m = _FENCE.match(line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = ""
            continue
        if m:
            fence = m.group(1)
            continue
        yield line


def split_sections(markdown: str) -> list[Section]:
    """Split Markdown into heading sections; each holds paragraph and code blocks."""
    sections: list[Section] = []
    stack: list[tuple[int, str]] = []
    blocks: list[str] = []
    current: list[str] = []
    fence = ""

    def end_block() -> None:
        text = "\n".join(current).strip("\n")
        if text.strip():
            blocks.append(text)
        current.clear()

    def end_section() -> None:
        end_block()
        if blocks:
            sections.append(Section(tuple(t for _, t in stack), tuple(blocks)))
        blocks.clear()

    for line in markdown.splitlines():
        m = _FENCE.match(line)
        if fence:
            current.append(line)
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = ""
                end_block()
            continue
        if m:
            end_block()
            fence = m.group(1)
            current.append(line)
            continue
        h = _HEADING.match(line)
        if h:
            end_section()
            level = len(h.group(1))
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, clean_heading(h.group(2))))
            continue
        if not line.strip():
            end_block()
        else:
            current.append(line)
    end_section()  # an unclosed fence runs to the end, as in CommonMark
    return sections


def _split_long(block: str, max_tokens: int) -> list[str]:
    """Split an oversized prose block at sentence ends, then at lines; never code."""
    if estimate_tokens(block) <= max_tokens or _FENCE.match(block):
        return [block]
    pieces = _SENTENCE_END.split(block)
    if len(pieces) == 1:
        pieces = block.splitlines()
    out: list[str] = []
    buf = ""
    for piece in pieces:
        candidate = f"{buf} {piece}".strip() if buf else piece
        if buf and estimate_tokens(candidate) > max_tokens:
            out.append(buf)
            buf = piece
        else:
            buf = candidate
    if buf:
        out.append(buf)
    # A single sentence longer than the limit is cut at a word boundary.
    final: list[str] = []
    limit = max_tokens * 4
    for piece in out:
        while len(piece) > limit:
            cut = piece.rfind(" ", 0, limit)
            cut = cut if cut > 0 else limit
            final.append(piece[:cut])
            piece = piece[cut:].lstrip()
        if piece:
            final.append(piece)
    return final


def pack(blocks: Sequence[str], max_tokens: int) -> list[str]:
    """Greedily pack blocks into chunk texts of at most ``max_tokens`` each."""
    chunks: list[str] = []
    buf: list[str] = []
    size = 0
    for block in blocks:
        for piece in _split_long(block, max_tokens):
            t = estimate_tokens(piece)
            if buf and size + t > max_tokens:
                chunks.append("\n\n".join(buf))
                buf, size = [], 0
            buf.append(piece)
            size += t
    if buf:
        chunks.append("\n\n".join(buf))
    return chunks


def chunk_hash_for(doc: Document, header_path: str, text: str) -> str:
    """Everything indexed with a chunk goes into its hash, so a changed title re-indexes it."""
    return content_hash(doc.title, "|".join(doc.aliases), "|".join(doc.keywords), header_path, text)


def chunk_markdown(
    doc: Document, markdown: str, max_tokens: int = DEFAULT_MAX_TOKENS
) -> list[Chunk]:
    """Chunks for a Markdown body; text before the first heading gets the title as path."""
    chunks: list[Chunk] = []
    for section in split_sections(markdown):
        header_path = " > ".join(section.path) if section.path else doc.title
        for text in pack(section.blocks, max_tokens):
            chunks.append(
                Chunk(
                    doc_id=doc.id,
                    index=len(chunks),
                    text=text,
                    header_path=header_path,
                    chunk_hash=chunk_hash_for(doc, header_path, text),
                )
            )
    if not chunks:
        text = doc.summary or doc.title
        chunks.append(Chunk(doc.id, 0, text, doc.title, chunk_hash_for(doc, doc.title, text)))
    return chunks


def chunk_plain(doc: Document, text: str, max_tokens: int = DEFAULT_MAX_TOKENS) -> list[Chunk]:
    """Chunks for text without headings (entries, corpus records): paragraphs only."""
    blocks = [b for b in re.split(r"\n\s*\n", text) if b.strip()] or [doc.title]
    return [
        Chunk(doc.id, i, t, doc.title, chunk_hash_for(doc, doc.title, t))
        for i, t in enumerate(pack(blocks, max_tokens))
    ]
