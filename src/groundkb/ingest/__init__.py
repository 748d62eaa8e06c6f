"""Ingestion: find files, pick a loader for each, write what changed.

A source is a set. Ingesting a path into a source inserts new documents, rewrites only
changed chunks, skips unchanged files without parsing them (by a hash of their bytes),
and deletes documents that disappeared. Documents of a file that failed to load are
kept as they were, so a broken edit never loses knowledge.

**Which loader reads a file.** The suffix gives the candidates, in this order; the first
whose cheap content sniff accepts the file wins, and the last always does:

=====================  ====================================================================
``.json .yaml .yml``   ``openapi`` (top-level ``openapi``/``swagger`` version key), then
                       ``catalog`` (top-level ``commands:`` list), then ``entries``
``.md .markdown .mdx`` ``tldr`` (the whole page is tldr-shaped: ``# name``, ``> lines``,
                       ``- description:`` and `` `code` `` lines only), then ``markdown``
``.jsonl``             ``records``
``.html .htm .xhtml``  ``html`` (main content to Markdown; needs the ``web`` extra)
``.pdf``               ``pdf`` (one document per page; needs the ``pdf`` extra)
``.docx``              ``docx`` (headings as the header path; needs the ``docx`` extra)
``.rst .rest``         ``rst`` (section titles as the header path; needs the ``rst`` extra)
=====================  ====================================================================

``ingest_path(..., loader="tldr")`` forces one loader for every file it has a suffix for;
``loader="rst"`` or ``"markdown"`` also reads ``.txt`` files, which are skipped otherwise
(``FORCED_SUFFIXES``).

**One bad file never stops a batch.** Only regular files are read, at most
``MAX_FILE_BYTES`` each (``files.py``); structured text is parsed within depth and
alias-expansion bounds (``structured.py``); and every file is loaded under a guard that
turns anything a loader raises into a problem for that file. An unreadable folder is an
error for its path, and the documents ingested from it before stay.
JSON/YAML files referenced through ``$ref`` by an OpenAPI spec in the same ingest are
part of that spec and produce no documents of their own (see ``openapi.py``).

:func:`ingest_python_cli` makes a source equal to the commands of a Python CLI object
(argparse, click or typer), through the same writer as files; ``web.py`` does the same
for a crawl of a website (:func:`groundkb.ingest.web.ingest_url`).
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InvalidInput
from ..models import FileError, IngestReport
from ..store.base import Store
from .base import LoadContext, Loaded, Loader
from .catalog import CatalogLoader
from .docx import DocxLoader
from .entries import EntriesLoader
from .files import Found, read_regular, walk
from .html import HtmlLoader
from .markdown import MarkdownLoader
from .oas_schema import referenced_files
from .openapi import OpenAPILoader
from .pdf import PdfLoader
from .records import RecordsLoader
from .rst import RstLoader
from .tldr import TldrLoader
from .writer import SourceWriter

log = logging.getLogger(__name__)

# Order matters: for one suffix, earlier loaders are sniffed first; the last one is the fallback.
LOADERS: tuple[Loader, ...] = (
    OpenAPILoader(),
    CatalogLoader(),
    EntriesLoader(),
    TldrLoader(),
    MarkdownLoader(),
    RecordsLoader(),
    HtmlLoader(),
    RstLoader(),
    PdfLoader(),
    DocxLoader(),
)
LOADER_NAMES: tuple[str, ...] = tuple(loader.name for loader in LOADERS)
MAX_FILE_BYTES = 64 * 1024 * 1024
_STRUCTURED = (".json", ".yaml", ".yml")

# progress(done, total, name): ``name`` is the item just started; a call with done == 0
# starts a phase, and its name is the phase ("ingesting", "embedding").
Progress = Callable[[int, int, str], None]


# Suffixes a loader reads only when it is forced (``--loader``): plain ``.txt`` is as
# often requirements.txt, robots.txt or a page's AsciiDoc source as prose, so a folder's
# .txt files are skipped unless the ingest says what they are (Django's documentation
# is reStructuredText in .txt files: ``--loader rst``).
FORCED_SUFFIXES: dict[str, tuple[str, ...]] = {"rst": (".txt",), "markdown": (".txt",)}


def loader_for(path: str, data: bytes | None = None, forced: str | None = None) -> Loader | None:
    """The loader for a file name (and content, when given); None for unsupported files.

    Without ``data`` the fallback loader of the suffix is returned. ``forced`` names a
    loader to use whenever it handles the suffix, or one of its ``FORCED_SUFFIXES``.
    """
    low = path.lower()
    if forced and low.endswith(FORCED_SUFFIXES.get(forced, ())):
        return next(loader for loader in LOADERS if loader.name == forced)
    candidates = [loader for loader in LOADERS if low.endswith(loader.suffixes)]
    if not candidates:
        return None
    if forced:
        chosen = [c for c in candidates if c.name == forced]
        if chosen:
            return chosen[0]
    if data is None:
        return candidates[-1]
    for loader in candidates[:-1]:
        if loader.sniff(data):
            return loader
    return candidates[-1]


def discover(
    root: Path, found: Found | None = None, forced: str | None = None
) -> Iterator[tuple[Path, str]]:
    """(file, path relative to root) for every loadable file (with loader ``forced``, if
    given); hidden entries skipped. Unreadable folders, file names that are not UTF-8
    and unsupported files are recorded in ``found`` (see ``files.py``)."""
    yield from walk(root, lambda name: loader_for(name, forced=forced) is not None, found)


@dataclass
class _Planned:
    file: Path
    rel: str
    loader: Loader | None = None  # None: unreadable (the error says why)
    error: str = ""
    refs: list[Path] = field(default_factory=list)  # files a spec refers to
    part_of_spec: bool = False
    digest: bytes = b""  # sha1 of the bytes read when planning


def _read(file: Path) -> bytes:
    return read_regular(file, MAX_FILE_BYTES)


def _crashed(rel: str, exc: Exception) -> FileError:
    """A problem for a file whose loader raised (a bug or an exhausted resource)."""
    log.warning("loading %s failed", rel, exc_info=exc)
    if isinstance(exc, RecursionError):
        return FileError(rel, "nested too deeply to load")
    if isinstance(exc, MemoryError):
        return FileError(rel, "too large to load in memory")
    return FileError(rel, f"could not be loaded ({type(exc).__name__}; see the log)")


def _plan(
    files: list[tuple[Path, str]], forced: str | None, allowed: tuple[Path, ...]
) -> list[_Planned]:
    """Pick each file's loader from its content; mark files that belong to a split spec."""
    plan: list[_Planned] = []
    claimed: set[Path] = set()
    for file, rel in files:
        item = _Planned(file, rel)
        try:
            data = _read(file)
        except OSError as exc:
            item.error = f"cannot read: {exc.strerror or exc}"
            plan.append(item)
            continue
        try:
            item.loader = loader_for(rel, data, forced)
            item.digest = hashlib.sha1(data).digest()
            if item.loader is not None and item.loader.name == "openapi":
                item.refs = referenced_files(data, file, *allowed)
                claimed.update(r for r in item.refs if r.suffix.lower() in _STRUCTURED)
        except Exception as exc:  # one file never stops the batch
            item.loader, item.error = None, _crashed(rel, exc).message
        plan.append(item)
    if claimed:
        for item in plan:
            is_spec = item.loader is not None and item.loader.name == "openapi"
            if not is_spec and item.file.resolve() in claimed:
                item.part_of_spec = True
    return plan


def _file_hash(loader: Loader, max_chunk_tokens: int, digest: bytes, refs: list[Path]) -> str:
    """What decides a file's documents: its loader, the chunk size, the sha1 of its bytes
    and the files it refers to."""
    h = hashlib.sha1(f"{loader.name}:{loader.version}:{max_chunk_tokens}:".encode() + digest)
    for ref in sorted(refs):
        h.update(b"\x00" + str(ref).encode("utf-8", "surrogateescape") + b"\x00")
        try:
            h.update(ref.read_bytes())
        except OSError:
            h.update(b"<unreadable>")
    return h.hexdigest()[:16]


def ingest_path(
    store: Store,
    path: str | os.PathLike[str],
    source: str,
    *,
    max_chunk_tokens: int = 500,
    progress: Progress | None = None,
    loader: str | None = None,
    ref_paths: Sequence[str | os.PathLike[str]] = (),
) -> IngestReport:
    """Make source ``source`` equal to the documents of the files under ``path``.

    ``loader`` forces a loader by name (one of :data:`LOADER_NAMES`) for the files whose
    suffix it handles, instead of choosing by content. OpenAPI ``$ref`` may read files
    under ``path`` (its folder, for a file) and under the folders of ``ref_paths``.
    """
    started = time.perf_counter()
    root = Path(path)
    if not root.exists():
        raise InvalidInput(f"{root} does not exist")
    if not source or not source.strip():
        raise InvalidInput("a source name is required")
    if loader is not None and loader not in LOADER_NAMES:
        raise InvalidInput(f"unknown loader {loader!r}; expected one of {', '.join(LOADER_NAMES)}")
    if root.is_file() and loader_for(root.name, forced=loader) is None:
        suffixes = sorted({s for ld in LOADERS for s in ld.suffixes})
        raise InvalidInput(
            f"{root}: unsupported file type; expected one of {' '.join(suffixes)}"
            " (.txt with --loader rst or --loader markdown)"
        )
    found = Found()
    files = list(discover(root, found, loader))
    folder = (root if root.is_dir() else root.parent).resolve()
    allowed = (folder, *(Path(p).resolve() for p in ref_paths))
    plan = _plan(files, loader, allowed)
    writer = SourceWriter(store, source, str(root.resolve()), started)
    for rel, why in found.unreadable:  # its documents stay (see SourceWriter.finish)
        writer.fail_folder(rel, FileError(rel or ".", f"cannot read this folder: {why}"))
    for rel in found.bad_names:
        writer.fail(rel, [FileError(rel, "file name is not valid UTF-8; rename the file")])
    writer.skipped.extend(found.skipped)
    if progress:
        progress(0, len(plan), "ingesting")
    for n, item in enumerate(plan, 1):
        if progress:
            progress(n, len(plan), item.rel)
        if item.part_of_spec:
            continue
        if item.loader is None:
            writer.fail(item.rel, [FileError(item.rel, item.error)])
            continue
        ld = item.loader
        writer.loaders_used.add(ld.name)
        # An unchanged file is known by the digest taken when planning: not read again.
        fhash = _file_hash(ld, max_chunk_tokens, item.digest, item.refs)
        if writer.unchanged(item.rel, fhash):
            continue
        try:
            data = _read(item.file)
        except OSError as exc:
            writer.fail(item.rel, [FileError(item.rel, f"cannot read: {exc.strerror or exc}")])
            continue
        digest = hashlib.sha1(data).digest()
        if digest != item.digest:  # written to since it was planned: hash what is loaded
            fhash = _file_hash(ld, max_chunk_tokens, digest, item.refs)
        ctx = LoadContext(
            source,
            item.rel,
            fhash,
            max_chunk_tokens,
            str(item.file.parent.resolve()),
            str(folder),
            tuple(str(a) for a in allowed[1:]),
        )
        try:
            loaded, file_errors = ld.load(data, ctx)
        except Exception as exc:  # a loader's bug or an exhausted resource: this file only
            writer.fail(item.rel, [_crashed(item.rel, exc)])
            continue
        writer.add(item.rel, loaded, file_errors)
    return writer.finish(len(files))


def ingest_python_cli(
    store: Store,
    target: str | Any,
    source: str,
    *,
    program: str | None = None,
    max_chunk_tokens: int = 500,
) -> IngestReport:
    """Make source ``source`` equal to the commands of a Python CLI.

    ``target`` is ``"package.module:object"`` (imported, so its module code runs) or the
    object itself: an ``argparse.ArgumentParser``, a click command or group, a
    ``typer.Typer`` app, or a callable returning one of these. ``program`` overrides the
    program name (default: the click command name or the parser's ``prog``).
    """
    from .pycli import describe_target, load_cli

    started = time.perf_counter()
    if not source or not source.strip():
        raise InvalidInput("a source name is required")
    origin = describe_target(target)
    loaded, errors = load_cli(target, source, program=program, max_chunk_tokens=max_chunk_tokens)
    writer = SourceWriter(store, source, origin, started)
    writer.loaders_used.add("pycli")
    writer.add(origin, loaded, errors)
    return writer.finish(1)


__all__ = [
    "LOADERS",
    "LOADER_NAMES",
    "LoadContext",
    "Loaded",
    "Loader",
    "discover",
    "ingest_path",
    "ingest_python_cli",
    "loader_for",
]
