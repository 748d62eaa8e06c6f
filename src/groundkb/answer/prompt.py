"""Build a knowledge-aware prompt for a question: search, gather, budget, render.

:func:`build_prompt` is what :meth:`KnowledgeBase.build_prompt` runs:

1. choose the template (request, else the ``prompt_template`` setting) and resolve the
   grounding level and context format (request > setting > template default);
2. search the question; gather passages, entities, relationships, axioms and glossary
   (``knowledge.py``); on ``no_match`` no retrieved text at all;
3. fit each part into its token budget (``context.py``);
4. check the template's requirements (only when the verdict is ``answer``): too few
   entities or passages, or missing relationships or axioms, is :class:`MissingContext`;
5. render system and user prompts in the sandbox. If the template does not compile or
   fails while rendering, the default template is used instead; the reason is logged
   and returned in ``fallback``. A template that leaves out the grounding, data-policy
   or verdict instructions gets them appended to its system prompt, so a custom
   template cannot silently drop them;
6. count the tokens of the result and list every id it includes.

On ``clarify`` the options to ask about come from :func:`clarify_options`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import GroundKBError, InvalidInput
from ..models import SearchResult, Verdict
from .context import PARTS, Context, ContextBuilder, PartReport, resolve_budgets
from .formats import FORMATS, ContextFormat, Escaper, template_tags
from .grounding import DATA_POLICY, GROUNDING_LEVELS, INSTRUCTIONS, verdict_instructions
from .knowledge import gather
from .templates import (
    DEFAULT_TEMPLATE,
    MissingContext,
    PromptTemplate,
    TemplateError,
    load_registry,
    render,
    variables,
)
from .tokens import ENCODING, count_tokens

if TYPE_CHECKING:
    from ..api import KnowledgeBase

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class FlaggedPassage:
    id: str
    flags: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class BuiltPrompt:
    """A prompt ready for a model, and everything needed to audit the answer."""

    system: str
    user: str
    template: str
    template_version: str
    grounding: str
    format: str
    estimated_tokens: int  # system + user, in ``tokenizer`` tokens
    tokenizer: str
    verdict: Verdict
    options: tuple[str, ...]
    hit_ids: tuple[str, ...]  # chunk ids of the passages included
    entity_ids: tuple[str, ...]
    relationships: tuple[str, ...]  # "source --type--> target"
    axiom_ids: tuple[str, ...]
    glossary_ids: tuple[str, ...]
    flagged: tuple[FlaggedPassage, ...]
    parts: tuple[PartReport, ...]
    dropped: tuple[str, ...]
    trimmed: tuple[str, ...]
    fallback: str = ""  # why the requested template was not used
    query: str = ""


def clarify_options(result: SearchResult, limit: int = 5) -> tuple[str, ...]:
    """What to ask the user to choose between.

    Structured options, when the search result or its verdict carries them (an
    ``options`` sequence of strings or of objects with a ``label``/``title``), win;
    then the result's suggestions; then the titles of the top hits.
    """
    for holder in (result, result.verdict):
        options = getattr(holder, "options", None)
        if options:
            return tuple(_label(o) for o in options)[:limit]
    if result.suggestions:
        return tuple(result.suggestions)[:limit]
    return tuple(dict.fromkeys(h.title for h in result.hits))[:limit]


def _label(option: Any) -> str:
    if isinstance(option, str):
        return option
    for name in ("label", "title", "text", "name"):
        value = getattr(option, name, None) or (
            option.get(name) if isinstance(option, Mapping) else None
        )
        if value:
            return str(value)
    return str(option)


def _choice(name: str, value: str | None, allowed: Sequence[str]) -> str | None:
    if value is None or value == "":
        return None
    if value not in allowed:
        raise InvalidInput(f"{name} must be one of {', '.join(allowed)}; got {value!r}")
    return value


def build_prompt(
    kb: KnowledgeBase,
    question: str,
    *,
    template: str | None = None,
    grounding: str | None = None,
    format: str | None = None,
    budget: int | Mapping[str, int] | None = None,
    state: Mapping[str, Any] | str | None = None,
    messages: Sequence[Mapping[str, Any]] = (),
    instructions: str = "",
    search: Mapping[str, Any] | None = None,
) -> BuiltPrompt:
    s = kb.settings
    registry = load_registry(s.prompt_templates)
    tpl = registry.get(template or s.prompt_template or DEFAULT_TEMPLATE)
    level = (
        _choice("grounding", grounding, GROUNDING_LEVELS)
        or _choice("prompt_grounding", s.prompt_grounding, GROUNDING_LEVELS)
        or tpl.defaults.grounding
    )
    fmt: ContextFormat = (
        _choice("format", format, FORMATS)  # type: ignore[assignment]
        or _choice("prompt_format", s.prompt_format, FORMATS)
        or tpl.defaults.format
    )
    budgets = resolve_budgets({p: getattr(s, f"prompt_budget_{p}") for p in PARTS}, budget)
    result = kb.search(question, **dict(search or {}))
    knowledge = gather(
        kb,
        result,
        include_relationships=tpl.defaults.include_relationships,
        include_axioms=tpl.defaults.include_axioms,
    )
    fallback_tpl = _fallback(registry, s.prompt_template, tpl)
    esc = Escaper(template_tags(tpl.system, tpl.user, fallback_tpl.system, fallback_tpl.user))
    ctx = ContextBuilder(fmt, esc, budgets).build(knowledge, state, messages)
    kind = result.verdict.kind
    if kind == "answer":
        _check(tpl, ctx)
    options = clarify_options(result) if kind == "clarify" else tuple(result.suggestions)[:5]
    variables_ = _variables(result, ctx, esc, level, fmt, options, instructions)
    system, user, used, why = _render(tpl, fallback_tpl, variables_)
    return BuiltPrompt(
        system=system,
        user=user,
        template=used.id,
        template_version=used.version,
        grounding=level,
        format=fmt,
        estimated_tokens=count_tokens(system) + count_tokens(user),
        tokenizer=ENCODING,
        verdict=result.verdict,
        options=options,
        hit_ids=tuple(p.id for p in ctx.passages),
        entity_ids=tuple(e.id for e in ctx.entities),
        relationships=tuple(f"{r.source} --{r.type}--> {r.target}" for r in ctx.relationships),
        axiom_ids=tuple(a.id for a in ctx.axiom_items),
        glossary_ids=tuple(t.id for t in ctx.terms),
        flagged=tuple(
            FlaggedPassage(p.id, tuple(str(f) for f in p.flags)) for p in ctx.passages if p.flags
        ),
        parts=ctx.parts,
        dropped=tuple(i for p in ctx.parts for i in p.dropped),
        trimmed=tuple(i for p in ctx.parts for i in p.trimmed),
        fallback=why,
        query=result.query,
    )


def _fallback(registry: Any, configured: str, tpl: PromptTemplate) -> PromptTemplate:
    """The template to use when ``tpl`` fails: the configured default, else the built-in."""
    for tid in (configured, DEFAULT_TEMPLATE):
        if tid and tid != tpl.id:
            try:
                found: PromptTemplate = registry.get(tid)
            except GroundKBError:
                continue
            if not found.error:
                return found
    return tpl


def _check(tpl: PromptTemplate, ctx: Context) -> None:
    req = tpl.requirements
    missing: list[str] = []
    if len(ctx.entities) < req.min_entities:
        missing.append(f"at least {req.min_entities} entities (found {len(ctx.entities)})")
    if len(ctx.passages) < req.min_evidence:
        missing.append(f"at least {req.min_evidence} passages (found {len(ctx.passages)})")
    if req.requires_relationships and not ctx.relationships:
        missing.append("relationships between entities (found none)")
    if req.requires_axioms and not ctx.axiom_items:
        missing.append("axioms (found none)")
    if missing:
        dropped = [i for p in ctx.parts for i in p.dropped]
        hint = f"; {len(dropped)} items were dropped to fit the budget" if dropped else ""
        raise MissingContext(f"template {tpl.id!r} needs " + ", ".join(missing) + hint)


def _variables(
    result: SearchResult,
    ctx: Context,
    esc: Escaper,
    level: str,
    fmt: str,
    options: Sequence[str],
    instructions: str,
) -> dict[str, Any]:
    v = result.verdict
    opts = [esc(o) for o in options]
    return {
        "question": esc(result.query),
        "grounding": level,
        "grounding_instructions": INSTRUCTIONS[level],
        "data_policy": DATA_POLICY,
        "verdict": {
            "kind": v.kind,
            "reason": v.reason,
            "confidence": v.confidence,
            "message": esc(v.message),
        },
        "verdict_instructions": verdict_instructions(v.kind, esc(v.message), opts, v.reason),
        "options": opts,
        "format": fmt,
        "knowledge": ctx.knowledge,
        "evidence": ctx.evidence,
        "axioms_text": ctx.axioms,
        "axioms": esc.data([a.item() for a in ctx.axiom_items]),
        "glossary": ctx.glossary,
        "state": ctx.state,
        "messages": ctx.messages,
        "entities": esc.data([e.item() for e in ctx.entities]),
        "relationships": esc.data([r.item() for r in ctx.relationships]),
        "passages": esc.data([p.item() for p in ctx.passages]),
        "flagged": [p.id for p in ctx.passages if p.flags],
        "instructions": instructions,
    }


_GUARANTEED = (
    ("grounding_instructions", "grounding_instructions"),
    ("data_policy", "data_policy"),
    ("verdict_instructions", "verdict_instructions"),
)


def _render_one(tpl: PromptTemplate, values: Mapping[str, Any]) -> tuple[str, str]:
    if tpl.error:
        raise TemplateError(tpl.error)
    system = render(tpl.system, values)
    user = render(tpl.user, values)
    used = variables(tpl.system) | variables(tpl.user)
    extra = [values[v] for name, v in _GUARANTEED if name not in used and values[v]]
    if extra:
        system = "\n\n".join([system, *extra]).strip()
    return system, user


def _render(
    tpl: PromptTemplate, fallback: PromptTemplate, values: Mapping[str, Any]
) -> tuple[str, str, PromptTemplate, str]:
    try:
        system, user = _render_one(tpl, values)
        return system, user, tpl, ""
    except Exception as exc:  # a user template may fail in any way; the sandbox contains it
        why = f"template {tpl.id!r} failed ({type(exc).__name__}: {exc})"
        if fallback.id == tpl.id:
            raise TemplateError(why) from None
        log.warning("%s; using %r instead", why, fallback.id)
    try:
        system, user = _render_one(fallback, values)
    except Exception as exc:
        raise TemplateError(f"{why}, and the default {fallback.id!r} failed too: {exc}") from None
    return system, user, fallback, f"{why}; used {fallback.id!r}"
