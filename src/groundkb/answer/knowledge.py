"""The knowledge a prompt can carry, gathered from one search and the knowledge base.

- **Passages** (retrieved knowledge): the full text of every hit's chunk, with its
  citation, score and injection flags (``injection.py``). A hit carries only a short
  snippet; the chunk is read from the store.
- **Entities** and **relationships**: for an ``api`` hit, its operation (``POST
  /v1/customers``: kind, operationId, request fields), the endpoint path it sits on (the
  methods there) and the resource (collection paths, operations, parent and child
  resources), linked ``resource --has_endpoint--> endpoint --has_operation-->
  operation`` and ``resource --has_child--> resource``, from
  :meth:`KnowledgeBase.api_graph`. A ``command`` hit is a command entity (exact
  invocation, summary, aliases, examples). ``related_to`` links command entities whose
  documents name each other in ``related_ids``. Each entity remembers the hits that brought it in,
  and its score is the best of theirs.
- **Axioms**: user-defined rules, stored as ordinary knowledge entries (or Markdown
  pages) whose ``category`` is one of the ``axiom_categories`` setting (default
  ``axioms``). The title names the rule, the summary or content states it. Axioms that
  a search of the question (restricted to those categories) finds come first, then the
  rest in id order; they never appear as passages too.
- **Glossary** (core concepts): documents whose category is one of
  ``glossary_categories`` (default ``concepts`` and ``glossary``), as term and summary;
  terms named in the question or the passages come first.

On ``no_match`` no passages and no entities are gathered: the prompt carries no
retrieved text.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..apigraph import APIGraph, Endpoint, Resource
from ..models import Document, Filters, SearchResult
from .injection import Flag, detect_injection

if TYPE_CHECKING:
    from ..api import KnowledgeBase

MAX_AXIOMS = 500
MAX_TERMS = 200
MAX_FIELDS = 15


@dataclass(frozen=True, slots=True)
class Passage:
    id: str  # chunk id
    doc_id: str
    title: str
    type: str
    citation: str
    score: float
    text: str
    header_path: str = ""
    flags: tuple[Flag, ...] = ()

    def item(self, text: str | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "title": self.title,
            "section": self.header_path if self.header_path != self.title else "",
            "citation": self.citation,
            "score": round(self.score, 3),
        }
        if self.flags:
            out["suspicious"] = "true"
        out["text"] = self.text if text is None else text
        return {k: v for k, v in out.items() if v != ""}


@dataclass(frozen=True, slots=True)
class Entity:
    id: str
    type: str  # resource, endpoint, operation, command
    name: str
    properties: Mapping[str, Any]
    score: float
    origins: tuple[str, ...]  # doc ids of the hits that brought it in

    def item(self) -> dict[str, Any]:
        props = {k: v for k, v in self.properties.items() if v not in ("", None, [], ())}
        return {"id": self.id, "type": self.type, "name": self.name, "properties": props}


@dataclass(frozen=True, slots=True)
class Relationship:
    source: str
    type: str
    target: str

    def item(self) -> dict[str, str]:
        return {"source": self.source, "type": self.type, "target": self.target}


@dataclass(frozen=True, slots=True)
class Axiom:
    id: str
    name: str
    rule: str
    citation: str

    def item(self, rule: str | None = None) -> dict[str, str]:
        return {"id": self.id, "name": self.name, "rule": self.rule if rule is None else rule}


@dataclass(frozen=True, slots=True)
class Term:
    id: str
    term: str
    definition: str

    def item(self, definition: str | None = None) -> dict[str, str]:
        d = self.definition if definition is None else definition
        return {"id": self.id, "term": self.term, "definition": d}


@dataclass(frozen=True, slots=True)
class Knowledge:
    passages: tuple[Passage, ...] = ()
    entities: tuple[Entity, ...] = ()
    relationships: tuple[Relationship, ...] = ()
    axioms: tuple[Axiom, ...] = ()
    glossary: tuple[Term, ...] = ()


def categories(value: str) -> tuple[str, ...]:
    return tuple(c.strip() for c in value.split(",") if c.strip())


def gather(
    kb: KnowledgeBase,
    result: SearchResult,
    *,
    include_relationships: bool = True,
    include_axioms: bool = True,
) -> Knowledge:
    """Everything a prompt for ``result`` may include, before any budget."""
    s = kb.settings
    axiom_cats = categories(s.axiom_categories)
    axioms = _axioms(kb, result.query, axiom_cats) if include_axioms and axiom_cats else ()
    axiom_ids = {a.id for a in axioms}
    passages: list[Passage] = []
    docs: dict[str, Document] = {}
    if result.verdict.kind != "no_match":
        shown = [h for h in result.hits if h.doc_id not in axiom_ids]
        ids = list(dict.fromkeys(h.doc_id for h in shown))
        texts = {c.id: c.text for c in kb.visible.chunks(ids)}
        docs.update((d.id, d) for d in kb.visible.documents(ids))
        for h in shown:
            text = texts.get(h.chunk_id, h.snippet)
            passages.append(
                Passage(
                    id=h.chunk_id,
                    doc_id=h.doc_id,
                    title=h.title,
                    type=h.type,
                    citation=h.citation,
                    score=h.score,
                    text=text,
                    header_path=h.header_path,
                    flags=detect_injection(f"{h.title}\n{text}"),
                )
            )
    scores: dict[str, float] = {}
    for p in passages:
        scores[p.doc_id] = max(scores.get(p.doc_id, 0.0), p.score)
    entities, relationships = _entities(kb, docs, scores)
    if not include_relationships:
        relationships = []
    glossary = _glossary(kb, result.query, passages, categories(s.glossary_categories))
    return Knowledge(
        passages=tuple(passages),
        entities=tuple(entities),
        relationships=tuple(relationships),
        axioms=axioms,
        glossary=glossary,
    )


def _text_rule(doc: Document) -> str:
    """The rule an axiom states: its content without a leading Markdown title."""
    body = doc.content.strip()
    first, _, rest = body.partition("\n")
    if first.startswith("# "):
        body = rest.strip()
    return body or doc.summary or doc.title


def _axioms(kb: KnowledgeBase, question: str, cats: tuple[str, ...]) -> tuple[Axiom, ...]:
    listed = kb.visible.list_documents(Filters(categories=cats), MAX_AXIOMS)
    if not listed:
        return ()
    first: list[str] = []
    if question.strip():
        found = kb.search(question, category=list(cats), limit=min(len(listed), 50))
        first = list(dict.fromkeys(h.doc_id for h in found.hits))
    order = first + sorted(d.id for d in listed if d.id not in set(first))
    out: list[Axiom] = []
    for doc in kb.visible.documents(order):
        citation = doc.uri or f"{doc.source}:{doc.origin or doc.id}"
        out.append(Axiom(doc.id, doc.title, _text_rule(doc), citation))
    return tuple(out)


def _glossary(
    kb: KnowledgeBase, question: str, passages: Sequence[Passage], cats: tuple[str, ...]
) -> tuple[Term, ...]:
    if not cats:
        return ()
    listed = kb.visible.list_documents(Filters(categories=cats), MAX_TERMS)
    shown = {p.doc_id for p in passages}
    seen = (question + "\n" + "\n".join(p.text for p in passages)).lower()
    terms = [
        Term(d.id, d.title, d.summary or d.title)
        for d in listed
        if d.id not in shown and d.title.strip()
    ]
    terms.sort(key=lambda t: (t.term.lower() not in seen, t.term.lower()))
    return tuple(terms)


_RESOURCES: weakref.WeakKeyDictionary[APIGraph, dict[str, Resource]] = weakref.WeakKeyDictionary()


def _resources(graph: APIGraph) -> dict[str, Resource]:
    found = _RESOURCES.get(graph)
    if found is None:
        found = {r.name: r for r in graph.resources()}
        _RESOURCES[graph] = found
    return found


class _Collector:
    def __init__(self) -> None:
        self.entities: dict[str, Entity] = {}
        self.relationships: dict[tuple[str, str, str], Relationship] = {}

    def add(
        self, id: str, type: str, name: str, props: Mapping[str, Any], score: float, origin: str
    ) -> None:
        old = self.entities.get(id)
        if old is not None:
            origins = tuple(dict.fromkeys((*old.origins, origin)))
            self.entities[id] = Entity(
                id, type, name, old.properties, max(old.score, score), origins
            )
        else:
            self.entities[id] = Entity(id, type, name, dict(props), score, (origin,))

    def link(self, source: str, type: str, target: str) -> None:
        if source != target:
            self.relationships[(source, type, target)] = Relationship(source, type, target)


def _entities(
    kb: KnowledgeBase, docs: Mapping[str, Document], scores: Mapping[str, float]
) -> tuple[list[Entity], list[Relationship]]:
    c = _Collector()
    api_docs = [d for d in docs.values() if d.type == "api"]
    if api_docs:
        graph = kb.api_graph()
        by_doc = {e.doc_id: e for d in api_docs for e in graph.by_path.get(_path(d), ())}
        resources = _resources(graph)
        for doc in api_docs:
            ep = by_doc.get(doc.id)
            if ep is not None:
                _api_entities(c, graph, resources, ep, doc, scores.get(doc.id, 0.0))
    for doc in docs.values():
        if doc.type == "command":
            c.add(
                doc.id,
                "command",
                doc.command or doc.title,
                {
                    "title": doc.title,
                    "summary": doc.summary,
                    "aliases": list(doc.aliases[:5]),
                    "examples": [e.code for e in doc.examples[:3]],
                },
                scores.get(doc.id, 0.0),
                doc.id,
            )
    for doc in docs.values():  # API operations are linked through the graph instead
        for rel in doc.related_ids if doc.type != "api" else ():
            if doc.id in c.entities and rel in c.entities:
                c.link(doc.id, "related_to", rel)
    included = _resource_links(c)
    entities = sorted(c.entities.values(), key=lambda e: (-e.score, _TYPE_ORDER[e.type], e.id))
    return entities, [*c.relationships.values(), *included]


_TYPE_ORDER = {"resource": 0, "endpoint": 1, "operation": 2, "command": 3}


def _path(doc: Document) -> str:
    return str(doc.metadata.get("path", ""))


def _api_entities(
    c: _Collector,
    graph: APIGraph,
    resources: Mapping[str, Resource],
    ep: Endpoint,
    doc: Document,
    score: float,
) -> None:
    meta = doc.metadata
    fields = meta.get("request_fields")
    c.add(
        doc.id,
        "operation",
        f"{ep.method} {ep.path}",
        {
            "summary": ep.title,
            "kind": ep.operation_kind,
            "operation_id": ep.operation_id,
            "request_fields": list(fields[:MAX_FIELDS]) if isinstance(fields, list) else [],
            "deprecated": bool(meta.get("deprecated")) or None,
        },
        score,
        doc.id,
    )
    endpoint_id = f"endpoint:{ep.spec}:{ep.path}" if ep.spec else f"endpoint:{ep.path}"
    methods = sorted({e.method for e in graph.by_path.get(ep.path, ())})
    c.add(endpoint_id, "endpoint", ep.path, {"methods": methods, "spec": ep.spec}, score, doc.id)
    c.link(endpoint_id, "has_operation", doc.id)
    res = resources.get(ep.resource)
    if res is not None:
        rid = f"resource:{res.name}"
        c.add(
            rid,
            "resource",
            res.name,
            {
                "paths": list(res.paths[:5]),
                "operations": list(res.operations),
                "parents": list(res.parents),
                "children": list(res.children[:10]),
            },
            score,
            doc.id,
        )
        c.link(rid, "has_endpoint", endpoint_id)


def _resource_links(c: _Collector) -> Iterable[Relationship]:
    names = {e.name: e.id for e in c.entities.values() if e.type == "resource"}
    for e in list(c.entities.values()):
        if e.type != "resource":
            continue
        for child in e.properties.get("children", ()):
            if child in names:
                yield Relationship(e.id, "has_child", names[child])
