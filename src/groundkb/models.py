"""The data model every part of groundkb shares: frozen dataclasses, no behaviour.

Source ─< Document ─< Chunk. A search returns a :class:`SearchResult` holding a
:class:`Verdict` and :class:`Hit` objects, each a piece of evidence.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

DocType = Literal["command", "api", "guide", "feature", "troubleshooting", "setting", "page"]
DOC_TYPES: tuple[str, ...] = get_args(DocType)

VerdictKind = Literal["answer", "clarify", "no_match"]
VerdictReason = Literal[
    # answer
    "exact_command",
    "completed_command",
    "exact_title",
    "definition",
    "strong_match",
    "semantic_match",
    "dominant_match",
    "multi_intent",
    # clarify
    "ambiguous",
    "weak",
    "no_title_or_keyword_hit",
    "near_miss",
    # no_match
    "empty_query",
    "no_hits",
    "unknown_terms",
    "below_threshold",
    "unknown_command",
]
SourceKind = Literal["docs", "entries", "openapi", "commands", "mixed"]


def content_hash(*parts: str) -> str:
    """A short, stable hash of text parts (sha1, 16 hex digits); used for change detection."""
    h = hashlib.sha1()
    for part in parts:
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\x1f")
    return h.hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class Example:
    code: str
    description: str = ""
    output: str = ""


@dataclass(frozen=True, slots=True)
class Source:
    """A named set of documents ingested together (a docs folder, an entries file, a spec)."""

    name: str
    kind: SourceKind = "mixed"
    location: str = ""
    groups: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Document:
    """One page, entry, operation or command. ``id`` is stable across re-ingests."""

    id: str
    source: str
    title: str
    content: str
    type: DocType = "page"
    category: str = ""
    subcategory: str = ""
    summary: str = ""
    keywords: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    examples: tuple[Example, ...] = ()
    related_ids: tuple[str, ...] = ()
    uri: str = ""
    origin: str = ""
    origin_hash: str = ""
    content_hash: str = ""
    updated_at: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def command(self) -> str:
        """The exact invocation for ``type == "command"`` documents, else ''."""
        return str(self.metadata.get("command", ""))


@dataclass(frozen=True, slots=True)
class Chunk:
    """A searchable piece of a document; ``id`` is ``{doc_id}#{index}``."""

    doc_id: str
    index: int
    text: str
    header_path: str = ""
    chunk_hash: str = ""

    @property
    def id(self) -> str:
        return f"{self.doc_id}#{self.index}"


@dataclass(frozen=True, slots=True)
class Filters:
    """Restrict a search; empty tuples mean "any"."""

    types: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()

    def is_empty(self) -> bool:
        return not (self.types or self.categories or self.sources)

    def allows(self, type: str, category: str, source: str) -> bool:
        """Whether a document of this type, category and source passes."""
        return (
            (not self.types or type in self.types)
            and (not self.categories or category in self.categories)
            and (not self.sources or source in self.sources)
        )


@dataclass(frozen=True, slots=True)
class Hit:
    """One search result and the evidence for it."""

    doc_id: str
    chunk_id: str
    title: str
    type: str
    category: str
    source: str
    snippet: str
    score: float
    matched_terms: tuple[str, ...]
    header_path: str
    content_hash: str
    chunk_hash: str
    citation: str
    explanation: tuple[str, ...]
    ranks: Mapping[str, int] = field(default_factory=dict)
    retriever: str = "keyword"
    command: str = ""
    summary: str = ""
    method: str = ""  # API operations: the HTTP method, upper case
    path: str = ""  # API operations: the path as in the spec
    resource: str = ""  # API operations: the resource acted on (``payment_intent``)
    deprecated: bool = False  # API operations: its spec marks it deprecated


def without_full_stop(title: str) -> str:
    """``title`` without a closing full stop ("Returns a list of files."); an ellipsis
    stays."""
    return title[:-1] if title.endswith(".") and not title.endswith("..") else title


@dataclass(frozen=True, slots=True)
class Option:
    """One thing a clarifying question offers: a distinct meaning among the hits."""

    doc_id: str
    title: str
    category: str = ""
    type: str = ""
    command: str = ""
    source: str = ""  # set only where the options come from more than one source
    # The heading of the section a long page offers ("Timeouts" of "Advanced Usage"),
    # when that is not the page's top: two pages can both be the answer in part.
    section: str = ""
    # set only where two options would read the same otherwise: an API operation's
    # method and path (Stripe's "Create a refund" is three operations), else the
    # document's id
    detail: str = ""
    deprecated: bool = False  # an API operation its spec marks deprecated

    @property
    def name(self) -> str:
        """The command, or the title with the section when there is one; a title that
        closes with a full stop ("Pause a fine-tune job.", as some specs write their
        summaries) is named without it, since its category or a sentence follows."""
        if self.command:
            return f"`{self.command}`"
        title = without_full_stop(self.title)
        return f"{title} > {self.section}" if self.section else title

    @property
    def label(self) -> str:
        return f"{self.name} ({self.where})" if self.where else self.name

    @property
    def where(self) -> str:
        """Its source (when set), category, detail (when set) and "deprecated" (when it
        is), as a label names them."""
        marks = (self.source, self.category, self.detail, "deprecated" if self.deprecated else "")
        return ", ".join(x for x in marks if x)


@dataclass(frozen=True, slots=True)
class Verdict:
    """What an agent should do with the hits: answer, ask, or say it does not know.

    ``confidence`` is the probability behind the verdict (for ``answer``, that the top
    hit answers the question); ``reason`` names the evidence that decided; ``options``
    are the distinct meanings a ``clarify`` asks about (one for "is this what you
    mean?"), ``evidence`` the weighed signals, strongest first.
    """

    kind: VerdictKind
    confidence: float
    reason: VerdictReason
    message: str
    options: tuple[Option, ...] = ()
    evidence: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SearchResult:
    query: str
    verdict: Verdict
    hits: tuple[Hit, ...]
    suggestions: tuple[str, ...] = ()
    corrected_query: str = ""
    terms: tuple[str, ...] = ()
    # the sources a question was asked of because it named their product where it only
    # set the context ("in Stripe, how do I …" among several APIs); () when it named none
    asked_of: tuple[str, ...] = ()
    multi_intent: bool = False
    mode: str = "keyword"
    took_ms: float = 0.0
    notice: str = ""  # why it fell back to keyword-only, or the rerank model failed, if so
    # why it ran by keyword instead of the mode asked for: latency, errors, forced,
    # embedder_failed, index_mismatch, no_embedder ("" when it did not)
    fallback: str = ""
    # the measured evidence the verdict weighed (search/verdict.py), with the two
    # probabilities as "p_scope" and "p_answer"
    signals: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CommandLookup:
    """An exact command look-up: the command, or not found with did-you-mean names.
    ``alias_of``: when the command found says it is an alias of another (``metadata
    ["alias_of"]``, as tldr's alias pages do), that command's document, if the knowledge
    base has it."""

    query: str
    found: bool
    document: Document | None = None
    suggestions: tuple[str, ...] = ()
    alias_of: Document | None = None


@dataclass(frozen=True, slots=True)
class FileError:
    """A file or entry that could not be ingested; the rest of the batch still was."""

    path: str
    message: str
    field: str = ""

    def __str__(self) -> str:
        where = self.path + (f" [{self.field}]" if self.field else "")
        return f"{where}: {self.message}"


@dataclass(frozen=True, slots=True)
class IngestReport:
    source: str
    inserted: int = 0
    updated: int = 0
    unchanged: int = 0
    deleted: int = 0
    chunks_written: int = 0
    files: int = 0
    errors: tuple[FileError, ...] = ()
    seconds: float = 0.0
    chunks_embedded: int = 0
    notice: str = ""  # e.g. why new chunks were not embedded
    skipped: tuple[str, ...] = ()  # files left out because no loader reads their type

    @property
    def ok(self) -> bool:
        return not self.errors


@dataclass(frozen=True, slots=True)
class SourceInfo:
    source: Source
    documents: int
    chunks: int
    updated_at: str


@dataclass(frozen=True, slots=True)
class Stats:
    path: str
    backend: str
    schema_version: int
    documents: int
    chunks: int
    sources: int
    by_type: Mapping[str, int]
    size_bytes: int
