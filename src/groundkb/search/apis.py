"""What the search engine knows about the API operations of an index, beyond their text.

Built from the document summaries whenever the index changes:

- **Operations by resource name.** A question that names a resource ("make a new
  namespace") must see the operations on it even when the name is too common for
  keyword search to rank them among its candidates: in the Kubernetes spec nearly every
  operation mentions "namespace". :meth:`ApiIndex.named_by` returns the operations
  whose own resource the question names (its whole name, its last words, or a noun
  formed from one of its verbs), for the engine to score beside the keyword candidates.
- **The spec's own verbs.** Every operation has actions: its kind (create, list, an
  action segment such as ``capture``), the verb its summary starts with ("Removes a user
  from a conversation" → remove) and the verbs of its operationId (``conversations_kick``
  → kick), each with the kind it stands for (remove → delete). A word counts as a verb
  when it leads at least :data:`VERB_MIN_OPERATIONS` summaries of the index, is some
  operation's kind, or is a common verb (``apinames``): the vocabulary comes from the
  specs, not from a list written for one API.
- **How an operation fits the question.** :func:`operation_factor` turns
  ``apinames.operation_fit`` (the kind asked for, the resource named, enclosing
  resources not named), the actions the question asks for and supersession into the
  factor the engine multiplies an API operation's rank by. Its constants are settings
  (:class:`ApiWeights`), fitted leave-one-spec-out by ``benchmarks/fit_api_ranking.py``.
- **Deprecated operations.** :attr:`ApiIndex.deprecated` holds the operations their
  spec marks ``deprecated``; their hits and clarifying options say so.
- **Superseded versions.** An index often holds several versions of one API
  (``twilio_studio_v1`` and ``twilio_studio_v2``; ``/apis/autoscaling/v1`` and
  ``/apis/autoscaling/v2``), with the same operations in each. A question that does not
  name a version is best answered by the newest one; :attr:`ApiIndex.superseded` holds
  the operations a newer version of their API also has.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from ..analyze.lexicon import english_verbs
from ..analyze.text import STOP_WORDS, singular, tokenize
from ..apinames import (
    CRUD_KINDS,
    LINK_WORDS,
    OperationFit,
    QueryNouns,
    asked_kinds,
    change_verb,
    collection_segments,
    first_word,
    is_param,
    is_version,
    object_head,
    opening_kinds,
    operation_fit,
    operation_kinds,
    path_resources,
    path_resources_of,
    path_segments,
    plain_object,
    query_nouns,
    split_words,
    verb_kind,
)
from ..models import Filters
from ..store.base import DocSummary

VERB_MIN_OPERATIONS = 3  # a word leading this many summaries is one of the index's verbs


@dataclass(frozen=True, slots=True)
class ApiWeights:
    """The constants of :func:`operation_factor` (settings ``api_*``)."""

    kind_boost: float = 0.5  # × (1 + kind_boost): the question asks for the operation's action
    resource: float = 1.25  # × resource: the question names the resource acted on
    parent: float = 0.85  # × parent per enclosing resource the question does not name
    superseded: float = 0.98  # × superseded: a newer version has the same operation
    context: float = 1.0  # × context^(share of the question's resources its API lacks)
    read: float = 1.0  # × read: an operation that reads, when the question asks for a change


# "v2", "v2beta1", "v1alpha3", "2010-04-01": stable above beta above alpha.
_VERSION_PARTS = re.compile(r"^v?(\d+)(?:(alpha|beta|preview)(\d*))?$", re.I)
_STAGE = {"alpha": 0, "preview": 0, "beta": 1, "": 2}
_SPEC_VERSION = re.compile(r"[_-](v\d+(?:(?:alpha|beta|preview)\d*)?)$", re.I)

Version = tuple[tuple[int, ...], ...]


@lru_cache(maxsize=4096)
def version_rank(text: str) -> tuple[int, ...]:
    """Order of a version string: ``v1alpha1`` < ``v1beta2`` < ``v1`` < ``v2``; dates by date."""
    m = _VERSION_PARTS.match(text)
    if m:
        return (int(m.group(1)), _STAGE[(m.group(2) or "").lower()], int(m.group(3) or 0))
    return tuple(int(p) for p in re.findall(r"\d+", text))


def version_family(spec: str, method: str, path: str) -> tuple[str, Version]:
    """The operation with its versions taken out, and those versions in order.

    ``("twilio_studio_v2", "POST", "/v2/Flows/{FlowSid}/Executions")`` →
    ``("twilio_studio POST /{v}/flows/{}/executions", ((2, 2, 0), (2, 2, 0)))``. Parameter
    names are left out: versions rename them. Only the same operation counts: a newer
    version of an API is often a partial one (Twilio's ``messaging_v3`` holds one
    operation), so an operation only it has supersedes nothing.
    """
    spec, spec_version = _spec_version(spec)
    versions: list[tuple[int, ...]] = [spec_version] if spec_version else []
    segments = []
    for seg in path_segments(path):
        if is_version(seg):
            versions.append(version_rank(seg))
            segments.append("{v}")
        else:
            segments.append("{}" if is_param(seg) else seg.lower())
    return f"{spec} {method.upper()} /{'/'.join(segments)}", tuple(versions)


@lru_cache(maxsize=1024)
def _spec_version(spec: str) -> tuple[str, tuple[int, ...]]:
    """A spec's name without its version suffix, and that version's order (``()`` when
    it has none): ``twilio_studio_v2`` → ``("twilio_studio", (2, 2, 0))``."""
    m = _SPEC_VERSION.search(spec)
    return (spec[: m.start()], version_rank(m.group(1))) if m else (spec, ())


def _names_many(path: str) -> bool:
    """Whether a path ends at a collection named in the plural (``…/serviceaccounts``,
    ``…/labels``), not at one thing (``…/schema-registry/config``, whose
    ``…/config/{subject}`` configures one subject)."""
    last = path.rsplit("/", 1)[-1].lower().removesuffix(".json")
    return not is_param(last) and last.isalpha() and singular(last) != last


def _name_suffixes(resource: str) -> list[str]:
    """``incoming_phone_number`` → ``number``, ``phonenumber``, ``incomingphonenumber``."""
    words = resource.split("_")
    return ["".join(words[i:]) for i in range(len(words) - 1, -1, -1)]


_CRUD = frozenset(CRUD_KINDS)
_NONE: frozenset[str] = frozenset()
# Kinds whose operation on a collection changes all of it (a read of a collection is a
# list, a kind of its own; a create on one makes one item)
_CHANGES_MANY = frozenset({"delete", "update"})


@dataclass
class ApiIndex:
    """Operations by the names of their resources, and the superseded versions."""

    by_name: dict[str, list[tuple[str, bool]]] = field(default_factory=dict)  # → (id, whole)
    superseded: frozenset[str] = frozenset()
    # operations their spec marks deprecated: said in their hits and options, not ranked
    # lower (measured: docs/benchmarks.md, twenty-fourth stop)
    deprecated: frozenset[str] = frozenset()
    summaries: dict[str, DocSummary] = field(default_factory=dict)
    # doc id → its operation with versions taken out: one meaning across API versions
    families: dict[str, str] = field(default_factory=dict)
    actions: dict[str, frozenset[str]] = field(default_factory=dict)  # doc id → its actions
    verbs: frozenset[str] = frozenset()  # the index's verbs (see the module docstring)
    # source → the words of its resource names: the vocabulary of one API
    vocabulary: dict[str, frozenset[str]] = field(default_factory=dict)
    every: frozenset[str] = frozenset()  # every API's resource words
    # operations on a whole collection whose API does the same (their kind) to one item
    # (Kubernetes' ``DELETE …/serviceaccounts`` beside ``DELETE …/serviceaccounts/{name}``)
    collective: frozenset[str] = frozenset()
    # spec → the segments a parameter follows in one of its paths: collections, never
    # actions (``apinames.collection_segments``)
    collections: dict[str, frozenset[str]] = field(default_factory=dict)
    _collections: dict[str, frozenset[str]] = field(default_factory=dict, repr=False)  # by id
    _named: dict[tuple[str, ...], frozenset[str]] = field(default_factory=dict, repr=False)

    @classmethod
    def build(cls, docs: Iterable[DocSummary], deprecated: Iterable[str] = ()) -> ApiIndex:
        index = cls(deprecated=frozenset(deprecated))
        families: dict[str, list[tuple[Version, str]]] = {}
        leading: Counter[str] = Counter()
        vocab: dict[str, set[str]] = {}
        own: dict[str, tuple[str, list[str]]] = {}  # doc id → (summary verb, operationId words)
        endpoints: dict[str, tuple[str, str, str]] = {}  # doc id → (spec, kind, path)
        on_items: set[tuple[str, str, str]] = set()  # (spec, kind, collection path)
        docs = [d for d in docs if d.type == "api" and d.operation_kind]
        paths: dict[str, list[str]] = {}
        for d in docs:
            spec, _, endpoint = d.id.partition(":")
            paths.setdefault(spec, []).append(endpoint.partition(" ")[2])
        index.collections = {spec: collection_segments(p) for spec, p in paths.items()}
        index._collections = {d.id: index.collections[d.id.partition(":")[0]] for d in docs}
        for d in docs:
            spec, _, endpoint = d.id.partition(":")
            method, _, path = endpoint.partition(" ")
            if not path:
                continue
            index.summaries[d.id] = d
            endpoints[d.id] = (spec, d.operation_kind, path.rstrip("/"))
            collection, _, last = path.rstrip("/").rpartition("/")
            if is_param(last):
                on_items.add((spec, d.operation_kind, collection))
            resources = path_resources(path, index.collections[spec])
            words = vocab.setdefault(d.source, set())
            for r in resources:
                words.update(w for w in r.split("_") if len(w) > 2)
            if resources:
                names = _name_suffixes(resources[-1])
                for name in names:
                    index.by_name.setdefault(name, []).append((d.id, name == names[-1]))
            word = first_word(d.title)
            first = singular(word) if word.isalpha() else ""
            if first and first not in STOP_WORDS:
                leading[first] += 1
            op_words = [singular(w) for w in split_words(d.aliases[0])] if d.aliases else []
            # a word that leads one of its resources' names is a noun there, no action:
            # "check" of ``checks/create`` on ``check_run`` ("delete a check run" asks
            # for no action of ``POST …/check-runs``)
            nouns = {w for r in resources for w in r.split("_")[:-1]}
            own[d.id] = (
                "" if first in nouns else first,
                [w for w in op_words if w not in nouns],
            )
            family, version = version_family(spec, method, path)
            index.families[d.id] = family
            if version:
                families.setdefault(family, []).append((version, d.id))
        superseded: set[str] = set()
        for members in families.values():
            if len(members) > 1:
                newest = max(v for v, _ in members)
                superseded.update(doc_id for v, doc_id in members if v < newest)
        index.superseded = frozenset(superseded)
        index.collective = frozenset(
            doc_id
            for doc_id, at in endpoints.items()
            if at[1] in _CHANGES_MANY and at in on_items and _names_many(at[2])
        )
        index.vocabulary = {source: frozenset(w) for source, w in vocab.items()}
        index.every = frozenset().union(*index.vocabulary.values())
        kinds = {d.operation_kind for d in index.summaries.values()}
        verbs = {w for w, n in leading.items() if n >= VERB_MIN_OPERATIONS} | kinds
        index.verbs = frozenset(verbs)
        for doc_id, (first, op_words) in own.items():
            found = {w for w in (first, *op_words) if w in verbs or verb_kind(w)}
            acts = {index.summaries[doc_id].operation_kind, *found}
            acts |= {verb_kind(w) for w in found if verb_kind(w)}
            index.actions[doc_id] = frozenset(acts)
        return index

    def endpoint(self, doc_id: str) -> tuple[str, str, str]:
        """(method, path, resource acted on) of an API operation, or three ''."""
        if doc_id not in self.summaries:
            return "", "", ""
        method, _, path = doc_id.partition(":")[2].partition(" ")
        resources = path_resources_of(path, self.collections_of(doc_id))
        return method, path, resources[-1] if resources else ""

    def collections_of(self, doc_id: str) -> frozenset[str]:
        """The collection segments of the spec of operation ``doc_id``."""
        return self._collections.get(doc_id, _NONE)

    def missing_share(self, tokens: Sequence[str], source: str) -> float:
        """The share of the question's resource words (words that name a resource of
        some API in the index) that the API of ``source`` has no resource for: 0 when
        the question speaks that API's language, 1 when it speaks only another's."""
        if len(self.vocabulary) < 2:
            return 0.0
        key = tuple(tokens)
        named = self._named.get(key)
        if named is None:
            named = frozenset(singular(t) for t in key if t not in STOP_WORDS) & self.every
            self._named = {key: named}  # one question at a time
        if not named:
            return 0.0
        return len(named - self.vocabulary.get(source, frozenset())) / len(named)

    def names_object(self, tokens: Sequence[str]) -> bool:
        """Whether the object of the question's verb names a resource of some API in the
        index ("add a message to a thread": message; not "which endpoint creates a
        customer", whose first word is no verb)."""
        names = query_nouns(object_head(tuple(tokens))).names
        return any(len(n) > 2 and n in self.by_name for n in names)

    def asked_actions(self, tokens: Sequence[str]) -> frozenset[str]:
        """The actions a question asks for: its verbs that are verbs of the index or
        common ones, and the kinds they stand for."""
        return _asked_actions(tuple(tokens), self.verbs)

    def named_by(
        self, tokens: Sequence[str], limit: int, filters: Filters | None = None
    ) -> list[DocSummary]:
        """Operations whose own resource the question names, whole names first; only
        those ``filters`` allow."""
        if not self.by_name:
            return []
        nouns = query_nouns(tuple(tokens))
        whole: list[str] = []
        partial: list[str] = []
        for name in sorted(nouns.names | nouns.derived, key=lambda n: (-len(n), n)):
            if len(name) < 3:
                continue
            for doc_id, is_whole in self.by_name.get(name, ()):
                (whole if is_whole else partial).append(doc_id)
        seen: set[str] = set()
        out: list[DocSummary] = []
        for doc_id in (*whole, *partial):
            if doc_id in seen:
                continue
            seen.add(doc_id)
            d = self.summaries[doc_id]
            if filters is not None and not filters.allows(d.type, d.category, d.source):
                continue
            out.append(d)
            if len(out) >= limit:
                break
        return out


@lru_cache(maxsize=256)
def _asked_actions(tokens: tuple[str, ...], verbs: frozenset[str]) -> frozenset[str]:
    words = [t for t in tokens if t not in STOP_WORDS]
    asked = set(asked_kinds(words))
    for w in words:
        one = singular(w)
        if one in verbs or verb_kind(one):
            asked.add(one)
            asked.update(operation_kinds(one))
    return frozenset(a for a in asked if a in verbs or verb_kind(a))


def operation_factor(
    tokens: Sequence[str],
    doc: DocSummary,
    superseded: bool,
    weights: ApiWeights,
    index: ApiIndex | None = None,
) -> float:
    """Rank factor of the API operation ``doc`` for a question of ``tokens``.

    × (1 + kind_boost) when the question asks for one of its actions ("create a room":
    the operation that creates, not one that lists; "kick someone out of a channel":
    ``/conversations.kick``) or its first word names the resource a create makes ("refund
    a payment" → ``POST /v1/refunds``), though not when the object of its verb is a
    resource the operation is nested under and the verb only names a kind ("create a
    customer" does not ask for ``POST /customers/{customer}/subscriptions``; "reboot a
    droplet" still asks for ``POST /droplets/{id}/actions``, whose summary reboots), nor
    of an operation on a whole collection (:attr:`ApiIndex.collective`) when the question
    names the resource in the singular without "all" or "every" ("delete service
    account" asks to delete one), nor of a list when the question names the resource as
    one item ("look up one returned order", "a specific refund", "a batch by its id"),
    nor when it names the resource only as where the object of its verb goes, comes from
    or goes with, and that object is a resource of the index ("add a message to a
    thread" does not ask for ``POST /threads``; "create a thread with an initial
    message" not for ``POST /threads/{id}/messages``), ×
    resource when it names the resource acted on,
    × parent per enclosing resource it does not name, and × superseded when a newer
    version of its API has the same operation.
    """
    path = doc.id.partition(" ")[2]  # api document ids are "{spec}:{METHOD} {path}"
    collections = index.collections_of(doc.id) if index is not None else _NONE
    fit = operation_fit(tokens, path, doc.operation_kind, collections)
    asked = _asked(tokens, doc, path, fit, index)
    factor = weights.parent**fit.unnamed_parents
    if asked:
        factor *= 1 + weights.kind_boost
    if fit.resource:
        factor *= weights.resource
    if superseded:
        factor *= weights.superseded
    if weights.context != 1.0 and index is not None:
        factor *= weights.context ** index.missing_share(tokens, doc.source)
    if weights.read != 1.0 and doc.operation_kind in ("read", "list", "search", "watch"):
        verb = _change_verb(tuple(tokens))
        if verb and not (index is not None and singular(verb) in index.by_name):
            factor *= weights.read  # "close an issue" asks for no read; "account history" does
    return factor


# The kinds a near miss is told by: a list and a read both read, and ranking tells them
# apart; a near miss does another thing altogether.
_FAMILY = {
    "create": "create",
    "read": "read",
    "list": "read",
    "update": "update",
    "delete": "delete",
}


def near_miss(tokens: Sequence[str], doc: DocSummary, index: ApiIndex) -> str:
    """Why the API operation ``doc``, though it ranks first, is not what a question of
    ``tokens`` asks for, or '' when nothing says so. Four things do:

    - the question's verb asks for one of create, read (or list), update and delete,
      and the operation does another of them, none of its own actions asked ("delete an
      audit log": ``GET /organization/audit_logs`` lists);
    - the question names resources of the index, and the operation's title and path
      name none of them ("delete a price": ``DELETE /v1/products/{id}``; "pause a
      batch": ``POST /fine_tuning/jobs/{id}/pause``);
    - the operation does the verb to something the named resource holds
      (:func:`_under_object`: "cancel a vector store" and its file batches);
    - the operation does the verb to another thing, its title or path naming the
      verb's object only as a word of that thing's name or as where it goes
      (:func:`_acts_on_another`: "delete a workflow" and "Delete a workflow run").

    Each is the shape of an operation the API does not have: an action and a resource
    the spec both has, but not together. The verdict does not answer from such a hit
    (``verdict.near_miss``).
    """
    path = doc.id.partition(" ")[2]
    content = [t for t in tokens if t not in STOP_WORDS]
    wanted = {_FAMILY[k] for k in opening_kinds(content) if k in _FAMILY}
    own = _FAMILY.get(doc.operation_kind)
    if wanted and own and own not in wanted:
        fit = operation_fit(tokens, path, doc.operation_kind, index.collections_of(doc.id))
        if not _asked(tokens, doc, path, fit, index):
            return f"it does a {doc.operation_kind}, not the {' or '.join(sorted(wanted))} asked"
    nouns = query_nouns(tuple(tokens))
    named = {n for n in nouns.names if len(n) > 2 and n in index.by_name}
    if named and not named & _own_names(doc.title, path):
        words = [t for t in content if singular(t) in named] or sorted(named)
        return f"its title and path name no {' or '.join(words)}"
    if not content:
        return ""
    chain = list(path_resources_of(path, index.collections_of(doc.id)))
    request = _Request.of(tuple(tokens), singular(content[0]), nouns, chain)
    return _under_object(request, doc, index) or _acts_on_another(request, doc, index)


@dataclass(frozen=True, slots=True)
class _Request:
    """What the near-miss shapes read of a request and of the operation's path."""

    tokens: tuple[str, ...]
    verb: str  # the request's first word that is no stop word, singular
    head: tuple[str, ...]  # the verb's object (``object_head``)
    nouns: QueryNouns
    chain: list[str]  # the path's resources, less the verb's own ("…/pulls/{n}/merge")

    @classmethod
    def of(
        cls, tokens: tuple[str, ...], verb: str, nouns: QueryNouns, chain: list[str]
    ) -> _Request:
        """``chain``: the resources of the operation's path (``path_resources``)."""
        if chain and _of_verb(chain[-1], verb, nouns):
            chain = chain[:-1]
        return cls(tokens, verb, object_head(tokens), nouns, chain)

    @property
    def thing(self) -> str:
        """The last word of the verb's object, singular ('' without one)."""
        return singular(self.head[-1]) if self.head else ""


def _under_object(request: _Request, doc: DocSummary, index: ApiIndex) -> str:
    """Why an operation that does the request's verb does it to something the resource
    named holds, not to that resource ("cancel a customer": ``DELETE
    /customers/{customer}/subscriptions/{id}``; "pin an issue": ``PUT
    /issues/comments/{id}/pin``), or ''. The thing acted on is the path's last resource
    (:attr:`_Request.chain`, less the verb's own: "merge a pull request": ``…/pulls/{n}/
    merge`` merges the pull request; "follow a playlist": ``…/playlists/{id}/followers``)."""
    chain = request.chain
    if request.verb not in index.actions.get(doc.id, ()):
        return ""
    if len(chain) < 2 or set(_name_suffixes(chain[-1])) & request.nouns.names:
        return ""  # nothing under anything, or the thing acted on is named
    thing = request.thing
    if not thing or not any(thing in _name_suffixes(r) for r in chain[:-1]):
        return ""  # the verb's object is no resource the operation's is under
    asked = " ".join(request.head)
    return f"it acts on the {chain[-1].replace('_', ' ')} of a {asked}, not on the {asked}"


# Words after which a title names where its object goes or comes from, or what it is for
# ("Pins an item to a channel", "Dismiss a review for a pull request"), not what it acts on.
_TITLE_LINKS = LINK_WORDS | {"for", "in", "on"}


def _acts_on_another(request: _Request, doc: DocSummary, index: ApiIndex) -> str:
    """Why an operation that does the request's verb acts on another thing than the
    verb's object, though its title or path names that object: as a word of another
    thing's name ("delete a workflow": "Delete a workflow run"; "release a subscription":
    ``/subscription_schedules/{id}/release``) or as where its own object goes, comes from
    or is for ("pin a channel": "Pins an item to a channel"; "dismiss a pull request":
    "Dismiss a review for a pull request"), or ''.

    What an operation acts on is the last word of each run of words in its title that
    no link word ("to", "from", "for", ...) leads, and the last resource of the path's
    (:attr:`_Request.chain`).
    It does the verb when the verb is one of its actions or its title's first word. Not
    a near miss: a request whose verb is phrasal ("turn on do not disturb": no object
    "disturb"), nor an operation that creates what the verb names ("review a pull
    request": "Create a review for a pull request")."""
    verb, nouns = request.verb, request.nouns
    if not plain_object(request.tokens):
        return ""
    if verb not in index.actions.get(doc.id, ()) and verb != singular(first_word(doc.title)):
        return ""  # it does not do the verb ("Recycle a node pool" does, one title alone)
    thing = request.thing
    if len(thing) < 3 or thing in nouns.derived:
        return ""
    runs, named = _acted_on(doc.title, request.chain)
    if thing in {run[-1] for run in runs} or thing not in named:
        return ""  # it acts on the thing asked for, or its words do not name it at all
    if doc.operation_kind == "create" and any(_of_verb(run[-1], verb, nouns) for run in runs):
        return ""  # it makes what the verb names ("review a pull request": a review for one)
    what = " ".join(runs[0]) if runs else "something else"
    return f"it acts on the {what}, not on the {' '.join(request.head)}"


def _acted_on(title: str, chain: list[str]) -> tuple[list[tuple[str, ...]], frozenset[str]]:
    """(the runs of words naming what an operation acts on, singular: its title's after
    its verb that no link word leads, then the last resource of ``chain``; every word of
    its title and of ``chain``) (see :func:`_acts_on_another`)."""
    words = [singular(w) for w in tokenize(title)]
    runs: list[tuple[str, ...]] = []
    run: list[str] = []
    linked = False
    for w in [*words, "a"]:
        if w not in STOP_WORDS:
            run.append(w)
            continue
        if run and not linked:
            runs.append(tuple(run))
        if run or w in _TITLE_LINKS:
            linked = w in _TITLE_LINKS
        run = []
    if runs and runs[0][0] == singular(first_word(title)):
        runs[0] = runs[0][1:]  # the title's verb: "Delete a workflow run" acts on a run
    runs = [r for r in runs if r]
    if chain:
        runs.append(tuple(chain[-1].split("_")))
    named = set(words) | {w for r in chain for w in r.split("_")}
    return runs, frozenset(named)


def _of_verb(resource: str, verb: str, nouns: QueryNouns) -> bool:
    """Whether a path's resource is its verb's own: the action itself (``…/merge``),
    or a noun formed from it (``…/followers``, ``…/dismissals``); an "un" verb undoes
    its base's ("unfollow a playlist": ``DELETE …/followers``)."""
    base = verb[2:] if verb.startswith("un") and len(verb) > 4 else verb
    return any(resource.startswith(v) or v.startswith(resource) for v in {verb, base}) or (
        resource in nouns.derived
    )


@lru_cache(maxsize=256)
def _own_names(title: str, path: str) -> frozenset[str]:
    """The names an operation's title and path hold, formed as a question's are
    (``QueryNouns``: runs of up to three words, the last singular)."""
    literal = [w for seg in path_segments(path) if not is_param(seg) for w in split_words(seg)]
    return query_nouns(tuple(tokenize(title))).names | query_nouns(tuple(literal)).names


def _asked(
    tokens: Sequence[str], doc: DocSummary, path: str, fit: OperationFit, index: ApiIndex | None
) -> bool:
    """Whether the question asks for the operation's action (see operation_factor)."""
    # "create a customer": an operation that creates something under the customer
    # creates, but not what was asked for (an action named by the verb still is)
    asked = fit.kind and not fit.on_parent
    # "show all my projects" reads many: reading one is not what it asks for; "look up
    # one returned order" reads one: listing them all is not
    if (
        not asked
        and index is not None
        and not (fit.many and doc.operation_kind == "read")
        and not (fit.one and doc.operation_kind == "list")
    ):
        actions = index.asked_actions(tokens) & index.actions.get(doc.id, frozenset())
        asked = bool(actions - _CRUD if fit.on_parent else actions)
        if not asked and doc.operation_kind == "create" and fit.whole:
            lead = next((t for t in tokens if t not in STOP_WORDS), "")
            resources = path_resources_of(path, index.collections_of(doc.id))
            verbs = english_verbs()  # "refund a payment" asks, "daemonset status" does not
            asked = (
                bool(resources)
                and singular(lead) == resources[-1].rsplit("_", 1)[-1]
                and (not verbs or lead in verbs)
            )
    if asked and not fit.plural and index is not None and doc.id in index.collective:
        asked = False  # "delete service account" asks for one, not the whole collection
    if asked and fit.off_object and index is not None and index.names_object(tokens):
        asked = False  # "add a message to a thread" creates no thread
    return asked


@lru_cache(maxsize=256)
def _change_verb(tokens: tuple[str, ...]) -> str:
    return change_verb(tokens)
