"""What an MCP tool call returned, read the way a host would."""

from __future__ import annotations

import json
from typing import Any


def payload(result: Any) -> Any:
    """A tool result's data: its structured content, or else the JSON of its one text
    block (how groundkb sends results unless ``mcp_structured_output`` is on); None when
    it has neither (an error's text, say)."""
    if result.structured_content is not None:
        return result.structured_content
    if len(result.content) != 1 or getattr(result.content[0], "type", "") != "text":
        return None
    try:
        return json.loads(result.content[0].text)
    except ValueError:
        return None
