"""MCP tool results within a token budget, sent compactly.

MCP hosts cap what one tool result may put into the model's context (one common cap is
25,000 tokens); results over it are rejected or cut without notice. ``search_knowledge``
and ``get_document`` therefore take ``max_tokens`` (default: the ``tool_max_tokens``
setting) and never exceed it, measured in cl100k_base tokens on the JSON text that is
sent (with ``mcp_structured_output`` the structured content is the same JSON):

- a search drops its lowest-scored hits until it fits and says how many it dropped;
- a document cuts its ``content`` on a token boundary and returns ``next_offset`` to
  read on from (``offset`` is a character offset into the content);
- when even the smallest form does not fit, the call fails with ``invalid_input``
  naming the tokens it needs, rather than send more than asked.

Without the ``prompts`` extra (no tokenizer) the size in UTF-8 bytes stands in for the
token count: a byte-pair token is at least one byte, so the budget still holds, only
more conservatively. The same bound spares the tokenizer altogether when the text has no
more bytes than the budget has tokens, which is the usual case.

The text is compact JSON (no indentation): the SDK's default indented dump cost 30–40 %
more tokens for the same data (see docs/prompts.md).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import fields
from typing import Any

from ..analyze.text import below_title
from ..errors import InvalidInput
from ..models import Option
from . import tokens


def count_tokens(text: str) -> int:
    """cl100k_base tokens, or UTF-8 bytes (an upper bound) without the tokenizer."""
    return tokens.count_tokens(text) if tokens.available() else len(text.encode("utf-8"))


def head(text: str, max_tokens: int) -> str:
    if tokens.available():
        return tokens.head(text, max_tokens)
    return text.encode("utf-8")[: max(max_tokens, 0)].decode("utf-8", "ignore")


def compact_json(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def json_tokens(data: Any) -> int:
    return count_tokens(compact_json(data))


def fits(data: Any, max_tokens: int) -> bool:
    """Whether ``data`` as compact JSON takes at most ``max_tokens`` tokens; counted only
    when its UTF-8 bytes (an upper bound on its tokens) exceed the budget."""
    text = compact_json(data)
    return len(text.encode("utf-8")) <= max_tokens or count_tokens(text) <= max_tokens


#: Per-hit fields that explain the ranking or identify a version rather than answer
#: (the snippet already shows the words that matched): sent with ``explain``.
EXPLAIN_FIELDS = ("explanation", "ranks", "retriever", "content_hash", "matched_terms")
#: Optional per-hit fields that carry nothing when empty.
_EMPTY_OMITTED = ("category", "command", "summary", "method", "path", "resource")
#: A document's own fields, which a later hit of the same document leaves out when they
#: are what the document's first hit says.
_DOCUMENT_FIELDS = ("title", "type", "source", "category", "citation", "summary")
#: Document fields that, when every hit has the same, the result says once
#: (``every_hit``) instead of in each hit.
_SHARED_FIELDS = ("source", "type")
#: Result fields left out at their default (empty or zero) value.
_DEFAULT_OMITTED = {
    "suggestions": [],
    "corrected_query": "",
    "asked_of": [],
    "multi_intent": False,
    "fallback": "",
    "notice": "",
    "dropped_hits": 0,
}


def compact_search(
    data: Mapping[str, Any], explain: bool = False, asked: str | None = None
) -> dict[str, Any]:
    """A search result without what repeats or explains (unless ``explain``): the
    ranking's explanation, matched terms, per-retriever ranks, retriever, content hash
    and query terms; the query when it is ``asked``, what the caller sent (a query cut
    to its searched length or with a credential left out stays, to show what ran);
    empty optional fields and result fields at their default; an API operation's summary
    that is just its method, path and title; a header path that is just
    the title, and the title at the head of a header path (the hit or its document's
    first hit names it); a resource URI that is just ``kb://docs/`` and the id; a chunk id that is
    the id and ``#0``; in a later hit of a document, its title, type, source, category,
    citation and summary where the document's first hit says the same; a source or type
    that every hit has, said once as ``every_hit``; option labels that say no more than
    the option's title (or command), source and category; and suggestions that are just
    the titles of the verdict's options."""
    hits = []
    first: dict[Any, Mapping[str, Any]] = {}  # doc id -> its first hit
    for hit in data.get("hits", ()):
        h = {k: v for k, v in hit.items() if explain or k not in EXPLAIN_FIELDS}
        for key in _EMPTY_OMITTED:
            if h.get(key) == "":
                del h[key]
        if h.get("deprecated") is False:
            del h["deprecated"]
        if not explain and _says_nothing(str(h.get("summary", "")), hit):
            h.pop("summary", None)
        path = str(h.get("header_path", ""))
        title = str(hit.get("title", ""))
        if path in ("", title):
            h.pop("header_path", None)
        elif not explain and title:
            h["header_path"] = below_title(path, title)  # the title is said beside it
        uri = str(h.get("resource_uri", ""))
        if not explain and (not uri or uri.endswith("/" + str(h.get("doc_id")))):
            h.pop("resource_uri", None)  # kb://docs/ and the id as it is: nothing encoded
        if not explain and h.get("chunk_id") == f"{h.get('doc_id')}#0":
            del h["chunk_id"]  # the document's first passage: the id says it
        if not explain:
            earlier = first.setdefault(h.get("doc_id"), hit)
            if earlier is not hit:  # a later passage of a document already shown
                for key in _DOCUMENT_FIELDS:
                    if key in h and h[key] == earlier.get(key):
                        del h[key]
        hits.append(h)
    sent = None if explain or asked is None else asked.strip()
    out = {
        k: v
        for k, v in data.items()
        if not (k in _DEFAULT_OMITTED and v == _DEFAULT_OMITTED[k])
        and (explain or k != "terms")
        and not (k == "query" and v == sent)
    }
    shared = {} if explain else _shared(data.get("hits", ()))
    if shared:
        hits = [{k: v for k, v in h.items() if k not in shared} for h in hits]
        out = {k: v for k, v in out.items() if k != "hits"} | {"every_hit": shared}
    out["hits"] = hits
    verdict = data.get("verdict")
    if isinstance(verdict, Mapping):
        v = {k: x for k, x in verdict.items() if not (k == "options" and not x)}
        if verdict.get("options"):
            v["options"] = [
                {
                    k: x
                    for k, x in o.items()
                    if x != "" and x is not False and not (k == "label" and x == _label(o))
                }
                for o in verdict["options"]
            ]
        out["verdict"] = v
        titles = list(dict.fromkeys(str(o.get("title", "")) for o in verdict.get("options") or ()))
        if not explain and titles and out.get("suggestions") == titles:
            del out["suggestions"]  # a clarification's options, already named in the verdict
    return out


def _says_nothing(summary: str, hit: Mapping[str, Any]) -> bool:
    """Whether an API operation's summary is only its method and path, or those and its
    title, which the hit carries as fields of their own."""
    endpoint = f"{hit.get('method', '')} {hit.get('path', '')}"
    if not summary or not hit.get("method") or not summary.startswith(endpoint):
        return False
    rest = summary[len(endpoint) :].strip().removeprefix("—").strip().rstrip(".")
    return rest in ("", str(hit.get("title", "")).rstrip("."))


def _label(option: Mapping[str, Any]) -> str:
    """The label an option's own fields make (``Option.label``): a label that says no
    more is left out."""
    given = {f.name: option[f.name] for f in fields(Option) if f.name in option}
    return Option(**{"doc_id": "", "title": ""} | given).label


def _shared(hits: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The ``_SHARED_FIELDS`` whose value is the same in every one of two or more hits."""
    if len(hits) < 2:
        return {}
    out = {}
    for key in _SHARED_FIELDS:
        values = {str(h.get(key, "")) for h in hits}
        if len(values) == 1 and "" not in values:
            out[key] = hits[0][key]
    return out


def _too_small(max_tokens: int, data: Any) -> InvalidInput:
    return InvalidInput(
        f"max_tokens {max_tokens} is too small for this result (it needs at least "
        f"{json_tokens(data)} tokens)"
    )


def fit_search(data: Mapping[str, Any], max_tokens: int) -> dict[str, Any]:
    """A search result (JSON data with ``hits``) with its lowest-scored hits dropped
    until it fits ``max_tokens``; ``dropped_hits`` says how many went (left out when
    none did)."""
    out = dict(data)
    out.pop("dropped_hits", None)
    hits = list(out["hits"])
    while hits and not fits(out, max_tokens):
        worst = min(range(len(hits)), key=lambda i: (hits[i].get("score", 0.0), -i))
        gone = hits.pop(worst)
        out = {**out, "hits": hits, "dropped_hits": out.get("dropped_hits", 0) + 1}
        if all(h.get("doc_id") != gone.get("doc_id") for h in hits[:worst]):
            _hand_down(out, gone)  # it was its document's first hit
    if not fits(out, max_tokens):
        raise _too_small(max_tokens, out)
    return out


def _hand_down(out: dict[str, Any], gone: Mapping[str, Any]) -> None:
    """After ``gone``, the first hit of its document, left a compacted result, the
    document fields it carried (title, type, ...) move to the document's next hit, which
    left out those it shared: no hit is left naming its document by the id alone."""
    hits = out["hits"]
    for i, h in enumerate(hits):
        if h.get("doc_id") == gone.get("doc_id"):
            said = {k: gone[k] for k in _DOCUMENT_FIELDS if k in gone and k not in h}
            hits[i] = {**h, **said}
            return  # the document's next hit is now its first


def fit_document(data: Mapping[str, Any], max_tokens: int, offset: int = 0) -> dict[str, Any]:
    """A document (JSON data with ``content``) from character ``offset`` on, its content
    cut to fit ``max_tokens``; ``truncated`` and ``next_offset`` say where to go on."""
    content = str(data.get("content", ""))
    if offset < 0 or (offset and offset >= len(content)):
        raise InvalidInput(f"offset {offset} is outside the content ({len(content)} characters)")
    rest = content[offset:]
    out = {**data, "content": rest, "offset": offset, "truncated": False, "next_offset": None}
    if fits(out, max_tokens):
        return out
    empty = {**out, "content": "", "truncated": True, "next_offset": offset}
    room = max_tokens - json_tokens(empty)
    if room <= 0:
        raise _too_small(max_tokens, empty)
    lo, hi, best = 1, count_tokens(rest), ""
    while lo <= hi:  # JSON escaping makes the cost of text non-additive: search
        mid = (lo + hi) // 2
        cut = head(rest, mid)
        trial = {**empty, "content": cut, "next_offset": offset + len(cut)}
        if cut and json_tokens(trial) <= max_tokens:
            best, lo = cut, mid + 1
        else:
            hi = mid - 1
    if not best:
        raise _too_small(max_tokens, {**empty, "content": head(rest, 1)})
    return {**empty, "content": best, "next_offset": offset + len(best)}
