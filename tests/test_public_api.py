from __future__ import annotations

import subprocess
import sys

import groundkb
from groundkb.settings import settings_markdown

from .conftest import ROOT


def test_public_names_are_pinned() -> None:
    assert groundkb.__all__ == [
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


def test_import_and_help_stay_light() -> None:
    code = (
        "import sys, groundkb, groundkb.serve.cli;"
        "heavy = {'numpy', 'torch', 'mcp', 'starlette', 'uvicorn', 'pydantic', 'onnxruntime',"
        "'fastapi', 'prometheus_client', 'anyio', 'lxml', 'html_to_markdown', 'pypdf', 'docx',"
        " 'psycopg', 'psycopg_pool', 'pgvector', 'jwt', 'cryptography', 'httpx2', 'jinja2'};"
        "print(sorted(heavy & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_settings_reference_in_docs_matches_the_declaration() -> None:
    assert (ROOT / "docs" / "settings.md").read_text() == settings_markdown()
