"""The API graph: resources, endpoints and operations derived from ``api`` documents.

The OpenAPI loader (``ingest/openapi.py``) stores the graph facts of every operation in
``Document.metadata``: ``method``, ``path``, ``operation_id``, ``operation_kind``,
``resources`` and ``spec`` (the naming rules are in ``apinames.py``). This module
answers structured questions over them without touching a store:

- :meth:`APIGraph.get_endpoint` — ``GET /users/123`` → ``GET /users/{id}``: exact path,
  then template match (a ``.json`` suffix, a trailing slash and a query string are
  ignored), then a loose match: any case, and without the prefix up to the version
  (``/customers`` vs ``/v1/customers``, ``/namespaces/x`` vs ``/apis/apps/v1/namespaces/x``).
  The result carries the graph neighbours: the same resource's other operations, and
  the operations of its parent and child resources.
- :meth:`APIGraph.find_endpoints` — ``("location", "create")`` → ``POST /locations``.
  Resource names match singular or plural, any case, ``payment intent`` or
  ``PaymentIntents``; operation names accept common verbs (``add`` → ``create``, ``set
  up``) and verbs that form a subresource's name (``pod``, ``evict`` → its eviction).
- :meth:`APIGraph.resources` — every resource with its paths, operations and relations.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from .apinames import (
    CRUD_KINDS,
    PREFIX_WORDS,
    asked_kinds,
    is_action,
    is_param,
    is_version,
    noun_forms,
    operation_kind,
    path_resources,
    path_segments,
    resource_key,
)
from .models import Document
from .store.base import DocMetadata


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One operation of one API."""

    doc_id: str
    method: str  # upper case
    path: str
    title: str
    operation_kind: str
    resources: tuple[str, ...]
    operation_id: str = ""
    spec: str = ""
    source: str = ""
    deprecated: bool = False  # the spec marks it deprecated

    @property
    def resource(self) -> str:
        """The resource the operation acts on: the innermost one, or ''."""
        return self.resources[-1] if self.resources else ""

    @property
    def collection(self) -> str:
        """The path of the collection the operation belongs to (see :func:`collection_path`)."""
        return collection_path(self.path, self.resources)


MatchKind = Literal["exact", "template", "loose", "none"]


@dataclass(frozen=True, slots=True)
class EndpointLookup:
    """The answer to :meth:`APIGraph.get_endpoint`.

    ``match``: ``exact`` (the path as written, trailing slash aside), ``template``
    (concrete values in place of ``{params}``; a ``.json`` suffix ignored), ``loose``
    (also ignoring case and the prefix up to the version), or ``none``. The most
    literal template wins: ``/customers/search`` over ``/customers/{id}``. ``params``
    binds template parameters to the values given. ``other_methods`` lists the methods
    the matched path does have when the requested method does not exist on it.
    """

    path: str
    method: str
    match: MatchKind
    endpoints: tuple[Endpoint, ...]
    params: Mapping[str, str]
    same_resource: tuple[Endpoint, ...] = ()
    parents: tuple[Endpoint, ...] = ()
    children: tuple[Endpoint, ...] = ()
    other_methods: tuple[str, ...] = ()
    suggestions: tuple[str, ...] = ()  # nothing found: the closest operations, "METHOD /path"

    @property
    def found(self) -> bool:
        return bool(self.endpoints)


@dataclass(frozen=True, slots=True)
class Resource:
    """A resource name and everything the graph knows about it."""

    name: str
    paths: tuple[str, ...]  # collection paths, shortest first
    operations: tuple[str, ...]  # operation kinds available
    endpoints: int
    parents: tuple[str, ...]
    children: tuple[str, ...]
    specs: tuple[str, ...]


def collection_path(path: str, resources: Sequence[str] = ()) -> str:
    """The collection an operation's path belongs to.

    Trailing parameters and a trailing action segment are removed:
    ``/v1/charges/{charge}/capture`` → ``/v1/charges``; ``/v1/customers`` stays. A
    trailing segment that names the operation's last resource (``resources``, as
    :func:`path_resources` read it with the spec's collections) stays though a verb
    leads it: ``/repos/{owner}/{repo}/check-runs``.
    """
    segs = path_segments(path)
    if (
        len(segs) > 1
        and not is_param(segs[-1])
        and is_action(segs[-1])
        and not (resources and resource_key(segs[-1]) == resources[-1])
    ):
        segs = segs[:-1]
    while segs and is_param(segs[-1]):
        segs = segs[:-1]
    return "/" + "/".join(segs)


def _parent_collection(collection: str) -> str:
    segs = path_segments(collection)
    if len(segs) < 2 or not is_param(segs[-2]):
        return ""
    return collection_path("/" + "/".join(segs[:-1]))


_KIND_ORDER = {k: i for i, k in enumerate(CRUD_KINDS)}


def _sort_key(e: Endpoint) -> tuple[int, int, str, str]:
    return (_KIND_ORDER.get(e.operation_kind, 9), len(path_segments(e.path)), e.path, e.method)


def endpoint_from_document(doc: Document | DocMetadata) -> Endpoint | None:
    """The endpoint an ``api`` document describes, or None without method and path."""
    meta = doc.metadata
    method = str(meta.get("method", "")).upper()
    path = str(meta.get("path", ""))
    if not method or not path:
        return None
    resources = meta.get("resources")
    res = (
        tuple(str(r) for r in resources)
        if isinstance(resources, list | tuple)
        else tuple(path_resources(path))
    )
    return Endpoint(
        doc_id=doc.id,
        method=method,
        path=path,
        title=doc.title,
        operation_kind=str(meta.get("operation_kind") or operation_kind(method, path)),
        resources=res,
        operation_id=str(meta.get("operation_id", "")),
        spec=str(meta.get("spec", "")),
        source=doc.source,
        deprecated=meta.get("deprecated") is True,
    )


def _norm_segments(path: str, loose: bool) -> list[str]:
    """Segments to compare; loosely: lower case, without the prefix up to the version.

    ``/apis/apps/v1/namespaces`` and ``/v1/namespaces`` both become ``["namespaces"]``.
    """
    segs = path_segments(path)
    if not loose:
        return segs
    literal = len(segs)
    for i, seg in enumerate(segs):
        if is_param(seg):
            literal = i
            break
    # A version among the first three literal segments (a bare number only first: in
    # /customers/42 the 42 is an id).
    versions = [
        i
        for i in range(min(literal, 3))
        if is_version(segs[i]) and (i == 0 or not segs[i].isdigit())
    ]
    if versions:
        return segs[versions[0] + 1 :]
    while segs and segs[0].lower() in PREFIX_WORDS:
        segs = segs[1:]
    return segs


def _bind(
    template: Sequence[str], concrete: Sequence[str], fold: bool = False
) -> dict[str, str] | None:
    """Parameter values when ``concrete`` fits ``template`` segment by segment."""
    if len(template) != len(concrete):
        return None
    params: dict[str, str] = {}
    for t, c in zip(template, concrete, strict=True):
        if is_param(t):
            if not is_param(c):
                params[t[1:-1]] = c
        elif t != c and not (fold and t.lower() == c.lower()):
            return None
    return params


class APIGraph:
    """Resources, endpoints and their relations, built from ``api`` documents."""

    def __init__(self, endpoints: Iterable[Endpoint]) -> None:
        self.endpoints: tuple[Endpoint, ...] = tuple(sorted(endpoints, key=_sort_key))
        self.by_path: dict[str, list[Endpoint]] = {}
        self.by_collection: dict[str, list[Endpoint]] = {}
        self.by_resource: dict[str, list[Endpoint]] = {}
        for e in self.endpoints:
            self.by_path.setdefault(e.path, []).append(e)
            self.by_collection.setdefault(e.collection, []).append(e)
            if e.resource:
                self.by_resource.setdefault(e.resource, []).append(e)
        self.parent_of: dict[str, str] = {}
        self.children_of: dict[str, list[str]] = {}
        for coll in self.by_collection:
            parent = _parent_collection(coll)
            if parent:
                self.parent_of[coll] = parent
                self.children_of.setdefault(parent, []).append(coll)
        self._squashed = {k.replace("_", ""): k for k in self.by_resource}

    @classmethod
    def build(cls, docs: Iterable[Document | DocMetadata]) -> APIGraph:
        """A graph of every document of type ``api`` that has a method and a path (whole
        documents or their metadata: the graph reads nothing else)."""
        found = (endpoint_from_document(d) for d in docs if d.type == "api")
        return cls(e for e in found if e is not None)

    def __len__(self) -> int:
        return len(self.endpoints)

    # ---------------------------------------------------------------- lookups
    def get_endpoint(self, path: str, method: str | None = None) -> EndpointLookup:
        """The operations at ``path`` (optionally only ``method``) and their neighbours."""
        want = (method or "").strip().upper()
        given = path.strip().split("?", 1)[0].split("#", 1)[0] or "/"
        given = given if given.startswith("/") else "/" + given
        raw = "/" + "/".join(path_segments(path))
        match: MatchKind = "none"
        found: list[Endpoint] = []
        params: dict[str, str] = {}
        exact = [p for p in (given, given.rstrip("/") or "/", given.rstrip("/") + "/")
                 if p in self.by_path]  # fmt: skip
        if exact:
            match, found = "exact", list(self.by_path[exact[0]])
        else:
            for loose in (False, True):
                concrete = _norm_segments(raw, loose)
                best: list[tuple[int, Endpoint, dict[str, str]]] = []
                for p, eps in self.by_path.items():
                    bound = _bind(_norm_segments(p, loose), concrete, fold=loose)
                    if bound is None:
                        continue
                    literal = sum(1 for s in path_segments(p) if not is_param(s))
                    best.extend((literal, e, bound) for e in eps)
                if best:
                    top = max(b[0] for b in best)
                    found = [e for n, e, _ in best if n == top]
                    params = next(b for n, _, b in best if n == top)
                    match = "loose" if loose else "template"
                    break
        other: tuple[str, ...] = ()
        if want and found:
            hits = [e for e in found if e.method == want]
            if not hits:
                other = tuple(sorted({e.method for e in found}))
                neighbours = self._neighbours(found)
                return EndpointLookup(raw, want, match, (), params, tuple(found), *neighbours[1:],
                                      other_methods=other)  # fmt: skip
            found = hits
        same, parents, children = self._neighbours(found)
        suggestions = () if found else self._closest(raw, want)
        return EndpointLookup(
            raw, want, match, tuple(found), params, same, parents, children, (), suggestions
        )

    def _closest(self, path: str, method: str, limit: int = 3) -> tuple[str, ...]:
        """The operations whose path is most like ``path`` (did-you-mean)."""
        from rapidfuzz import fuzz, process

        paths = list(self.by_path)
        found = process.extract(
            path.lower(),
            [p.lower() for p in paths],
            scorer=fuzz.ratio,
            limit=limit * 2,
            score_cutoff=50,
        )
        out: list[str] = []
        for _, _, i in found:
            eps = self.by_path[paths[i]]
            pick = [e for e in eps if e.method == method] or list(eps)
            out.extend(f"{e.method} {e.path}" for e in pick[:1])
        return tuple(dict.fromkeys(out))[:limit]

    def _neighbours(
        self, found: Sequence[Endpoint], limit: int = 20
    ) -> tuple[tuple[Endpoint, ...], tuple[Endpoint, ...], tuple[Endpoint, ...]]:
        ids = {e.doc_id for e in found}
        colls = list(dict.fromkeys(e.collection for e in found))
        same = [e for c in colls for e in self.by_collection.get(c, ()) if e.doc_id not in ids]
        parent_colls = list(dict.fromkeys(self.parent_of[c] for c in colls if c in self.parent_of))
        parents = [e for c in parent_colls for e in self.by_collection.get(c, ())]
        child_colls = list(dict.fromkeys(ch for c in colls for ch in self.children_of.get(c, ())))
        children = [e for c in child_colls for e in self.by_collection.get(c, ())]
        return tuple(same[:limit]), tuple(parents[:limit]), tuple(children[:limit])

    def find_endpoints(self, resource: str, operation: str | None = None) -> list[Endpoint]:
        """Operations on ``resource``, optionally of one kind, CRUD order then path length.

        The resource is matched by its canonical name (any case, singular or plural,
        spaces, hyphens or CamelCase); when nothing matches exactly, resources whose
        name ends with it (``number`` → ``phone_number``) are used. ``operation`` is a
        kind or a verb for one (``add``, ``set up``); a verb that forms a subresource's
        name finds the operations on it (``pod``, ``evict`` → ``…/pods/{name}/eviction``).
        """
        key = resource_key(resource)
        if not key:
            return []
        names = self._resource_names(key)
        found = [e for n in names for e in self.by_resource.get(n, ())]
        if operation:
            words = operation.split()
            kinds = asked_kinds(words)
            matching = [e for e in found if e.operation_kind in kinds]
            if not matching:
                # "evict" a pod: the operations on its eviction subresource
                formed = {n for w in words for n in noun_forms(w)}
                matching = [
                    e
                    for n in formed
                    for e in self.by_resource.get(n, ())
                    if any(r in names for r in e.resources[:-1])
                ]
            found = matching
        return sorted(found, key=_sort_key)

    def _resource_names(self, key: str) -> list[str]:
        if key in self.by_resource:
            return [key]
        squashed = self._squashed.get(key.replace("_", ""))
        if squashed:
            return [squashed]
        return sorted(n for n in self.by_resource if n.endswith("_" + key))

    def resources(self) -> list[Resource]:
        """Every resource, by name."""
        out: list[Resource] = []
        for name in sorted(self.by_resource):
            eps = self.by_resource[name]
            colls = sorted({e.collection for e in eps}, key=lambda c: (len(c), c))
            parents = {
                e.resources[-2] for e in eps if len(e.resources) > 1 and e.resources[-2] != name
            }
            children = {
                e.resource
                for c in colls
                for ch in self.children_of.get(c, ())
                for e in self.by_collection.get(ch, ())
                if e.resource and e.resource != name
            }
            kinds = sorted(
                {e.operation_kind for e in eps}, key=lambda k: (_KIND_ORDER.get(k, 9), k)
            )
            out.append(
                Resource(
                    name=name,
                    paths=tuple(colls),
                    operations=tuple(kinds),
                    endpoints=len(eps),
                    parents=tuple(sorted(parents)),
                    children=tuple(sorted(children)),
                    specs=tuple(sorted({e.spec for e in eps if e.spec})),
                )
            )
        return out


__all__ = [
    "APIGraph",
    "Endpoint",
    "EndpointLookup",
    "Resource",
    "collection_path",
    "endpoint_from_document",
]
