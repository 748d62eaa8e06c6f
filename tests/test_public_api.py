from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import groundkb
from groundkb import KnowledgeBase, Settings
from groundkb.settings import settings_markdown

from .conftest import EXAMPLES, ROOT


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


def test_a_keyword_search_of_known_words_loads_no_more_than_it_uses(tmp_path: Path) -> None:
    """A fresh process's keyword search: no model, no array library, and no fuzzy
    matching unless a word needs correcting or a command a suggestion."""
    db = tmp_path / "kb.db"
    with KnowledgeBase.open(db, Settings(embedder="none")) as kb:
        assert kb.ingest(EXAMPLES / "docs", source="docs").ok
    code = (
        "import sys; from groundkb import KnowledgeBase, Settings;"
        f"kb = KnowledgeBase.open({str(db)!r}, Settings(embedder='none'));"
        "r = kb.search('share a workspace');"
        "heavy = {'numpy', 'onnxruntime', 'tokenizers', 'rapidfuzz', 'mcp', 'pydantic'};"
        "print(r.hits[0].doc_id if r.hits else '', sorted(heavy & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split(" ", 1)[1].strip() == "[]", out.stdout
