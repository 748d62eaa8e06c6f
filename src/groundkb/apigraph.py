"""The API graph: resources, endpoints and operations derived from ``api`` documents.

The OpenAPI loader (``ingest/openapi.py``) stores the graph facts of every operation in
``Document.metadata``: ``method``, ``path``, ``operation_id``, ``operation_kind``,
``resources`` and ``spec``. This module answers structured questions over them without
touching a store:

- :meth:`APIGraph.get_endpoint` — ``GET /users/123`` → ``GET /users/{id}``: exact path,
  then template match (a ``.json`` suffix, a trailing slash and a query string are
  ignored), then a loose match: any case, and without the prefix up to the version
  (``/customers`` vs ``/v1/customers``, ``/namespaces/x`` vs ``/apis/apps/v1/namespaces/x``).
  The result carries the graph neighbours: the same resource's other operations, and
  the operations of its parent and child resources.
- :meth:`APIGraph.find_endpoints` — ``("location", "create")`` → ``POST /locations``.
  Resource names match singular or plural, any case, ``payment intent`` or
  ``PaymentIntents``; operation names accept common verbs (``add`` → ``create``).
- :meth:`APIGraph.resources` — every resource with its paths, operations and relations.

The naming rules used at ingest time (:func:`resource_key`, :func:`singular`,
:func:`path_resources`, :func:`operation_kind`) live here too, so that ingestion and
queries agree on what a resource and an operation kind are.

Operation kinds: ``create`` (POST to a collection), ``read`` (GET of one item or of a
singleton), ``list`` (GET of a collection), ``update`` (PUT/PATCH, or POST to an item),
``delete``, or an action named by a verb segment (``POST /charges/{charge}/capture`` →
``capture``; ``GET /customers/search`` → ``search``).

:func:`operation_fit` tells how an operation fits a question (its kind asked for, its
resource named, enclosing resources not named); the search engine ranks API documents
by it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from .models import Document

HTTP_METHODS: tuple[str, ...] = (
    "get",
    "put",
    "post",
    "delete",
    "patch",
    "head",
    "options",
    "trace",
)
CRUD_KINDS: tuple[str, ...] = ("create", "read", "list", "update", "delete")

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_NON_WORD = re.compile(r"[^A-Za-z0-9]+")
_VERSION = re.compile(
    r"^(?:v\d+(?:(?:alpha|beta|preview)\d*)?|\d{4}-\d{2}-\d{2}|\d+(?:\.\d+)*)$", re.I
)
_PREFIX_WORDS = frozenset({"api", "apis", "rest"})

# Segments that name an action rather than a resource (first word of the segment).
_ACTION_VERBS_TEXT = """
    accept activate add adopt apply approve archive assign attach authorize block cancel
    buy capture check clone close complete confirm connect convert copy decline deactivate
    decrypt deliver deny detach disable dismiss download duplicate enable encrypt end
    escalate evaluate execute expire export finalize follow fork generate grant hide
    import invite invalidate join leave lock login logout mark merge move mute notify
    pause pay pin preview publish purchase purge reactivate redeliver redirect refresh regenerate
    reject release reopen rename render replay reply report request rerun resend reset
    rollback
    resolve restart restore resume retry reverse revoke rotate run search send share
    sign simulate sort start stop submit subscribe suspend sync toggle transfer trigger
    unarchive unassign unblock unfollow unlock unmute unpin unpublish unsubscribe
    unsuspend update upgrade upload validate verify void watch
"""
ACTION_VERBS = frozenset(_ACTION_VERBS_TEXT.split())

_IRREGULAR = {
    "people": "person",
    "children": "child",
    "men": "man",
    "women": "woman",
    "indices": "index",
    "matrices": "matrix",
    "vertices": "vertex",
    "analyses": "analysis",
    "aliases": "alias",
    "statuses": "status",
    "buses": "bus",
    "data": "data",
    "media": "media",
    "criteria": "criterion",
}
_NO_SINGULAR_ENDINGS = ("ss", "us", "is", "ics", "news", "series", "species")


def split_words(text: str) -> list[str]:
    """Lower-case words of an identifier: ``listPaymentIntents``, ``issues/list-for-repo``."""
    out: list[str] = []
    for part in _NON_WORD.split(text):
        if part:
            out.extend(w.lower() for w in _CAMEL.split(part) if w)
    return out


def singular(word: str) -> str:
    """The singular of an English noun, conservatively (``policies`` → ``policy``)."""
    w = word.lower()
    if w in _IRREGULAR:
        return _IRREGULAR[w]
    if len(w) <= 3 or w.endswith(_NO_SINGULAR_ENDINGS):
        return w
    if w.endswith("ies"):
        return w[:-3] + "y"
    if w.endswith(("sses", "xes", "ches", "shes", "zzes")):
        return w[:-2]
    if w.endswith("s"):
        return w[:-1]
    return w


def is_plural(word: str) -> bool:
    return singular(word) != word.lower()


def resource_key(name: str) -> str:
    """The canonical resource name: snake_case, last word singular.

    ``PaymentIntents``, ``payment-intents``, ``payment intent`` → ``payment_intent``.
    """
    words = split_words(name)
    if not words:
        return ""
    words[-1] = singular(words[-1])
    return "_".join(words)


def is_param(segment: str) -> bool:
    return segment.startswith("{") and segment.endswith("}")


def path_segments(path: str) -> list[str]:
    """Segments of a path without query string, empty parts or a ``.json`` suffix."""
    path = path.split("?", 1)[0].split("#", 1)[0]
    segments = [s for s in path.strip().split("/") if s]
    if segments and segments[-1].lower().endswith(".json"):
        segments[-1] = segments[-1][: -len(".json")]
    return segments


def is_version(segment: str) -> bool:
    return bool(_VERSION.match(segment))


def _is_action(segment: str) -> bool:
    """A verb (``capture``) or a phrase led by one (``verify_microdeposits``)."""
    words = split_words(segment)
    if not words or words[0] not in ACTION_VERBS:
        return False
    return len(words) > 1 or not is_plural(words[0])


def path_resources(path: str) -> list[str]:
    """Resources a path names, outermost first.

    A literal segment is a resource when a parameter follows it, when it is the last
    segment, or when it is a plain word in the middle (``/user/repos``). Version
    segments, ``api``/``apis``, API group names before a version (``/apis/apps/v1``) and
    action verbs are not resources. ``/v1/customers/{customer}/sources`` →
    ``["customer", "source"]``.
    """
    segs = path_segments(path)
    out: list[str] = []
    for i, seg in enumerate(segs):
        if is_param(seg) or is_version(seg) or seg.lower() in _PREFIX_WORDS or "." in seg:
            continue
        nxt = segs[i + 1] if i + 1 < len(segs) else ""
        if nxt and is_version(nxt):
            continue  # an API group name such as /apis/apps/v1
        if _is_action(seg):
            continue
        key = resource_key(seg)
        if key and key not in out:
            out.append(key)
    return out


def operation_kind(method: str, path: str, hint: str = "", operation_id: str = "") -> str:
    """create / read / list / update / delete, or the action verb of the path.

    ``hint`` is an explicit action from the spec (``x-kubernetes-action``) when present.
    A GET of a literal segment is a list when the segment is plural, else a read; an
    ``operation_id`` led by ``list`` or ``fetch``/``read``/``retrieve`` decides instead
    (``GET /Messages/{sid}/Media`` with ``ListMedia`` lists, ``GET /Configuration/Webhooks``
    with ``FetchWebhook`` reads).
    """
    hinted = _KUBE_ACTIONS.get(hint.lower()) if hint else None
    if hinted:
        return hinted
    m = method.lower()
    segs = path_segments(path)
    last = segs[-1] if segs else ""
    if last and not is_param(last) and _is_action(last) and len(segs) > 1:
        return split_words(last)[0]
    if m == "delete":
        return "delete"
    if m in ("put", "patch"):
        return "update"
    if m == "post":
        return "update" if is_param(last) else "create"
    if m in ("get", "head"):
        if not last or is_param(last):
            return "read"
        if last.lower() == "search":
            return "search"
        named = _ID_KINDS.get(next(iter(split_words(operation_id)), ""))
        return named or ("list" if is_plural(last) else "read")
    return m


_ID_KINDS = {"list": "list", "fetch": "read", "read": "read", "retrieve": "read"}
_KUBE_ACTIONS = {
    "get": "read",
    "list": "list",
    "post": "create",
    "put": "update",
    "patch": "update",
    "delete": "delete",
    "deletecollection": "delete",
    "watch": "watch",
    "watchlist": "watch",
    "connect": "connect",
}

_OPERATION_SYNONYMS = {
    "create": ("create", "add", "new", "make", "post", "insert", "register", "buy", "purchase",
               "provision", "generate", "send", "place", "launch"),
    "read": ("read", "get", "show", "fetch", "retrieve", "view", "describe", "inspect",
             "lookup", "see"),
    "list": ("list", "index", "browse", "enumerate", "find"),
    "update": ("update", "edit", "modify", "change", "patch", "put", "replace", "set",
               "rename"),
    "delete": ("delete", "remove", "destroy", "drop", "erase", "release", "unregister",
               "deprovision"),
}  # fmt: skip
_OPERATION_WORDS = {w: (k,) for k, ws in _OPERATION_SYNONYMS.items() for w in ws}
_QUANTIFIERS = frozenset({"all", "every"})
# Two-word verbs: "set up a service" asks to create one, not to update it.
_OPERATION_PHRASES = {
    ("set", "up"): "create",
    ("sign", "up"): "create",
    ("look", "up"): "read",
    ("get", "rid"): "delete",
    ("take", "down"): "delete",
}
# A verb names the action resource formed from it: evict → eviction, bind → binding.
_NOUN_SUFFIXES = ("ion", "ing", "ment")


def operation_kinds(word: str) -> tuple[str, ...]:
    """Operation kinds a user's verb stands for: ``add`` → ``("create",)``.

    A verb that also names an action (``buy``, ``send``, ``release``) stands for that
    action too: ``POST /numbers/{id}/release`` is an answer to "release a number".
    """
    w = word.strip().lower()
    if not w:
        return ()
    kinds = _OPERATION_WORDS.get(w, (w,))
    return kinds if w in kinds or w not in ACTION_VERBS else (*kinds, w)


def asked_kinds(tokens: Sequence[str]) -> frozenset[str]:
    """Operation kinds the verbs of a question stand for, two-word verbs first."""
    words = [t.lower() for t in tokens]
    asked: set[str] = set()
    i = 0
    while i < len(words):
        pair = _OPERATION_PHRASES.get(tuple(words[i : i + 2]))  # type: ignore[arg-type]
        if pair:
            asked.add(pair)
            i += 2
            continue
        asked.update(operation_kinds(words[i]))
        i += 1
    if not asked & {"create", "update", "delete"} and any(w in _QUANTIFIERS for w in words):
        asked.add("list")  # "all pods" asks for a list, "delete all pods" does not
    return frozenset(asked)


def noun_forms(word: str) -> tuple[str, ...]:
    """Nouns a verb forms with a common suffix: ``evict`` → ``eviction``, ``evicting``…"""
    w = word.lower()
    if len(w) < 4:
        return ()
    stems = (w, w[:-1]) if w.endswith("e") else (w,)
    return tuple(s + suffix for s in stems for suffix in _NOUN_SUFFIXES)


@dataclass(frozen=True, slots=True)
class QueryNouns:
    """The nouns of a question, to tell which resources it names.

    ``names``: every word and every run of two or three adjacent words run together,
    the last word singular (``config map`` → ``configmap``). ``plural``: those whose
    last word was plural in the question ("nodes", "phone numbers").
    """

    names: frozenset[str]
    plural: frozenset[str]
    derived: frozenset[str] = frozenset()  # nouns formed from the question's verbs

    @classmethod
    def of(cls, tokens: Sequence[str]) -> QueryNouns:
        words = [w for t in tokens for w in split_words(t)]
        names: set[str] = set()
        plural: set[str] = set()
        for end in range(len(words)):
            last = singular(words[end])
            for start in range(max(0, end - 2), end + 1):
                name = "".join(words[start:end]) + last
                names.add(name)
                if last != words[end]:
                    plural.add(name)
        derived = {n for w in words for n in noun_forms(w)} - names
        return cls(frozenset(names), frozenset(plural), frozenset(derived))

    def naming(self, resource: str) -> str:
        """How the question names ``resource`` (a resource key): "whole" (its whole name:
        "job" names ``job``), "end" ("job" names ``cron_job``, "number" names
        ``incoming_phone_number``), "verb" (a verb forms it: "evict" names ``eviction``)
        or ""."""
        squashed = resource.replace("_", "")
        if squashed in self.names:
            return "whole"
        if squashed in self.derived:
            return "verb"
        return "end" if self.names_resource(resource) else ""

    def names_resource(self, resource: str) -> str:
        """ "plural", "singular" or "" as the question names ``resource`` (a resource key).

        A name counts when it is the resource's whole name or its end: "number" and
        "phone number" name ``incoming_phone_number``, "map" and "config map" ``configmap``.
        """
        squashed = resource.replace("_", "")
        found = ""
        for name in self.names:
            if len(name) > 2 and squashed.endswith(name):
                if name in self.plural:
                    found = "plural"
                else:
                    return "singular"
        return found


@dataclass(frozen=True, slots=True)
class OperationFit:
    """How an operation fits a question: see :func:`operation_fit`."""

    kind: bool  # the question asks for the operation's kind
    resource: bool  # the question names the resource the operation acts on
    unnamed_parents: int  # enclosing resources the question does not name
    whole: bool = False  # ...by its whole name, not only its last words


def operation_fit(tokens: Sequence[str], path: str, kind: str) -> OperationFit:
    """How well the operation ``kind`` on ``path`` answers a question of ``tokens``.

    ``kind``: a verb of the question stands for the operation's kind ("add" → create,
    "set up" → create), the question names the resource in the plural ("which
    nodes…") and the operation lists it, or a verb of the question forms the
    resource's name ("evict a pod" → ``…/pods/{name}/eviction``). ``resource``: the
    question names the resource acted on; ``whole``: by its whole name ("job" names
    ``job`` whole and ``cron_job`` only by its end). ``unnamed_parents``: resources the
    path nests the operation under that the question does not name; of two otherwise
    equal answers, the less nested one is the likelier (``/Conversations/{sid}/Messages``
    over ``/Services/{sid}/Conversations/{sid}/Messages`` for "post a message into a
    conversation").
    """
    return _operation_fit(tuple(tokens), path, kind)


@lru_cache(maxsize=16384)
def _operation_fit(tokens: tuple[str, ...], path: str, kind: str) -> OperationFit:
    """:func:`operation_fit`, cached: the engine asks for every candidate, twice in
    hybrid mode."""
    nouns = _nouns(tokens)
    asked = set(_asked(tokens))
    resources = _path_resources(path)
    naming = nouns.naming(resources[-1]) if resources else ""
    if (
        naming
        and kind == "list"
        and nouns.names_resource(resources[-1]) == "plural"
        and not asked & {"create", "update", "delete"}  # "delete all pods" is no list
    ):
        asked.add("list")
    parents = sum(1 for r in resources[:-1] if not nouns.names_resource(r))
    if naming == "verb":  # the verb names the action resource: asked for, by name
        return OperationFit(True, True, parents, True)
    return OperationFit(kind in asked, bool(naming), parents, naming == "whole")


@lru_cache(maxsize=64)
def _nouns(tokens: tuple[str, ...]) -> QueryNouns:
    return QueryNouns.of(tokens)


@lru_cache(maxsize=64)
def _asked(tokens: tuple[str, ...]) -> frozenset[str]:
    return asked_kinds(tokens)


@lru_cache(maxsize=8192)
def _path_resources(path: str) -> tuple[str, ...]:
    return tuple(path_resources(path))


# --------------------------------------------------------------------------- graph


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

    @property
    def resource(self) -> str:
        """The resource the operation acts on: the innermost one, or ''."""
        return self.resources[-1] if self.resources else ""

    @property
    def collection(self) -> str:
        """The path of the collection the operation belongs to (see :func:`collection_path`)."""
        return collection_path(self.path)


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


def collection_path(path: str) -> str:
    """The collection an operation's path belongs to.

    Trailing parameters and a trailing action segment are removed:
    ``/v1/charges/{charge}/capture`` → ``/v1/charges``; ``/v1/customers`` stays.
    """
    segs = path_segments(path)
    if len(segs) > 1 and not is_param(segs[-1]) and _is_action(segs[-1]):
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


def endpoint_from_document(doc: Document) -> Endpoint | None:
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
    while segs and segs[0].lower() in _PREFIX_WORDS:
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
    def build(cls, docs: Iterable[Document]) -> APIGraph:
        """A graph of every document of type ``api`` that has a method and a path."""
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
        return EndpointLookup(raw, want, match, tuple(found), params, same, parents, children)

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
    "OperationFit",
    "QueryNouns",
    "Resource",
    "asked_kinds",
    "collection_path",
    "noun_forms",
    "operation_fit",
    "operation_kind",
    "operation_kinds",
    "path_resources",
    "resource_key",
    "singular",
    "split_words",
]
