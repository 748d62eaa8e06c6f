"""Bounded fuzzing of every input surface: the Python API, the CLI and the MCP tools.

Whatever comes in (lone surrogates, huge and negative numbers, NaN, wrong types, long
strings, control characters), only a result or one of our errors comes out: never
another exception, a traceback or a crashed session. Hypothesis runs a fixed number of
examples from a fixed seed, so the test is bounded and repeatable.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from groundkb import KnowledgeBase, Settings
from groundkb.errors import GroundKBError
from groundkb.serve.cli import cli
from groundkb.serve.mcp import build_server

from .conftest import EXAMPLES, FIXTURES
from .mcp_result import payload

BOUNDED = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)

# Text of every kind, lone surrogates (undecodable bytes) included, now and then long.
texts = st.one_of(
    st.text(st.characters(codec=None), max_size=40),
    st.text(st.characters(categories=["Cs", "Cc", "Zs", "Lu"]), max_size=10),
    st.sampled_from(["", " ", "all", "command", "api", "/v1/customers", "helios gw users list"]),
    st.integers(min_value=1, max_value=3).map(lambda n: "x" * (10**n * 7)),
)
numbers = st.one_of(
    st.integers(),
    st.sampled_from([0, -1, 2**63, -(2**63), 10**12]),
    st.floats(allow_nan=True, allow_infinity=True),
)
anything = st.one_of(st.none(), st.booleans(), texts, numbers, st.lists(texts, max_size=3))


@pytest.fixture(scope="module")
def fuzz_kb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowledgeBase]:
    folder: Path = tmp_path_factory.mktemp("fuzz")
    with KnowledgeBase.open(folder / "kb.db", Settings(embedder="none")) as kb:
        assert kb.ingest(EXAMPLES / "docs", source="docs").ok
        assert kb.ingest(EXAMPLES / "entries", source="commands").ok
        assert kb.ingest(FIXTURES / "openapi" / "billing.json", source="api").ok
        yield kb


_CALLS = {
    "search": lambda kb, a: kb.search(a[0], type=a[1], category=a[2], source=a[3], limit=a[4]),
    "search_mode": lambda kb, a: kb.search(a[0], mode=a[1]),
    "get": lambda kb, a: kb.get(a[0]),
    "chunks": lambda kb, a: kb.chunks(a[0]),
    "get_command": lambda kb, a: kb.get_command(a[0]),
    "lookup_command": lambda kb, a: kb.lookup_command(a[0], source=a[1]),
    "list_commands": lambda kb, a: kb.list_commands(a[0], limit=a[1], offset=a[2]),
    "list_documents": lambda kb, a: kb.list_documents(type=a[0], limit=a[1], offset=a[2]),
    "get_api_endpoint": lambda kb, a: kb.get_api_endpoint(a[0], a[1]),
    "find_endpoints": lambda kb, a: kb.find_endpoints(a[0], a[1]),
}


@BOUNDED
@given(
    name=st.sampled_from(sorted(_CALLS)),
    args=st.tuples(texts | anything, anything, anything, anything, anything),
)
def test_the_python_api_gives_a_result_or_our_error(
    fuzz_kb: KnowledgeBase, name: str, args: tuple[Any, ...]
) -> None:
    with contextlib.suppress(GroundKBError):  # ours; anything else fails the test
        _CALLS[name](fuzz_kb, args)


_COMMANDS = [
    ["search"],
    ["search", "--category"],
    ["search", "--source"],
    ["search", "--type"],
    ["get"],
    ["command"],
    ["command", "--json"],
    ["endpoint"],
    ["endpoints"],
    ["commands", "--category"],
]


@BOUNDED
@given(command=st.sampled_from(_COMMANDS), words=st.lists(texts, min_size=1, max_size=3))
def test_the_cli_answers_with_output_or_one_error_line(
    fuzz_kb: KnowledgeBase, command: list[str], words: list[str]
) -> None:
    args = ["--db", fuzz_kb.settings.db, *command, *words]
    result = CliRunner().invoke(cli, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), args
    assert result.exit_code in (0, 1, 2)
    assert "Traceback" not in result.output


_TOOLS: dict[str, list[str]] = {
    "search_knowledge": ["query", "type", "category", "source", "limit", "max_tokens"],
    "get_document": ["id", "max_tokens", "offset"],
    "get_command": ["command", "source"],
    "list_commands": ["category", "offset", "limit"],
    "get_api_endpoint": ["path", "method"],
    "find_endpoints": ["resource", "operation"],
    "rag_discover_resources": ["username", "filters"],
    "rag_get_raw_results": ["query", "sources", "username", "top_k", "filters", "ranking",
                            "capability_token"],
    "rag_get_synthesized_results": ["query", "sources", "top_k", "synthesis_params",
                                    "provided_context", "capability_token"],
}  # fmt: skip
json_values = st.one_of(
    st.none(),
    st.booleans(),
    texts,
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.lists(st.integers(), max_size=2),
)


@BOUNDED
@given(
    tool=st.sampled_from(sorted(_TOOLS)),
    data=st.data(),
)
def test_mcp_tools_answer_with_a_result_or_our_error(
    fuzz_kb: KnowledgeBase, tool: str, data: st.DataObject
) -> None:
    names = _TOOLS[tool]
    chosen = data.draw(st.lists(st.sampled_from(names), unique=True, max_size=len(names)))
    arguments = {name: data.draw(json_values) for name in chosen}

    async def call() -> Any:
        async with Client(build_server(fuzz_kb)) as client:
            return await client.call_tool(tool, arguments)

    result = anyio.run(call)
    if result.is_error:
        text = result.content[0].text
        assert "[" in text and "] " in text and "Traceback" not in text, text
        assert "internal_error" not in text, (tool, arguments, text)
    else:
        assert payload(result) is not None
