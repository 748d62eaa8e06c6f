"""MCP prompts and the ``build_prompt`` tool: knowledge-aware prompts over MCP.

Every prompt template of the registry (built-ins and the ``prompt_templates`` folder)
is an MCP prompt with the template's id as its name and the arguments ``question``
(required), ``grounding``, ``format`` and ``budget``. A host renders it into one user
message holding the system prompt, then the user prompt (MCP prompt messages have no
system role). The ``build_prompt`` tool returns the same build as data
(``mcp_output.py``): both prompts, the template, the token estimate and the ids of every
passage, entity, axiom and glossary term included, dropped or trimmed.
"""

from __future__ import annotations

import inspect
import logging
from typing import TYPE_CHECKING, Annotated, Any

from mcp import MCPError
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import INTERNAL_ERROR, INVALID_PARAMS, CallToolResult, ToolAnnotations
from pydantic import Field

from ..errors import GroundKBError
from .errors import InternalError, as_error, tool_text
from .mcp_output import output_tool, tool_result
from .schemas import Format, Grounding, MessageIn, PromptOut, prompt_out

if TYPE_CHECKING:
    from ..answer import BuiltPrompt, PromptTemplate
    from ..api import KnowledgeBase
    from .gate import Gate

log = logging.getLogger(__name__)

READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)


_BUILD_PROMPT_DOC = """Build a knowledge-aware prompt for a question: system and user prompt
with the retrieved passages (cited), API entities and relationships, axioms and glossary,
each within its token budget, at a grounding level. Lists every id included so the answer
can be audited. On no_match the prompt tells the model to say it does not know; on clarify
it carries the options to ask about."""


def _prompt_tools(mcp: MCPServer, kb: KnowledgeBase, gate: Gate) -> None:
    """Register the ``build_prompt`` tool and one MCP prompt per template."""

    @output_tool(
        mcp,
        structured=kb.settings.mcp_structured_output,
        annotations=READ_ONLY,
        description=inspect.cleandoc(_BUILD_PROMPT_DOC),
    )
    async def build_prompt(
        question: Annotated[
            str, Field(min_length=1, max_length=2000, description="The user's question.")
        ],
        template: Annotated[
            str | None, Field(description="Template id (see the server's prompts).")
        ] = None,
        grounding: Annotated[
            Grounding | None, Field(description="How strictly to stay inside the knowledge.")
        ] = None,
        format: Annotated[Format | None, Field(description="Format of the knowledge.")] = None,
        budget: Annotated[
            int | None,
            Field(ge=0, le=200_000, description="Total context tokens, shared by the parts."),
        ] = None,
        part_budgets: Annotated[
            dict[str, int] | None,
            Field(description="Tokens per part: glossary, knowledge, axioms, state, messages."),
        ] = None,
        state: Annotated[
            dict[str, Any] | str | None,
            Field(description="UI or application state to include (text or an object)."),
        ] = None,
        messages: Annotated[
            list[MessageIn] | None, Field(description="Recent conversation, oldest first.")
        ] = None,
        instructions: Annotated[
            str, Field(max_length=4000, description="Extra instructions for the model.")
        ] = "",
    ) -> Annotated[CallToolResult, PromptOut]:
        chosen: int | dict[str, int] | None = part_budgets if part_budgets else budget

        def run(v: KnowledgeBase) -> BuiltPrompt:
            return v.build_prompt(
                question,
                template=template,
                grounding=grounding,
                format=format,
                budget=chosen,
                state=state,
                messages=[m.model_dump() for m in messages or ()],
                instructions=instructions,
            )

        try:
            built = await gate.run("build_prompt", run, query=question)
        except Exception as exc:
            raise ToolError(tool_text(exc)) from None
        return tool_result(
            prompt_out(built).model_dump(mode="json"), kb.settings.mcp_structured_output
        )

    try:
        from ..answer import load_registry

        templates = load_registry(kb.settings.prompt_templates).list()
    except GroundKBError as exc:
        log.warning("no MCP prompts: %s", exc.message)
        return
    for tpl in templates:
        _register_prompt(mcp, gate, tpl)


def _register_prompt(mcp: MCPServer, gate: Gate, tpl: PromptTemplate) -> None:
    template_id = tpl.id

    async def render(
        question: Annotated[str, Field(description="The question to build the prompt for.")],
        grounding: Annotated[
            str, Field(description="strict, moderate or flexible (default: the template's).")
        ] = "",
        format: Annotated[
            str, Field(description="yaml, json or markdown (default: the template's).")
        ] = "",
        budget: Annotated[
            str, Field(description="Total tokens, or part=tokens pairs, e.g. knowledge=2000.")
        ] = "",
    ) -> str:
        from ..answer import parse_budget

        def run(v: KnowledgeBase) -> BuiltPrompt:
            return v.build_prompt(
                question,
                template=template_id,
                grounding=grounding or None,
                format=format or None,
                budget=parse_budget(budget) if budget.strip() else None,
            )

        try:
            built = await gate.run("get_prompt", run, query=question, template=template_id)
        except Exception as exc:
            err = as_error(exc)
            code = INTERNAL_ERROR if isinstance(err, InternalError) else INVALID_PARAMS
            raise MCPError(code, tool_text(err)) from None
        return f"{built.system}\n\n{built.user}"

    description = tpl.description or tpl.name
    mcp.prompt(name=tpl.id, title=tpl.name, description=description)(render)


__all__ = ["prompt_out"]
