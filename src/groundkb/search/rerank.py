"""An optional second opinion on the order of the hits, from a chat model the user
configures.

Off by default. With ``rerank_url`` and ``rerank_model`` set (any OpenAI-compatible
``/chat/completions`` endpoint; the key in the environment variable named by
``rerank_key_env``), a search shows the model the question and its first
``rerank_candidates`` distinct documents, numbered: title, where it belongs (category,
source), ``METHOD path`` for an API operation, and the opening of the matched passage
(``rerank_chars`` characters). The model replies with the numbers of the ones that answer
the question, best first, or ``0`` when none does.

- **What changes is the order.** The documents the model names come first, in its order;
  the others keep theirs after them. The rank scores the candidates had, sorted, are
  given to the new order, so scores still follow rank order and the verdict's signals
  are measured on the order the agent sees.
- **The model can take an answer away, never give one.** The verdict's thresholds were
  calibrated without a model; when the model names none of the candidates, a verdict
  that would have answered from the ranking's evidence (strong or semantic match) asks
  instead (clarify, weak). Command look-ups and the parts of a multi-topic question do
  not ask the model.
- **A failure costs nothing but the model's opinion.** An unreachable endpoint, a
  timeout, an HTTP error or a reply without a usable number leaves the search's own
  order, and the result's ``notice`` says so; the search itself never fails for it.
  After a failure the model is left alone for :data:`RETRY_AFTER_S` seconds, so a model
  that is down does not add its timeout to every search.
- **What leaves the machine**: the question and those candidates' titles and openings,
  for documents the caller may read (filters apply before). Nothing is sent while
  ``rerank_url`` is empty.

Replies are cached per question and candidate list (the last 256), one cache and one
HTTP client per endpoint in a process.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..chatmodel import ModelEndpoint, chat, reply_text
from ..errors import ConfigError
from ..ops.querylog import error_text
from .rescore import Ranked

if TYPE_CHECKING:
    from ..settings import Settings
    from .apis import ApiIndex

log = logging.getLogger(__name__)

SYSTEM = (
    "You judge search results for a question about a product's documentation or API."
    " Reply with the numbers of the results that answer the question, best first,"
    " separated by commas (for example: 3, 1). Reply 0 if none of them answers it."
    " Reply with numbers only."
)
CACHE_SIZE = 256
RETRY_AFTER_S = 30.0  # after a failure the model is not asked again for this long
_NUMBER = re.compile(r"\d+")
_NONE = re.compile(r"^\W*(?:0|none(?:\s+of\s+them)?)\W*$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Candidate:
    """One document as the model sees it."""

    doc_id: str
    title: str
    where: str = ""  # category and source
    endpoint: str = ""  # "METHOD path" of an API operation
    text: str = ""  # the opening of the matched passage


class RerankError(Exception):
    """The model could not be asked, or its reply named nothing usable; ``resting``:
    it was not asked, a recent failure is still fresh (nothing new to log)."""

    def __init__(self, message: str, resting: bool = False) -> None:
        super().__init__(message)
        self.resting = resting


@dataclass(frozen=True, slots=True)
class RerankEndpoint:
    """The model to ask, how many documents to show it and how much of each."""

    model: ModelEndpoint
    candidates: int = 10
    chars: int = 300

    def __post_init__(self) -> None:
        self.model.check("rerank_url")
        if not self.model.model.strip():
            raise ConfigError("rerank_url is set but rerank_model is empty: name the model")
        if not 2 <= self.candidates <= 50:
            raise ConfigError("rerank_candidates must be between 2 and 50")
        if not self.model.timeout_s > 0:
            raise ConfigError("rerank_timeout_s must be more than 0")
        if not 40 <= self.chars <= 4000:
            raise ConfigError("rerank_chars must be between 40 and 4000")


def endpoint_from_settings(settings: Settings) -> RerankEndpoint | None:
    """The configured endpoint, or None when reranking is off (``rerank_url`` empty)."""
    url = settings.rerank_url.strip()
    if not url:
        return None
    model = ModelEndpoint(
        url, settings.rerank_model.strip(), settings.rerank_key_env, settings.rerank_timeout_s
    )
    return RerankEndpoint(model, settings.rerank_candidates, settings.rerank_chars)


def prompt(question: str, candidates: Sequence[Candidate]) -> str:
    """The user message: the question and the numbered candidates."""
    parts = [f"Question: {question}", "", "Results:"]
    for i, c in enumerate(candidates, 1):
        head = f"[{i}] {c.title}"
        if c.endpoint and c.endpoint not in c.title:
            head += f" — {c.endpoint}"
        if c.where:
            head += f" ({c.where})"
        parts += ["", head]
        if c.text:
            parts.append(c.text)
    return "\n".join(parts)


def parse_reply(reply: str, n: int) -> list[int]:
    """The 0-based candidates a reply names, best first; ``[]`` when it says none
    answers. :class:`RerankError` when it names no candidate and does not say none."""
    text = reply.strip()
    if _NONE.match(text):
        return []
    named = [int(x) for x in _NUMBER.findall(text)]
    picked = list(dict.fromkeys(i - 1 for i in named if 1 <= i <= n))
    if not picked:
        if named and all(i == 0 for i in named):
            return []
        raise RerankError(f"the model's reply names no result: {text[:80]!r}")
    return picked


def reorder(ranked: Sequence[Ranked], chosen: Sequence[str]) -> list[Ranked]:
    """``ranked`` with the chunks of the documents in ``chosen`` first, in that order
    (each document's chunks in their order), the rest after in theirs; the rank scores,
    sorted, given to the new order."""
    if not chosen:
        return list(ranked)
    place = {doc_id: i for i, doc_id in enumerate(chosen)}
    first = sorted(
        (r for r in ranked if r[1].doc_id in place),
        key=lambda r: place[r[1].doc_id],  # stable: a document's chunks keep their order
    )
    rest = [r for r in ranked if r[1].doc_id not in place]
    scores = sorted((r[0] for r in ranked), reverse=True)
    return [(s, *r[1:]) for s, r in zip(scores, [*first, *rest], strict=True)]


class Reranker:
    """Asks the configured model which candidates answer (see the module docstring)."""

    def __init__(self, endpoint: RerankEndpoint) -> None:
        self.endpoint = endpoint
        self._client: Any = None
        self._lock = threading.Lock()
        self._cache: OrderedDict[tuple[str, tuple[str, ...]], tuple[int, ...]] = OrderedDict()
        self._failed_at = 0.0  # time.monotonic() of the last failure, 0: none
        self._failure = ""

    @property
    def size(self) -> int:
        """How many distinct documents the model is shown."""
        return self.endpoint.candidates

    def _http(self) -> Any:
        with self._lock:
            if self._client is None:
                import httpx2

                self._client = httpx2.Client(follow_redirects=False)
            return self._client

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def choose(self, question: str, candidates: Sequence[Candidate]) -> list[int]:
        """The 0-based candidates that answer, best first (``[]``: none does).
        :class:`RerankError` on any failure."""
        key = (question, tuple(c.doc_id for c in candidates))
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None:
                self._cache.move_to_end(key)
                return list(cached)
            if self._failed_at and time.monotonic() - self._failed_at < RETRY_AFTER_S:
                raise RerankError(
                    f"{self._failure}; not asked again for {RETRY_AFTER_S:.0f} s", resting=True
                )
        try:
            data = chat(self.endpoint.model, SYSTEM, prompt(question, candidates), self._http())
            picked = parse_reply(reply_text(data), len(candidates))
        except Exception as exc:  # any failure of the call is the model's, not the search's
            why = str(exc) if isinstance(exc, RerankError) else error_text(exc)
            with self._lock:
                self._failed_at, self._failure = time.monotonic(), why
            raise RerankError(why) from exc
        with self._lock:
            self._failed_at = 0.0
            self._cache[key] = tuple(picked)
            while len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
        return picked


_shared: dict[RerankEndpoint, Reranker] = {}
_shared_lock = threading.Lock()


def rerank_ranked(
    reranker: Reranker, text: str, ranked: Sequence[Ranked], apis: ApiIndex
) -> tuple[list[Ranked], bool, str]:
    """``ranked`` in the order the model gives its first distinct documents; whether it
    said none of them answers; why it was not asked (a failure keeps the order)."""
    shown: list[Candidate] = []
    seen: set[str] = set()
    for r in ranked:
        m = r[1]
        if m.doc_id in seen:
            continue
        seen.add(m.doc_id)
        method, path, _ = apis.endpoint(m.doc_id)
        shown.append(
            Candidate(
                m.doc_id,
                m.doc.title,
                ", ".join(x for x in (m.doc.category, m.doc.source) if x),
                f"{method} {path}" if path else "",
                " ".join(m.text.split())[: reranker.endpoint.chars],
            )
        )
        if len(shown) >= reranker.size:
            break
    try:
        picked = reranker.choose(text, shown)
    except RerankError as exc:
        if not exc.resting:
            log.warning("reranking failed, the search keeps its own order: %s", exc)
        return list(ranked), False, f"rerank failed ({exc}); the search's own order"
    return reorder(ranked, [shown[i].doc_id for i in picked]), not picked, ""


def reranker_for(endpoint: RerankEndpoint) -> Reranker:
    """One reranker (one HTTP client, one reply cache) per endpoint in a process: the
    knowledge base and every caller's view of it share it."""
    with _shared_lock:
        reranker = _shared.get(endpoint)
        if reranker is None:
            reranker = _shared[endpoint] = Reranker(endpoint)
        return reranker


__all__ = [
    "Candidate",
    "RerankEndpoint",
    "RerankError",
    "Reranker",
    "endpoint_from_settings",
    "parse_reply",
    "prompt",
    "reorder",
    "rerank_ranked",
    "reranker_for",
]
