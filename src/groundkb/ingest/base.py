"""The Loader protocol and helpers shared by the loaders."""

from __future__ import annotations

import importlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from types import ModuleType
from typing import Any, Protocol

from ..errors import IngestError, MissingDependency
from ..models import Chunk, Document, FileError, content_hash


@dataclass(frozen=True, slots=True)
class Loaded:
    """A document ready to store, with its chunks."""

    doc: Document
    chunks: list[Chunk]


@dataclass(frozen=True, slots=True)
class LoadContext:
    source: str
    origin: str  # the file's path relative to the ingested root, '/'-separated
    origin_hash: str
    max_chunk_tokens: int
    # The absolute directory holding the file; relative references (an OpenAPI `$ref`
    # to another file) resolve against it ('' means the working directory).
    base_dir: str = ""
    # The folder being ingested: references may read files inside it (and inside the
    # folders of ``ref_allow``), nothing else ('' means base_dir).
    root_dir: str = ""
    ref_allow: tuple[str, ...] = ()


class Loader(Protocol):
    """Turns one file's bytes into documents.

    ``sniff`` decides from the bytes whether a file of one of ``suffixes`` is in this
    loader's format; it is cheap (no full parse), never raises, and the last loader
    registered for a suffix accepts anything. ``load`` never raises for bad content: it
    returns what it could load plus one :class:`FileError` per problem (file, field,
    message). A file that yields nothing and no errors is simply empty. ``version``
    changes whenever the documents produced for the same bytes change, so that
    unchanged files are parsed again after an upgrade.
    """

    name: str
    version: str
    suffixes: tuple[str, ...]

    def sniff(self, data: bytes) -> bool: ...

    def load(self, data: bytes, ctx: LoadContext) -> tuple[list[Loaded], list[FileError]]: ...


def require(module: str, extra: str, what: str) -> ModuleType:
    """Import an optional package, or raise MissingDependency naming the extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependency(
            f"{what} needs the '{extra}' extra: pip install 'groundkb[{extra}]' "
            f"({module.split('.')[0]} is not installed)"
        ) from exc


def decode_text(data: bytes, path: str) -> str:
    """UTF-8 text of a file, or IngestError for binary or non-UTF-8 content."""
    if b"\x00" in data[:8192]:
        raise IngestError("binary file (contains NUL bytes); expected UTF-8 text", path)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise IngestError(f"not valid UTF-8 (byte {exc.start}, line {line})", path) from exc
    return text.replace("\r\n", "\n").replace("\r", "\n")


def finalize(doc: Document, chunks: Sequence[Chunk]) -> Loaded:
    """Stamp the document's content hash: every stored field plus every chunk hash."""
    payload = json.dumps(
        [
            doc.title,
            doc.type,
            doc.category,
            doc.subcategory,
            doc.summary,
            doc.keywords,
            doc.aliases,
            [(e.code, e.description, e.output) for e in doc.examples],
            doc.related_ids,
            doc.content,
            doc.uri,
            dict(doc.metadata),
        ],
        default=str,
        sort_keys=True,
    )
    h = content_hash(payload, *(c.chunk_hash for c in chunks))
    return Loaded(replace(doc, content_hash=h), list(chunks))


def str_list(value: Any) -> tuple[str, ...] | None:
    """A list of strings (a comma-separated string is accepted too), else None."""
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(v.strip() for v in value.split(",") if v.strip())
    if isinstance(value, list | tuple) and all(isinstance(v, str | int | float) for v in value):
        return tuple(str(v).strip() for v in value if str(v).strip())
    return None
