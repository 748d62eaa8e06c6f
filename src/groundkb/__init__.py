"""groundkb: a grounded knowledge base for AI agents.

Ingest docs and knowledge entries, search them with evidence and a verdict (answer,
clarify, no match), and serve them over MCP. Start with :class:`KnowledgeBase`.
"""

from __future__ import annotations

import logging

from .api import KnowledgeBase
from .errors import GroundKBError
from .models import Chunk, Document, Filters, Hit, IngestReport, SearchResult, Source, Verdict
from .settings import Settings, load_settings

__version__ = "0.1.0"

logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = [
    "Chunk",
    "Document",
    "Filters",
    "GroundKBError",
    "Hit",
    "IngestReport",
    "KnowledgeBase",
    "SearchResult",
    "Settings",
    "Source",
    "Verdict",
    "__version__",
    "load_settings",
]
