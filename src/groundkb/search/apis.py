"""What the search engine knows about the API operations of an index, beyond their text.

Built from the document summaries whenever the index changes:

- **Operations by resource name.** A question that names a resource ("make a new
  namespace") must see the operations on it even when the name is too common for
  keyword search to rank them among its candidates: in the Kubernetes spec nearly every
  operation mentions "namespace". :meth:`ApiIndex.named_by` returns the operations
  whose own resource the question names (its whole name, its last words, or a noun
  formed from one of its verbs), for the engine to score beside the keyword candidates.
- **How an operation fits the question.** :func:`operation_factor` turns
  ``apinames.operation_fit`` (the kind asked for, the resource named, enclosing
  resources not named) and supersession into the factor the engine multiplies an API
  operation's rank by.
- **Superseded versions.** An index often holds several versions of one API
  (``twilio_studio_v1`` and ``twilio_studio_v2``; ``/apis/autoscaling/v1`` and
  ``/apis/autoscaling/v2``), with the same operations in each. A question that does not
  name a version is best answered by the newest one; :attr:`ApiIndex.superseded` holds
  the operations a newer version of their API also has.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..apinames import (
    is_param,
    is_version,
    operation_fit,
    path_resources,
    path_segments,
    query_nouns,
)
from ..models import Filters
from ..store.base import DocSummary

PARENT_FACTOR = 0.85  # per enclosing resource the query does not name
RESOURCE_FACTOR = 1.25  # the query names the resource acted on
SUPERSEDED_FACTOR = 0.98  # a newer version of the same operation exists: a tie-breaker

# "v2", "v2beta1", "v1alpha3", "2010-04-01": stable above beta above alpha.
_VERSION_PARTS = re.compile(r"^v?(\d+)(?:(alpha|beta|preview)(\d*))?$", re.I)
_STAGE = {"alpha": 0, "preview": 0, "beta": 1, "": 2}
_SPEC_VERSION = re.compile(r"[_-](v\d+(?:(?:alpha|beta|preview)\d*)?)$", re.I)

Version = tuple[tuple[int, ...], ...]


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
    versions: list[tuple[int, ...]] = []
    m = _SPEC_VERSION.search(spec)
    if m:
        spec = spec[: m.start()]
        versions.append(version_rank(m.group(1)))
    segments = []
    for seg in path_segments(path):
        if is_version(seg):
            versions.append(version_rank(seg))
            segments.append("{v}")
        else:
            segments.append("{}" if is_param(seg) else seg.lower())
    return f"{spec} {method.upper()} /{'/'.join(segments)}", tuple(versions)


def _name_suffixes(resource: str) -> list[str]:
    """``incoming_phone_number`` → ``number``, ``phonenumber``, ``incomingphonenumber``."""
    words = resource.split("_")
    return ["".join(words[i:]) for i in range(len(words) - 1, -1, -1)]


@dataclass
class ApiIndex:
    """Operations by the names of their resources, and the superseded versions."""

    by_name: dict[str, list[tuple[str, bool]]] = field(default_factory=dict)  # → (id, whole)
    superseded: frozenset[str] = frozenset()
    summaries: dict[str, DocSummary] = field(default_factory=dict)
    # doc id → its operation with versions taken out: one meaning across API versions
    families: dict[str, str] = field(default_factory=dict)

    @classmethod
    def build(cls, docs: Iterable[DocSummary]) -> ApiIndex:
        index = cls()
        families: dict[str, list[tuple[Version, str]]] = {}
        for d in docs:
            if d.type != "api" or not d.operation_kind:
                continue
            spec, _, endpoint = d.id.partition(":")
            method, _, path = endpoint.partition(" ")
            if not path:
                continue
            index.summaries[d.id] = d
            resources = path_resources(path)
            if resources:
                names = _name_suffixes(resources[-1])
                for name in names:
                    index.by_name.setdefault(name, []).append((d.id, name == names[-1]))
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
        return index

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
        for name in sorted(nouns.names | nouns.derived, key=len, reverse=True):
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


def operation_factor(
    tokens: Sequence[str], doc: DocSummary, superseded: bool, kind_boost: float
) -> float:
    """Rank factor of the API operation ``doc`` for a question of ``tokens``.

    × (1 + kind_boost) when the question asks for its kind ("create a room": the
    operation that creates, not one that lists), × RESOURCE_FACTOR when it names the
    resource acted on, × PARENT_FACTOR per enclosing resource it does not name, and
    × SUPERSEDED_FACTOR when a newer version of its API has the same operation.
    """
    path = doc.id.partition(" ")[2]  # api document ids are "{spec}:{METHOD} {path}"
    fit = operation_fit(tokens, path, doc.operation_kind)
    factor = PARENT_FACTOR**fit.unnamed_parents
    if fit.kind:
        factor *= 1 + kind_boost
    if fit.resource:
        factor *= RESOURCE_FACTOR
    if superseded:
        factor *= SUPERSEDED_FACTOR
    return factor
