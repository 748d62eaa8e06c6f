"""The context builder: each part of the prompt's knowledge within its own token budget.

Parts and their default budgets (settings ``prompt_budget_*``)::

    glossary    core concepts, term: definition              300
    knowledge   retrieved passages + entities/relationships  1500
    axioms      domain rules                                  300
    state       caller-supplied UI / application state        300
    messages    recent conversation turns                     500

A request may give one total (every part scaled in proportion to its default) or a
budget per part. A part over its budget first **drops** whole items, the least valuable
first: the lowest-scored retrieved passage (with the entities only it brought in), the
least relevant axiom or glossary term, the oldest message, the last state key; when a
single item is left and still too large it is **trimmed** (cut on a token boundary,
ending in ``…[truncated]``), and if even that cannot fit it is dropped too. Every part
reports its budget, the tokens it uses (cl100k_base, exact for the text that goes into
the prompt), and the ids it included, dropped and trimmed, so an answer can be audited.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidInput
from .formats import ContextFormat, Escaper, dump, format_block
from .knowledge import Axiom, Entity, Knowledge, Passage, Relationship, Term
from .tokens import count_tokens, truncate

PARTS: tuple[str, ...] = ("glossary", "knowledge", "axioms", "state", "messages")
ROLES: tuple[str, ...] = ("user", "assistant", "system", "tool")


@dataclass(frozen=True, slots=True)
class PartReport:
    name: str
    budget: int
    tokens: int
    included: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()
    trimmed: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Context:
    """The formatted blocks a template renders, and what went into them."""

    knowledge: str = ""
    evidence: str = ""
    axioms: str = ""
    glossary: str = ""
    state: str = ""
    messages: str = ""
    passages: tuple[Passage, ...] = ()
    entities: tuple[Entity, ...] = ()
    relationships: tuple[Relationship, ...] = ()
    axiom_items: tuple[Axiom, ...] = ()
    terms: tuple[Term, ...] = ()
    parts: tuple[PartReport, ...] = ()

    def part(self, name: str) -> PartReport:
        return next(p for p in self.parts if p.name == name)


@dataclass(frozen=True, slots=True)
class _Item:
    id: str
    score: float
    text: str  # the trimmable text
    payload: Any = None
    cut: bool = False


def resolve_budgets(
    defaults: Mapping[str, int], budget: int | Mapping[str, int] | None
) -> dict[str, int]:
    """Per-part budgets from the defaults and a total or per-part request."""
    out = dict(defaults)
    if budget is None:
        return out
    if isinstance(budget, int):
        if budget < 0:
            raise InvalidInput("budget must be at least 0")
        total = sum(defaults.values()) or 1
        return {k: budget * v // total for k, v in defaults.items()}
    for name, value in budget.items():
        if name not in defaults:
            raise InvalidInput(f"unknown budget part {name!r}; parts: {', '.join(defaults)}")
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise InvalidInput(f"budget for {name} must be a whole number ≥ 0")
        out[name] = value
    return out


def parse_budget(text: str) -> int | dict[str, int]:
    """``"3000"`` (a total) or ``"knowledge=2000,messages=300"`` (per part)."""
    text = text.strip()
    try:
        if "=" not in text:
            return int(text)
        out: dict[str, int] = {}
        for pair in text.split(","):
            name, _, value = pair.partition("=")
            out[name.strip()] = int(value)
        return out
    except ValueError:
        raise InvalidInput(
            f"budget {text!r}: give a number of tokens or part=tokens pairs ({', '.join(PARTS)})"
        ) from None


Render = Callable[[Sequence[_Item]], tuple[str, ...]]


def _tokens(blocks: Sequence[str]) -> int:
    return sum(count_tokens(b) for b in blocks)


def fit(
    items: Sequence[_Item], render: Render, budget: int
) -> tuple[list[_Item], list[str], list[str]]:
    """Keep items within ``budget``: drop the lowest-scored, then trim the last one."""
    kept = list(items)
    dropped: list[str] = []
    while kept and _tokens(render(kept)) > budget and len(kept) > 1:
        victim = min(reversed(kept), key=lambda i: i.score)  # ties: the later one goes
        kept.remove(victim)
        dropped.append(victim.id)
    if not kept or _tokens(render(kept)) <= budget:
        return kept, dropped, []
    item = kept[0]
    lo, hi, best = 1, count_tokens(item.text), None
    while lo <= hi:  # the longest cut of its text that fits
        mid = (lo + hi) // 2
        cut = truncate(item.text, mid)
        trial = dataclasses.replace(item, text=cut, cut=True)
        if cut and _tokens(render([trial])) <= budget:
            best, lo = trial, mid + 1
        else:
            hi = mid - 1
    if best is None:
        return [], [*dropped, item.id], []
    return [best], dropped, [item.id]


class ContextBuilder:
    """Formats a :class:`Knowledge` and caller context into budgeted blocks."""

    def __init__(self, fmt: ContextFormat, escaper: Escaper, budgets: Mapping[str, int]) -> None:
        self.fmt = fmt
        self.esc = escaper
        self.budgets = dict(budgets)

    def build(
        self,
        knowledge: Knowledge,
        state: Mapping[str, Any] | str | None = None,
        messages: Sequence[Mapping[str, Any]] = (),
    ) -> Context:
        k_blocks, passages, entities, rels, k_report = self._knowledge(knowledge)
        axioms_text, axioms, a_report = self._simple(
            "axioms",
            [_Item(a.id, -i, a.rule, a) for i, a in enumerate(knowledge.axioms)],
            lambda it: it.payload.item(it.text),
        )
        glossary_text, terms, g_report = self._simple(
            "glossary",
            [_Item(t.id, -i, t.definition, t) for i, t in enumerate(knowledge.glossary)],
            lambda it: it.payload.item(it.text),
        )
        state_text, s_report = self._state(state)
        messages_text, m_report = self._messages(messages)
        return Context(
            knowledge=k_blocks[0],
            evidence=k_blocks[1],
            axioms=axioms_text,
            glossary=glossary_text,
            state=state_text,
            messages=messages_text,
            passages=passages,
            entities=entities,
            relationships=rels,
            axiom_items=axioms,
            terms=terms,
            parts=(g_report, k_report, a_report, s_report, m_report),
        )

    # ------------------------------------------------------------ knowledge
    def _knowledge(
        self, k: Knowledge
    ) -> tuple[
        tuple[str, ...],
        tuple[Passage, ...],
        tuple[Entity, ...],
        tuple[Relationship, ...],
        PartReport,
    ]:
        items = [_Item(p.id, p.score, p.text, p) for p in k.passages]

        def select(kept: Sequence[_Item]) -> tuple[list[Entity], list[Relationship]]:
            docs = {i.payload.doc_id for i in kept}
            ents = [e for e in k.entities if docs & set(e.origins)]
            ids = {e.id for e in ents}
            rels = [r for r in k.relationships if r.source in ids and r.target in ids]
            return ents, rels

        def render(kept: Sequence[_Item]) -> tuple[str, ...]:
            ents, rels = select(kept)
            graph: dict[str, Any] = {}
            if ents:
                graph["entities"] = [e.item() for e in ents]
            if rels:
                graph["relationships"] = [r.item() for r in rels]
            evidence = [i.payload.item(i.text) for i in kept]
            return (
                format_block("knowledge", self.esc.data(graph), self.fmt),
                format_block("evidence", self.esc.data(evidence), self.fmt),
            )

        budget = self.budgets["knowledge"]
        kept, dropped, trimmed = fit(items, render, budget)
        blocks = render(kept)
        ents, rels = select(kept)
        kept_ids = {e.id for e in ents}
        lost = [e.id for e in k.entities if e.id not in kept_ids]
        passages = tuple(
            dataclasses.replace(i.payload, text=i.text) if i.cut else i.payload for i in kept
        )
        report = PartReport(
            "knowledge",
            budget,
            _tokens(blocks),
            tuple(i.id for i in kept) + tuple(e.id for e in ents),
            tuple(dropped) + tuple(lost),
            tuple(trimmed),
        )
        return blocks, passages, tuple(ents), tuple(rels), report

    # --------------------------------------------------- axioms and glossary
    def _simple(
        self, name: str, items: list[_Item], to_item: Callable[[_Item], dict[str, Any]]
    ) -> tuple[str, tuple[Any, ...], PartReport]:
        def render(kept: Sequence[_Item]) -> tuple[str, ...]:
            return (format_block(name, self.esc.data([to_item(i) for i in kept]), self.fmt),)

        budget = self.budgets[name]
        kept, dropped, trimmed = fit(items, render, budget)
        text = render(kept)[0]
        payloads = tuple(
            dataclasses.replace(i.payload, **{_FIELD[name]: i.text}) if i.cut else i.payload
            for i in kept
        )
        report = PartReport(
            name,
            budget,
            count_tokens(text),
            tuple(i.id for i in kept),
            tuple(dropped),
            tuple(trimmed),
        )
        return text, payloads, report

    # ------------------------------------------------------ state, messages
    def _state(self, state: Mapping[str, Any] | str | None) -> tuple[str, PartReport]:
        budget = self.budgets["state"]
        if state is None or state == "" or state == {}:
            return "", PartReport("state", budget, 0)
        if isinstance(state, str):
            items = [_Item("state", 0.0, state)]
        elif isinstance(state, Mapping):
            items = [
                _Item(f"state.{k}", -i, v if isinstance(v, str) else dump(v, "json"), v)
                for i, (k, v) in enumerate(state.items())
            ]
        else:
            raise InvalidInput("state must be text or an object")
        fmt: ContextFormat = "json" if self.fmt == "json" else "yaml"

        def render(kept: Sequence[_Item]) -> tuple[str, ...]:
            if isinstance(state, str):
                return (self.esc(kept[0].text) if kept else "",)
            data = {i.id[6:]: (i.text if i.cut or i.payload is None else i.payload) for i in kept}
            return (dump(self.esc.data(data), fmt) if data else "",)

        kept, dropped, trimmed = fit(items, render, budget)
        text = render(kept)[0]
        report = PartReport(
            "state",
            budget,
            count_tokens(text),
            tuple(i.id for i in kept),
            tuple(dropped),
            tuple(trimmed),
        )
        return text, report

    def _messages(self, messages: Sequence[Mapping[str, Any]]) -> tuple[str, PartReport]:
        budget = self.budgets["messages"]
        items: list[_Item] = []
        if isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Sequence):
            raise InvalidInput("messages must be a list of {role, content}")
        for n, m in enumerate(messages):
            role, content = (m.get("role"), m.get("content")) if isinstance(m, Mapping) else (0, 0)
            if role not in ROLES or not isinstance(content, str):
                raise InvalidInput(
                    f"messages[{n}] must be {{role, content}} with role one of {', '.join(ROLES)}"
                )
            items.append(_Item(f"messages[{n}]", n, content, role))

        def render(kept: Sequence[_Item]) -> tuple[str, ...]:
            data = [{"role": i.payload, "content": i.text} for i in kept]
            return (format_block("messages", self.esc.data(data), self.fmt),)

        kept, dropped, trimmed = fit(items, render, budget)
        text = render(kept)[0]
        report = PartReport(
            "messages",
            budget,
            count_tokens(text),
            tuple(i.id for i in kept),
            tuple(dropped),
            tuple(trimmed),
        )
        return text, report


_FIELD = {"axioms": "rule", "glossary": "definition"}
