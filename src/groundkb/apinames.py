"""API naming: what a resource and an operation kind are, and how an operation fits a
question.

Used at ingest time (the OpenAPI loader stores :func:`path_resources` and
:func:`operation_kind` of every operation), by the API graph (``apigraph.py``) and by
the search engine, so that all three agree.

- Resources come from path segments, singular, snake_case: ``/v1/customers/{customer}/
  sources`` → ``customer``, ``source`` (:func:`resource_key`, :func:`singular`,
  :func:`path_resources`).
- Operation kinds: ``create`` (POST to a collection), ``read`` (GET of one item or of a
  singleton), ``list`` (GET of a collection), ``update`` (PUT/PATCH, or POST to an
  item), ``delete``, or an action named by a verb segment (``POST /charges/{charge}/
  capture`` → ``capture``; ``GET /customers/search`` → ``search``). A segment that a
  parameter follows anywhere in the spec names a collection, never an action, even when
  a verb leads it (GitHub's ``check-runs``, Stripe's ``report_runs``, Twilio's
  ``EndUsers``: :func:`collection_segments`).
- A question's verbs stand for kinds (:func:`asked_kinds`: "add" → create, "set up" →
  create) and its nouns name resources (:class:`QueryNouns`: "config map" →
  ``configmap``, "evict" → ``eviction``); :func:`operation_fit` tells how an operation
  fits a question, and the search engine ranks API documents by it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise

from .analyze.lexicon import base_verb
from .analyze.text import STOP_WORDS, singular

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


def operation_in_id(doc_id: str) -> str:
    """An API operation's method and path from its document id (``spec:METHOD /path``);
    '' for any other id."""
    _, _, op = doc_id.partition(":")
    method, _, path = op.partition(" ")
    return op if method.isupper() and method.lower() in HTTP_METHODS and path[:1] == "/" else ""


CRUD_KINDS: tuple[str, ...] = ("create", "read", "list", "update", "delete")

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_NON_WORD = re.compile(r"[^A-Za-z0-9]+")
_WORD_RUN = re.compile(r"[A-Za-z0-9]+")
_VERSION = re.compile(
    r"^(?:v\d+(?:(?:alpha|beta|preview)\d*)?|\d{4}-\d{2}-\d{2}|\d+(?:\.\d+)*)$", re.I
)
PREFIX_WORDS = frozenset({"api", "apis", "rest"})

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


def split_words(text: str) -> list[str]:
    """Lower-case words of an identifier: ``listPaymentIntents``, ``issues/list-for-repo``."""
    return list(_words(text))


def first_word(text: str) -> str:
    """``split_words(text)[0]`` ('' when there is none), without splitting the rest."""
    part = _WORD_RUN.search(text)
    if part is None:
        return ""
    return next(w for w in _CAMEL.split(part.group()) if w).lower()


@lru_cache(maxsize=16384)
def _words(text: str) -> tuple[str, ...]:
    """:func:`split_words`, cached (a spec repeats its path segments) and immutable."""
    out: list[str] = []
    for part in _NON_WORD.split(text):
        if part:
            out.extend(w.lower() for w in _CAMEL.split(part) if w)
    return tuple(out)


def is_plural(word: str) -> bool:
    return singular(word.lower()) != word.lower()


@lru_cache(maxsize=8192)
def resource_key(name: str) -> str:
    """The canonical resource name: snake_case, last word singular (cached: a spec
    repeats its segments in path after path).

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


@lru_cache(maxsize=8192)
def is_version(segment: str) -> bool:
    return bool(_VERSION.match(segment))


@lru_cache(maxsize=8192)
def is_action(segment: str) -> bool:
    """A verb (``capture``) or a phrase led by one (``verify_microdeposits``); cached."""
    words = split_words(segment)
    if not words or words[0] not in ACTION_VERBS:
        return False
    return len(words) > 1 or not is_plural(words[0])


def collection_segments(paths: Iterable[str]) -> frozenset[str]:
    """The literal segments a parameter follows in some path of ``paths`` (one spec's):
    collections, though a verb may lead their name (``/repos/{owner}/{repo}/check-runs/
    {check_run_id}`` makes ``check-runs`` one, so ``POST /repos/{owner}/{repo}/
    check-runs`` creates a check run rather than doing a "check").
    """
    out: set[str] = set()
    for path in paths:
        segs = path_segments(path)
        out.update(a for a, b in pairwise(segs) if is_param(b) and not is_param(a))
    return frozenset(out)


def _acts(segs: Sequence[str], i: int, collections: frozenset[str]) -> bool:
    """Whether segment ``i`` of a path is an action: a verb phrase that no parameter
    follows, here or (``collections``) anywhere else in its spec."""
    seg = segs[i]
    if seg in collections or (i + 1 < len(segs) and is_param(segs[i + 1])):
        return False
    return is_action(seg)


_RPC = re.compile(r"^[A-Za-z][A-Za-z0-9_]*(?:\.[A-Za-z][A-Za-z0-9_]*)+$")


def rpc_method(path: str) -> tuple[list[str], list[str]] | None:
    """A remote-procedure path's family and method: ``/chat.postMessage`` →
    ``(["chat"], ["post", "message"])``, ``/admin.conversations.invite`` →
    ``(["admin", "conversations"], ["invite"])``; None for a resource path."""
    segs = path_segments(path)
    if len(segs) != 1 or not _RPC.match(segs[0]):
        return None
    parts = segs[0].split(".")
    return parts[:-1], split_words(parts[-1])


def path_resources(path: str, collections: frozenset[str] = frozenset()) -> list[str]:
    """Resources a path names, outermost first.

    A literal segment is a resource when a parameter follows it, when it is the last
    segment, or when it is a plain word in the middle (``/user/repos``). Version
    segments, ``api``/``apis``, API group names before a version (``/apis/apps/v1``) and
    action verbs are not resources, unless ``collections`` (the spec's
    :func:`collection_segments`) holds the segment. ``/v1/customers/{customer}/sources``
    → ``["customer", "source"]``. A remote-procedure path names its family and the
    object of its method: ``/chat.postMessage`` → ``["chat", "message"]``,
    ``/users.lookupByEmail`` → ``["user"]``.
    """
    rpc = rpc_method(path)
    if rpc is not None:
        family, method = rpc
        keys = [resource_key(f) for f in family]
        obj = method[1:]
        if obj and obj[0] != "by":
            keys.append(resource_key("_".join(obj)))
        return list(dict.fromkeys(k for k in keys if k))
    segs = path_segments(path)
    out: list[str] = []
    for i, seg in enumerate(segs):
        if is_param(seg) or is_version(seg) or seg.lower() in PREFIX_WORDS or "." in seg:
            continue
        nxt = segs[i + 1] if i + 1 < len(segs) else ""
        if nxt and is_version(nxt):
            continue  # an API group name such as /apis/apps/v1
        if _acts(segs, i, collections):
            continue
        key = resource_key(seg)
        if key and key not in out:
            out.append(key)
    return out


def operation_kind(
    method: str, path: str, hint: str = "", operation_id: str = "",
    collections: frozenset[str] = frozenset(), methods: Sequence[str] = (),
) -> str:  # fmt: skip
    """create / read / list / update / delete, or the action verb of the path.

    ``hint`` is an explicit action from the spec (``x-kubernetes-action``) when present.
    A GET of a literal segment is a list when the segment is plural, else a read; an
    ``operation_id`` led by ``list`` or ``fetch``/``read``/``retrieve`` decides instead
    (``GET /Messages/{sid}/Media`` with ``ListMedia`` lists, ``GET /Configuration/Webhooks``
    with ``FetchWebhook`` reads). A POST to an action segment does its verb, and so does
    a GET of one, unless another of the path's ``methods`` does it: then the GET reads
    (``GET /pulls/{n}/merge`` beside ``PUT`` tells whether the pull request was merged;
    ``GET /credit_notes/preview`` previews); any other method does the verb its
    ``operation_id`` names, when one does (``DELETE /issues/{n}/lock`` with
    ``issues/unlock`` unlocks, ``DELETE /migrations/{id}/archive`` with
    ``migrations/delete-archive-for-org`` deletes). ``collections``: the spec's
    :func:`collection_segments`, never actions.
    """
    hinted = verb_kind(hint) if hint else ""
    if hinted:
        return hinted
    m = method.lower()
    rpc = rpc_method(path)
    if rpc is not None and rpc[1]:
        named = verb_kind(rpc[1][0])
        if named:
            return named
        return "read" if m in ("get", "head") else rpc[1][0]  # users.info, conversations.kick
    segs = path_segments(path)
    last = segs[-1] if segs else ""
    if last and not is_param(last) and len(segs) > 1 and _acts(segs, len(segs) - 1, collections):
        verb = split_words(last)[0]
        if m == "post":
            return verb
        if m in ("get", "head"):
            done = any(o.lower() not in ("get", "head", "options") for o in methods)
            return "read" if done else verb
        return _id_verb(operation_id) or verb
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
        by_id = _ID_KINDS.get(next(iter(split_words(operation_id)), ""))
        return by_id or ("list" if is_plural(last) else "read")
    return m


_ID_KINDS = {"list": "list", "fetch": "read", "read": "read", "retrieve": "read"}


def _id_verb(operation_id: str) -> str:
    """The kind of the first word of an operationId that is a verb, after a family
    prefix (``issues/unlock`` → ``unlock``, ``migrations/delete-archive-for-org`` →
    ``delete``), or ''."""
    for word in split_words(operation_id.rpartition("/")[2]):
        kind = verb_kind(word)
        if kind:
            return kind
    return ""


_OPERATION_SYNONYMS = {
    "create": ("create", "add", "new", "make", "post", "insert", "register", "buy", "purchase",
               "provision", "generate", "send", "place", "launch", "upload", "initiate"),
    "read": ("read", "get", "show", "fetch", "retrieve", "view", "describe", "inspect",
             "lookup", "see", "info", "check"),
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
# A verb names the action resource formed from it: evict → eviction, bind → binding,
# invite → invitation, approve → approval.
_NOUN_SUFFIXES = ("ion", "ation", "ing", "ment", "al")


# Known verbs of three letters or more, longest first: the prefixes ``verb_kind`` tries.
_PREFIX_VERBS = tuple(
    sorted(
        (v for v in {*_OPERATION_WORDS, *ACTION_VERBS} if len(v) >= 3), key=lambda v: (-len(v), v)
    )
)


@lru_cache(maxsize=8192)
def verb_kind(word: str) -> str:
    """The operation kind a verb of the spec stands for: the kind of its synonym group
    (``get`` → read, ``patch`` → update), an action verb itself (``watch``), or the
    kind of the longest known verb it starts with (``deletecollection`` → delete,
    ``watchlist`` → watch); '' when it is no known verb. Cached: building the API index
    asks for the words of every operation, most of them many times."""
    w = word.strip().lower()
    if not w:
        return ""
    if w in _OPERATION_WORDS:
        return _OPERATION_WORDS[w][0]
    if w in ACTION_VERBS:
        return w
    for known in _PREFIX_VERBS:
        if w.startswith(known):
            return _OPERATION_WORDS[known][0] if known in _OPERATION_WORDS else known
    return ""


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


def opening_kinds(words: Sequence[str]) -> tuple[str, ...]:
    """Operation kinds the first of ``words`` stands for, or its first two as one verb
    ("set up" → create): the verb a request opens with, not every verb it holds."""
    pair = _OPERATION_PHRASES.get(tuple(w.lower() for w in words[:2]))  # type: ignore[arg-type]
    if pair:
        return (pair,)
    return operation_kinds(words[0]) if words else ()


# A question that opens with one of these asks about state, not for a change.
_QUESTION_WORDS = frozenset(
    {"what", "which", "who", "whom", "whose", "when", "where", "why", "whether", "how"}
    | {"is", "are", "am", "was", "were", "does", "did", "has", "have"}
)
# "how do I", "can we", "I want to", "please": frames before the verb of a request.
_FRAMES = frozenset(
    {"how", "do", "does", "can", "could", "should", "would", "will", "to", "please", "just"}
    | {"i", "we", "you", "me", "us", "let", "want", "wanna", "need", "like"}
)
# Verbs that read rather than change (besides the read and list synonyms).
_READ_VERBS = frozenset(
    {"search", "download", "compare", "count", "page", "look", "see", "view", "watch"}
    | {"export", "query", "check", "tell"}
)


def change_verb(tokens: Sequence[str]) -> str:
    """The verb of a request for a change, when the question is one: its first word after
    a frame ("how do I", "can we", "please") that an English lexicon knows as a verb in
    its base form and that does not read ("close an issue" → ``close``; "list the users",
    "which users…", "account history", "logs of my app" → ''; see
    ``lexicon.base_verb``). A question that opens with a
    question word asks about state ("is this podcast saved?"); "how" only frames a
    request when "do", "can", "to" or "should" follows."""
    words = [t.lower() for t in tokens]
    if not words:
        return ""
    if words[0] in _QUESTION_WORDS and not (
        words[0] == "how" and len(words) > 1 and words[1] in ("do", "can", "to", "should")
    ):
        return ""
    i = 0
    while i < len(words) and words[i] in _FRAMES:
        i += 1
    if i >= len(words):
        return ""
    lead = words[i]
    phrase = _OPERATION_PHRASES.get(tuple(words[i : i + 2]))  # type: ignore[arg-type]
    if phrase:  # "get rid of", "set up", "look up"
        return "" if phrase in ("read", "list") else lead
    if lead in _READ_VERBS or verb_kind(lead) in ("read", "list", "search"):
        return ""
    # a request opens with the base form: "details about an artist" asks to read
    return lead if base_verb(lead) else ""


def noun_forms(word: str) -> tuple[str, ...]:
    """Nouns a verb forms with a common suffix: ``evict`` → ``eviction``, ``evicting``…"""
    w = word.lower()
    if len(w) < 4:
        return ()
    stems = (w, w[:-1]) if w.endswith("e") else (w,)
    return tuple(s + suffix for s in stems for suffix in _NOUN_SUFFIXES)


#: Words before a noun that mark one item of a collection, or every item of it.
_ONE_ITEM = frozenset({"one", "single", "specific", "particular", "individual"})
_EVERY_ITEM = frozenset({"every"})  # "every" takes the singular: "show every quote"
# "the details of a workflow", "information about a quote": what one item holds
_DETAILS = frozenset({"details", "detail", "information", "info"})
_ABOUT = frozenset({"of", "about", "on", "for"})
_DETERMINERS = frozenset({"a", "an", "the", "this", "that", "my", "our", "your", "one"})


def _marked_heads(words: Sequence[str]) -> dict[int, str]:
    """Positions of the nouns a quantity word marks: the last word of the run of words
    after "one", "a single", "a specific"… up to the next stop word ("one returned
    order" → order: "one"), likewise after "every" ("many"), after "the details of" or
    "information about" and a determiner ("the details of a workflow" → workflow:
    "one"; a plural noun there still reads many), and the noun before "by id" / "by its
    id" ("fetch a batch by its id" → batch: "one")."""
    heads: dict[int, str] = {}
    for i, w in enumerate(words):
        mark = "one" if w in _ONE_ITEM else "many" if w in _EVERY_ITEM else ""
        if mark:
            end = _noun_run_end(words, _skip(words, i + 1, _ONE_ITEM))
            if end is not None:
                heads[end] = mark
        elif w == "by" and i > 0 and words[i - 1] not in STOP_WORDS:
            rest = [x for x in words[i + 1 : i + 3] if x not in ("its", "the", "their")]
            if rest[:1] == ["id"]:
                heads.setdefault(i - 1, "one")
        elif w in _DETAILS and i + 1 < len(words) and words[i + 1] in _ABOUT:
            end = _noun_run_end(words, _skip(words, i + 2, _DETERMINERS))
            if end is not None:
                heads.setdefault(end, "one")  # a plural noun still reads many
    return heads


def _skip(words: Sequence[str], start: int, skipped: frozenset[str]) -> int:
    """The position of the first word from ``start`` on that is not in ``skipped``."""
    while start < len(words) and words[start] in skipped:
        start += 1
    return start


def _noun_run_end(words: Sequence[str], start: int) -> int | None:
    """The position of the last word of the run of at most three words from ``start``
    up to a stop word (the noun of "returned order"), or None when there is none."""
    end = start
    while end < len(words) and words[end] not in STOP_WORDS and end - start < 3:
        end += 1
    return end - 1 if end > start else None


@dataclass(frozen=True, slots=True)
class QueryNouns:
    """The nouns of a question, to tell which resources it names.

    ``names``: every word and every run of two or three adjacent words run together,
    the last word singular (``config map`` → ``configmap``). ``plural``: those whose
    last word was plural in the question ("nodes", "phone numbers") or follows "every";
    ``one``: those a word such as "one" or "a specific" marks as one item.
    """

    names: frozenset[str]
    plural: frozenset[str]
    derived: frozenset[str] = frozenset()  # nouns formed from the question's verbs
    one: frozenset[str] = frozenset()  # names of one item: "one job", "a specific refund"

    @classmethod
    def of(cls, tokens: Sequence[str]) -> QueryNouns:
        words = [w for t in tokens for w in split_words(t)]
        heads = _marked_heads(words)
        names: set[str] = set()
        plural: set[str] = set()
        one: set[str] = set()
        for end in range(len(words)):
            last = singular(words[end])
            for start in range(max(0, end - 2), end + 1):
                name = "".join(words[start:end]) + last
                names.add(name)
                if last != words[end] or heads.get(end) == "many":
                    plural.add(name)
                elif heads.get(end) == "one":
                    one.add(name)
        derived = {n for w in words for n in noun_forms(w)} - names
        return cls(frozenset(names), frozenset(plural), frozenset(derived), frozenset(one))

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

    def names_one(self, resource: str) -> bool:
        """The question names ``resource`` as one item ("look up one returned order",
        "show a specific refund", "fetch a batch by its id")."""
        squashed = resource.replace("_", "")
        return any(len(n) > 2 and squashed.endswith(n) for n in self.one)

    def names_resource(self, resource: str) -> str:
        """ "plural", "singular" or "" as the question names ``resource`` (a resource key).

        A name counts when it is the resource's whole name or its end: "number" and
        "phone number" name ``incoming_phone_number``, "map" and "config map" ``configmap``.
        """
        return _names_resource(self, resource)


@lru_cache(maxsize=4096)
def _names_resource(nouns: QueryNouns, resource: str) -> str:
    """:meth:`QueryNouns.names_resource`, cached: every candidate of a question asks it
    of its resource and of each resource its path nests it under."""
    squashed = resource.replace("_", "")
    found = ""
    for name in nouns.names:
        if len(name) > 2 and squashed.endswith(name):
            if name in nouns.plural:
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
    on_parent: bool = False  # the asked verb's object is an enclosing resource
    many: bool = False  # it names the resource in the plural and asks for a list
    # it names the resource in the plural, or asks for "all" or "every" of something
    plural: bool = False
    one: bool = False  # it names the resource acted on as one item ("a specific refund")
    # it names the resource acted on only as where the object of its verb goes, comes
    # from or goes with ("add a message to a thread" and ``POST /threads``)
    off_object: bool = False


def operation_fit(
    tokens: Sequence[str], path: str, kind: str, collections: frozenset[str] = frozenset()
) -> OperationFit:
    """How well the operation ``kind`` on ``path`` answers a question of ``tokens``.

    ``kind``: a verb of the question stands for the operation's kind ("add" → create,
    "set up" → create), the question names the resource in the plural ("which
    nodes…") and the operation lists it, or a verb of the question forms the
    resource's name ("evict a pod" → ``…/pods/{name}/eviction``). ``resource``: the
    question names the resource acted on; ``on_parent``: it does not, and the object of
    its verb is a resource the path nests the operation under ("create a customer" and
    ``POST /customers/{customer}/subscriptions``); ``whole``: by its whole name ("job" names
    ``job`` whole and ``cron_job`` only by its end). ``unnamed_parents``: resources the
    path nests the operation under that the question does not name; of two otherwise
    equal answers, the less nested one is the likelier (``/Conversations/{sid}/Messages``
    over ``/Services/{sid}/Conversations/{sid}/Messages`` for "post a message into a
    conversation"). ``one``: the question names the resource acted on as one item
    ("one", "a single", "a specific", "a particular" before it, "by its id" after it, "the
    details of" or "information about" a singular noun), so the operation that lists it
    is not asked for ("every", which takes the singular, marks all of them).
    ``off_object``: it names the resource acted on only after "to", "into", "onto",
    "from" or "with", and not as the object of the verb ("add a message to a thread"
    and ``POST /threads``; ``ApiIndex.names_object`` checks that object is a resource).
    ``collections``: the spec's :func:`collection_segments`.
    """
    return _operation_fit(tuple(tokens), path, kind, collections)


@lru_cache(maxsize=16384)
def _operation_fit(
    tokens: tuple[str, ...], path: str, kind: str, collections: frozenset[str]
) -> OperationFit:
    """:func:`operation_fit`, cached: the engine asks for every candidate, twice in
    hybrid mode."""
    nouns = query_nouns(tokens)
    asked = set(_asked(tokens))
    resources = path_resources_of(path, collections)
    naming = nouns.naming(resources[-1]) if resources else ""
    plural = bool(naming) and nouns.names_resource(resources[-1]) == "plural"
    if plural and kind == "list" and not asked & {"create", "update", "delete"}:
        asked.add("list")  # "delete all pods" is no list
    parents = sum(1 for r in resources[:-1] if not nouns.names_resource(r))
    if naming == "verb":  # the verb names the action resource: asked for, by name
        return OperationFit(True, True, parents, True)
    obj = _verb_object(tokens)
    on_parent = (
        not naming and bool(obj) and any(query_nouns(obj).names_resource(r) for r in resources[:-1])
    )
    many = plural and "list" in asked
    if many:
        asked.discard("read")  # "show all my projects" reads many, not one
    one = bool(naming) and not plural and nouns.names_one(resources[-1])
    if one:
        asked.discard("list")  # "look up one returned order" reads one, not the list
    plural = plural or _asks_for_all(tokens)
    head = object_head(tokens)
    off_object = (
        bool(naming)
        and bool(head)
        and not query_nouns(head).names_resource(resources[-1])
        and bool(query_nouns(_linked(tokens)).names_resource(resources[-1]))
    )
    return OperationFit(
        kind in asked,
        bool(naming),
        parents,
        naming == "whole",
        on_parent,
        many,
        plural,
        one,
        off_object,
    )


def _object_start(words: Sequence[str]) -> int:
    """Where the object of a request's verb starts: after its first word that is no
    stop word, and the stop words that follow it."""
    start = next((i for i, w in enumerate(words) if w not in STOP_WORDS), len(words))
    return _skip(words, start + 1, STOP_WORDS)


@lru_cache(maxsize=256)
def _verb_object(tokens: tuple[str, ...]) -> tuple[str, ...]:
    """The object of a request's verb: the words after its first word that is no stop
    word, up to the next stop word ("create a customer" → customer; "add a member to a
    channel" → member)."""
    words = [t.lower() for t in tokens]
    start = _object_start(words)
    end = next((i for i in range(start, len(words)) if words[i] in STOP_WORDS), len(words))
    return tuple(words[start:end])


@lru_cache(maxsize=256)
def object_head(tokens: tuple[str, ...]) -> tuple[str, ...]:
    """The object of a request's verb as :func:`_verb_object` finds it, and of a
    possessive there the thing possessed ("cancel a customer's subscription" →
    subscription; "add a custom cover image to a playlist" → custom cover image)."""
    words = [t.lower() for t in tokens]
    i = _object_start(words)
    run: list[str] = []
    while i < len(words):
        if words[i] not in STOP_WORDS:
            run.append(words[i])
        elif words[i] == "s" and run and i + 1 < len(words) and words[i + 1] not in STOP_WORDS:
            run = []  # "customer's subscription": what is possessed
        else:
            break
        i += 1
    return tuple(run)


#: Words that name where the object of a verb goes, comes from or what it goes with.
LINK_WORDS = frozenset({"to", "into", "onto", "from", "with"})

# Words that make a verb phrasal or bring in a complement, not an object ("turn on do not
# disturb", "sign out of", "look up by")
_PARTICLES = frozenset(
    {"on", "off", "up", "down", "out", "in", "into", "onto", "over", "back", "away", "about",
     "to", "for", "with", "from", "by", "at", "of", "do", "not", "no"}
)  # fmt: skip


@lru_cache(maxsize=256)
def plain_object(tokens: tuple[str, ...]) -> bool:
    """Whether a request's verb has an object with only words such as "a", "the", "my"
    or "more" before it ("delete a workflow"; not "turn on do not disturb", whose
    "disturb" is no object of "turn")."""
    words = [t.lower() for t in tokens]
    verb = next((i for i, w in enumerate(words) if w not in STOP_WORDS), len(words))
    start = _object_start(words)
    return start < len(words) and not _PARTICLES.intersection(words[verb + 1 : start])


@lru_cache(maxsize=256)
def _linked(tokens: tuple[str, ...]) -> tuple[str, ...]:
    """The nouns after "to", "into", "onto", "from" and "with": where the object of
    the verb goes or comes from ("add a message to a thread" → thread), not what it is
    part of ("the base branch of a pull request")."""
    words = [t.lower() for t in tokens]
    out: list[str] = []
    for i, w in enumerate(words):
        if w in LINK_WORDS:
            j = i + 1
            while j < len(words) and words[j] in STOP_WORDS and words[j] not in LINK_WORDS:
                j += 1
            while j < len(words) and words[j] not in STOP_WORDS:
                out.append(words[j])
                j += 1
    return tuple(out)


@lru_cache(maxsize=64)
def query_nouns(tokens: tuple[str, ...]) -> QueryNouns:
    """:meth:`QueryNouns.of`, cached: one question is looked at once per candidate."""
    return QueryNouns.of(tokens)


@lru_cache(maxsize=64)
def _asked(tokens: tuple[str, ...]) -> frozenset[str]:
    return asked_kinds(tokens)


@lru_cache(maxsize=64)
def _asks_for_all(tokens: tuple[str, ...]) -> bool:
    """Whether a question says "all" or "every" (cached: one question is looked at once
    per candidate)."""
    return any(t.lower() in _QUANTIFIERS for t in tokens)


@lru_cache(maxsize=8192)
def path_resources_of(path: str, collections: frozenset[str] = frozenset()) -> tuple[str, ...]:
    """:func:`path_resources` as a tuple, cached (the engine asks for every candidate)."""
    return tuple(path_resources(path, collections))


__all__ = [
    "ACTION_VERBS",
    "CRUD_KINDS",
    "HTTP_METHODS",
    "LINK_WORDS",
    "PREFIX_WORDS",
    "OperationFit",
    "QueryNouns",
    "asked_kinds",
    "collection_segments",
    "first_word",
    "is_action",
    "is_param",
    "is_plural",
    "is_version",
    "noun_forms",
    "object_head",
    "opening_kinds",
    "operation_fit",
    "operation_in_id",
    "operation_kind",
    "operation_kinds",
    "path_resources",
    "path_resources_of",
    "path_segments",
    "plain_object",
    "query_nouns",
    "resource_key",
    "singular",
    "split_words",
]
