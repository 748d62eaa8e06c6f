"""A small knowledge base with three audiences, for the access-control tests.

- ``handbook``: no groups, every caller reads it (a page and a command);
- ``legal``: groups ``legal``, a page about a secret merger and a command of its own;
- ``platform``: groups ``platform``, an OpenAPI spec of internal endpoints.

Every word that only a restricted source holds ("zanzibar", "bluefin", "payroll",
"subpoena") is a probe: it must never reach a caller outside those groups.
"""

from __future__ import annotations

import json
from pathlib import Path

from groundkb import KnowledgeBase
from groundkb.settings import load_settings

SECRET_WORDS = ("zanzibar", "bluefin", "payroll", "subpoena", "legal hold")
HEAD = """\
db = "kb.db"
embedder = "none"
retrieval = "keyword"
ubiquitous_min_docs = 1
"""
SOURCES = """
[[sources]]
name = "handbook"
path = "handbook"

[[sources]]
name = "legal"
path = "legal"
groups = ["legal"]

[[sources]]
name = "platform"
path = "platform"
groups = ["platform"]
"""
PAGES = {
    "handbook/vacation.md": "# Vacation policy\n\nEmployees get 25 days of vacation a year."
    " Ask your manager before booking.\n",
    "handbook/expenses.md": "# Expense reports\n\nSubmit expense reports within 30 days with"
    " receipts attached.\n",
    "handbook/commands.yaml": """entries:
  - id: cmd-users-list
    type: command
    category: users
    title: List users
    content: "Lists every user."
    aliases: [acme users list]
    examples:
      - {description: List users, code: acme users list}
""",
    "legal/zanzibar.md": "# Project Zanzibar merger\n\nThe Zanzibar acquisition closes in"
    " March. Codename bluefin. Expense reports for the deal go to the legal team.\n",
    "legal/commands.yaml": """entries:
  - id: cmd-legal-hold
    type: command
    category: compliance
    title: Create a legal hold
    content: "Puts a subpoena hold on a mailbox."
    aliases: [acme legal hold create]
    examples:
      - {description: Hold a mailbox, code: acme legal hold create --mailbox ceo}
""",
    "platform/payroll.yaml": """openapi: 3.0.3
info: {title: Payroll API, version: "1.0"}
paths:
  /internal/payroll:
    get:
      operationId: listPayroll
      summary: List payroll runs
      responses: {"200": {description: ok}}
    post:
      operationId: createPayroll
      summary: Start a payroll run
      responses: {"201": {description: created}}
""",
}


def build(root: Path, db: str = "", **extra: str) -> KnowledgeBase:
    """Write the corpus and its groundkb.toml under ``root``, sync (into ``db`` if
    given, e.g. a PostgreSQL URL), return the KB."""
    for rel, text in PAGES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    settings_lines = "".join(f"{k} = {json.dumps(v)}\n" for k, v in extra.items())
    head = HEAD.replace('"kb.db"', json.dumps(db)) if db else HEAD
    (root / "groundkb.toml").write_text(head + settings_lines + SOURCES)
    settings = load_settings(root / "groundkb.toml")
    kb = KnowledgeBase.open(settings=settings)
    for report in kb.sync():
        assert report.ok, report.errors
    return kb
