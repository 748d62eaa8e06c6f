"""Pydantic models at the edge, shared by the MCP tools and the REST API.

The core speaks frozen dataclasses (``models.py``, ``apigraph.py``, ``answer/``). These
models are what leaves the process: the MCP tools' results (and their output schemas,
with ``mcp_structured_output``) and the REST API's OpenAPI document come from the same
classes, so the two never drift apart.

Most models read the dataclasses directly (``from_attributes``): a field named like the
dataclass attribute (or property, e.g. ``Option.label``) is copied as is, tuples become
lists. Only what the core does not store (a document's citation, a source's enabled
flag) is computed in the ``*_out`` functions below.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field

from .. import bounds

if TYPE_CHECKING:
    from ..answer import BuiltPrompt, PromptTemplate
    from ..apigraph import Endpoint, EndpointLookup
    from ..models import CommandLookup, Document, SearchResult
    from ..store.base import DocSummary

VerdictKind = Literal["answer", "clarify", "no_match"]
Grounding = Literal["strict", "moderate", "flexible"]
Format = Literal["yaml", "json", "markdown"]
RetrievalMode = Literal["auto", "keyword", "vector", "hybrid"]
DocTypeFilter = Literal[
    "all", "command", "api", "guide", "feature", "troubleshooting", "setting", "page"
]


class _Out(BaseModel):
    model_config = ConfigDict(from_attributes=True)


RESOURCE_PREFIX = "kb://docs/"
_URI_SAFE = "/:@!$&'()*+,;=-._~"


def resource_uri(doc_id: str) -> str:
    """The MCP resource URI of a document: ``kb://docs/`` and the id, percent-encoded
    except for ``/`` and the other characters a URI path keeps as they are."""
    return RESOURCE_PREFIX + quote(doc_id, safe=_URI_SAFE)


_RESOURCE_URI = Field(default="", description="MCP resource URI of the document (read it as is).")


# ---------------------------------------------------------------------- search
class SearchRequest(BaseModel):
    """A search: ``GET /api/search?query=...`` or the same fields as a JSON body."""

    model_config = ConfigDict(extra="forbid")
    query: str = Field(
        min_length=1,
        max_length=bounds.MAX_QUERY_INPUT_CHARS,
        description=f"What to find (searched by its first {bounds.MAX_QUERY_CHARS} characters).",
    )
    type: str | None = Field(
        default=None,
        max_length=bounds.MAX_FILTER_CHARS,
        description="Only these types (comma list): command, api, guide, ...",
    )
    category: str | None = Field(
        default=None, max_length=bounds.MAX_FILTER_CHARS, description="Only these categories."
    )
    source: str | None = Field(
        default=None, max_length=bounds.MAX_FILTER_CHARS, description="Only these sources."
    )
    limit: int | None = Field(
        default=None, ge=bounds.SEARCH_LIMIT[0], le=bounds.SEARCH_LIMIT[1], description="Most hits."
    )
    mode: RetrievalMode = Field(
        default="auto", description="auto: what the mode controller allows; or force one."
    )


class OptionOut(_Out):
    doc_id: str
    title: str
    category: str = ""
    type: str = ""
    command: str = ""
    source: str = Field(
        default="", description="Its source, given when the options come from more than one."
    )
    section: str = Field(
        default="", description="The section of a long page it means, below the page's top."
    )
    detail: str = Field(
        default="",
        description="Given where two options would read the same otherwise: an API "
        "operation's method and path, else the document's id.",
    )
    deprecated: bool = Field(
        default=False,
        description="An API operation its spec marks deprecated; MCP leaves it out when false.",
    )
    label: str = Field(default="", description="How to name the option to a person.")


class VerdictOut(_Out):
    kind: VerdictKind
    confidence: float
    reason: str
    message: str
    options: list[OptionOut] = Field(
        default_factory=list, description="The distinct meanings a clarify asks about."
    )
    evidence: list[str] = Field(
        default_factory=list, description="The signals that decided, strongest first."
    )


_LATER = (
    "MCP leaves it out in a later hit of a document when the document's first hit says the same."
)


class HitOut(_Out):
    doc_id: str
    chunk_id: str = Field(
        default="",
        description="The passage's id; MCP leaves it out when it is doc_id#0 (the "
        "document's first passage).",
    )
    title: str = Field(default="", description=_LATER)
    type: str = Field(default="", description=_LATER)
    category: str = Field(default="", description="MCP leaves it out when empty.")
    source: str = Field(default="", description=_LATER)
    snippet: str
    score: float = Field(description="Evidence score in [0, 1].")
    matched_terms: list[str] = Field(
        default_factory=list,
        description="The query's words the hit matched; over MCP only with explain=true.",
    )
    header_path: str = Field(
        default="",
        description="Headings down to the chunk; MCP leaves it out when it is the title.",
    )
    citation: str = Field(default="", description=_LATER)
    content_hash: str = Field(
        default="", description="Version of the document; over MCP only with explain=true."
    )
    explanation: list[str] = Field(
        default_factory=list, description="How it matched; over MCP only with explain=true."
    )
    ranks: dict[str, int] = Field(
        default_factory=dict,
        description="Rank of the hit in each retriever's list; over MCP only with explain=true.",
    )
    retriever: str = "keyword"
    command: str = ""
    summary: str = Field(
        default="",
        description="The document's summary; empty when it is just the opening of the "
        "hit's own passage (a page's first paragraph), which the snippet shows a window of.",
    )
    method: str = Field(default="", description="API operations: the HTTP method.")
    path: str = Field(default="", description="API operations: the path, as in the spec.")
    resource: str = Field(default="", description="API operations: the resource acted on.")
    deprecated: bool = Field(
        default=False,
        description="API operations: its spec marks it deprecated (prefer a current "
        "operation that does the same); MCP leaves it out when false.",
    )
    resource_uri: str = Field(
        default="",
        description="MCP resource URI of the document (read it as is); MCP leaves it out "
        "when it is kb://docs/ followed by doc_id.",
    )


class SearchOut(_Out):
    query: str = Field(
        default="",
        description="The question as searched; over MCP left out when it is the query "
        "sent (it differs when cut to its searched length or a credential was left out).",
    )
    verdict: VerdictOut
    hits: list[HitOut]
    suggestions: list[str] = Field(
        default_factory=list, description="Did-you-mean or clarification candidates."
    )
    corrected_query: str = ""
    asked_of: list[str] = Field(
        default_factory=list,
        description="The sources the question was asked of because it named their product "
        '("in Stripe, how do I …" among several products\' docs); empty when it named '
        "none.",
    )
    terms: list[str] = Field(
        default_factory=list,
        description="The query's normalized terms; over MCP only with explain=true.",
    )
    multi_intent: bool = False
    mode: str = Field(default="keyword", description="keyword, vector or hybrid: what ran.")
    fallback: str = Field(
        default="",
        description="Why it ran by keyword instead of the mode asked for: latency, errors, "
        "forced, embedder_failed, index_mismatch or no_embedder.",
    )
    notice: str = Field(
        default="",
        description="Why the search fell back to keyword, or the rerank model failed, if so.",
    )
    took_ms: float = 0.0
    dropped_hits: int = Field(
        default=0, description="Lowest-scored hits left out to stay within max_tokens."
    )


class McpSearchOut(SearchOut):
    """A search result as MCP sends it (``answer/tooloutput.compact_search``)."""

    every_hit: dict[str, str] = Field(
        default_factory=dict,
        description="The source and type when every hit has the same, said once here and "
        "left out of the hits (explain=true keeps them in each hit).",
    )


def search_out(r: SearchResult) -> SearchOut:
    out = SearchOut.model_validate(r)
    for hit in out.hits:
        hit.resource_uri = resource_uri(hit.doc_id)
    return out


# ------------------------------------------------------------------- documents
class ExampleOut(_Out):
    code: str
    description: str = ""
    output: str = ""


class DocumentOut(_Out):
    id: str
    title: str
    type: str
    category: str
    source: str
    summary: str
    content: str
    command: str = ""
    keywords: list[str]
    aliases: list[str]
    examples: list[ExampleOut]
    related_ids: list[str]
    citation: str
    content_hash: str
    updated_at: str
    resource_uri: str = _RESOURCE_URI
    offset: int = Field(default=0, description="Character offset of content in the document.")
    truncated: bool = Field(default=False, description="The content was cut to max_tokens.")
    next_offset: int | None = Field(
        default=None, description="Pass as offset to read the rest of the content."
    )


def citation_of(d: Document) -> str:
    return d.uri or f"{d.source}:{d.origin or d.id}"


def document_out(d: Document) -> DocumentOut:
    return DocumentOut.model_validate(
        {
            **{f: getattr(d, f) for f in ("id", "title", "type", "category", "source")},
            "summary": d.summary,
            "content": d.content,
            "command": d.command,
            "keywords": list(d.keywords),
            "aliases": list(d.aliases),
            "examples": [ExampleOut.model_validate(e) for e in d.examples],
            "related_ids": list(d.related_ids),
            "citation": citation_of(d),
            "content_hash": d.content_hash,
            "updated_at": d.updated_at,
            "resource_uri": resource_uri(d.id),
        }
    )


class DocSummaryOut(_Out):
    id: str
    source: str
    type: str
    category: str
    title: str
    summary: str
    command: str = ""
    uri: str = ""
    resource_uri: str = _RESOURCE_URI


def doc_summary_out(d: DocSummary) -> DocSummaryOut:
    out = DocSummaryOut.model_validate(d)
    out.resource_uri = resource_uri(d.id)
    return out


class DocumentsOut(BaseModel):
    offset: int
    documents: list[DocSummaryOut]


# ---------------------------------------------------------- commands and APIs
class EndpointOut(_Out):
    doc_id: str
    method: str
    path: str
    title: str
    operation_kind: str = Field(description="create, read, list, update, delete or an action.")
    resources: list[str]
    operation_id: str = ""
    spec: str = ""
    deprecated: bool = Field(
        default=False,
        description="The spec marks it deprecated: prefer a current operation that does the same.",
    )
    resource_uri: str = _RESOURCE_URI


class EndpointLookupOut(BaseModel):
    path: str
    method: str
    match: str = Field(description="exact, template, loose or none.")
    endpoints: list[EndpointOut]
    operation: DocumentOut | None = Field(description="The full operation when one matched.")
    params: dict[str, str]
    same_resource: list[EndpointOut]
    parents: list[EndpointOut]
    children: list[EndpointOut]
    other_methods: list[str]
    found: bool = Field(description="False: no such operation exists; see suggestions.")
    suggestions: list[str] = Field(
        default=[], description="Did-you-mean operations ('METHOD /path') when not found."
    )


class CommandLookupOut(BaseModel):
    query: str
    found: bool = Field(description="False: no such command exists; see suggestions.")
    command: DocumentOut | None = Field(description="The command, when found.")
    suggestions: list[str] = Field(description="Did-you-mean command names when not found.")
    alias_of: DocumentOut | None = Field(
        default=None,
        description="When the command is an alias of another: that command, with its examples.",
    )


class EndpointsOut(BaseModel):
    resource: str
    operation: str | None
    endpoints: list[EndpointOut]


class CommandSummaryOut(_Out):
    id: str
    command: str
    title: str
    category: str
    summary: str
    resource_uri: str = _RESOURCE_URI


class CommandsOut(BaseModel):
    total: int
    offset: int
    commands: list[CommandSummaryOut]
    next_offset: int | None = Field(description="Pass as offset for the next page.")


def endpoint_out(e: Endpoint) -> EndpointOut:
    out = EndpointOut.model_validate(e)
    out.resource_uri = resource_uri(e.doc_id)
    return out


def lookup_out(found: EndpointLookup, operation: Document | None) -> EndpointLookupOut:
    return EndpointLookupOut(
        path=found.path,
        method=found.method,
        match=found.match,
        endpoints=[endpoint_out(e) for e in found.endpoints],
        operation=document_out(operation) if operation is not None else None,
        params=dict(found.params),
        same_resource=[endpoint_out(e) for e in found.same_resource],
        parents=[endpoint_out(e) for e in found.parents],
        children=[endpoint_out(e) for e in found.children],
        other_methods=list(found.other_methods),
        found=found.found,
        suggestions=list(found.suggestions),
    )


def command_lookup_out(found: CommandLookup) -> CommandLookupOut:
    return CommandLookupOut(
        query=found.query,
        found=found.found,
        command=document_out(found.document) if found.document is not None else None,
        suggestions=list(found.suggestions),
        alias_of=document_out(found.alias_of) if found.alias_of is not None else None,
    )


def _command_summary(d: DocSummary) -> CommandSummaryOut:
    out = CommandSummaryOut.model_validate(d)
    out.resource_uri = resource_uri(d.id)
    return out


def commands_out(docs: list[DocSummary], total: int, offset: int) -> CommandsOut:
    nxt = offset + len(docs)
    return CommandsOut(
        total=total,
        offset=offset,
        commands=[_command_summary(d) for d in docs],
        next_offset=nxt if nxt < total else None,
    )


# ------------------------------------------------------------------- prompts
class MessageIn(BaseModel):
    role: Literal["user", "assistant", "system", "tool"]
    content: str


class PartOut(_Out):
    name: str
    budget: int
    tokens: int
    included: list[str]
    dropped: list[str]
    trimmed: list[str]


class FlaggedOut(_Out):
    id: str
    flags: list[str] = Field(description="Why the passage looks like instructions to a model.")


class PromptOut(BaseModel):
    system: str
    user: str
    template: str
    template_version: str
    grounding: str
    format: str
    estimated_tokens: int = Field(description="Tokens of system + user prompt.")
    tokenizer: str
    verdict: str = Field(description="answer, clarify or no_match.")
    verdict_message: str
    options: list[str] = Field(description="What to ask about (clarify) or did-you-mean.")
    hit_ids: list[str]
    entity_ids: list[str]
    relationships: list[str]
    axiom_ids: list[str]
    glossary_ids: list[str]
    flagged: list[FlaggedOut]
    parts: list[PartOut]
    dropped: list[str]
    trimmed: list[str]
    fallback: str = Field(description="Why the requested template was not used, if so.")


def prompt_out(p: BuiltPrompt) -> PromptOut:
    names = ("system", "user", "template", "template_version", "grounding", "format")
    lists = ("options", "hit_ids", "entity_ids", "relationships", "axiom_ids", "glossary_ids")
    data: dict[str, Any] = {n: getattr(p, n) for n in names}
    data.update({n: list(getattr(p, n)) for n in (*lists, "dropped", "trimmed")})
    data.update(
        estimated_tokens=p.estimated_tokens,
        tokenizer=p.tokenizer,
        verdict=p.verdict.kind,
        verdict_message=p.verdict.message,
        flagged=[FlaggedOut.model_validate(f) for f in p.flagged],
        parts=[PartOut.model_validate(x) for x in p.parts],
        fallback=p.fallback,
    )
    return PromptOut.model_validate(data)


class PromptRequest(BaseModel):
    """What ``POST /api/prompts`` takes (the MCP ``build_prompt`` tool's arguments)."""

    model_config = ConfigDict(extra="forbid")
    question: str = Field(min_length=1, max_length=2000, description="The user's question.")
    template: str | None = Field(default=None, description="Template id (GET the templates).")
    grounding: Grounding | None = None
    format: Format | None = None
    budget: int | None = Field(default=None, ge=0, le=200_000, description="Total tokens.")
    part_budgets: dict[str, int] | None = Field(
        default=None, description="Tokens per part: glossary, knowledge, axioms, state, messages."
    )
    state: dict[str, Any] | str | None = Field(default=None, description="UI/application state.")
    messages: list[MessageIn] = Field(default_factory=list, description="Oldest first.")
    instructions: str = Field(default="", max_length=4000)
    type: str | None = Field(default=None, description="Search only these types (comma list).")
    category: str | None = None
    source: str | None = None


class TemplateOut(_Out):
    id: str
    name: str
    version: str
    description: str
    origin: str
    error: str = Field(default="", description="Why it does not compile, if it does not.")


class TemplatesOut(BaseModel):
    templates: list[TemplateOut]
    problems: dict[str, str] = Field(description="Template files skipped, and why.")


def templates_out(templates: list[PromptTemplate], problems: dict[str, str]) -> TemplatesOut:
    return TemplatesOut(
        templates=[TemplateOut.model_validate(t) for t in templates], problems=problems
    )
