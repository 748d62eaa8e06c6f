"""The web console in a real browser: Debian's headless Chromium driven by Playwright.

The console is served by the real app over HTTP on loopback. Each test saves a
screenshot of the page it checks under ``test-artifacts/console/`` (git-ignored).
``make browser`` (part of ``make test``) installs Chromium when it is missing; set
GROUNDKB_SKIP_BROWSER=1 to skip these tests on a machine that cannot have it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from groundkb import KnowledgeBase, Settings
from groundkb.serve.http import create_app

from .conftest import EXAMPLES, ROOT
from .docmaker import GADGETS_SPEC
from .serving import running

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = ROOT / "test-artifacts" / "console"
TOKEN = "console-admin-token"

if os.environ.get("GROUNDKB_SKIP_BROWSER") == "1":
    pytest.skip("GROUNDKB_SKIP_BROWSER=1", allow_module_level=True)
if not Path(CHROMIUM).exists():
    pytest.fail(f"{CHROMIUM} is missing: run `make browser` (apt-get install chromium)")

from playwright.sync_api import Browser, Page, expect, sync_playwright  # noqa: E402


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("console")
    docs = tmp / "docs"
    shutil.copytree(EXAMPLES / "docs", docs)
    settings = Settings(db=str(tmp / "kb.db"), admin_token=TOKEN, embedder="none")
    with KnowledgeBase.open(settings=settings) as kb:
        assert kb.ingest(docs, source="docs").ok
        assert kb.ingest(EXAMPLES / "entries", source="commands").ok
        spec = tmp / "gadgets.json"
        spec.write_text(json.dumps(GADGETS_SPEC))
        assert kb.ingest(spec, source="gadgets").ok
        with running(create_app(kb)) as url:
            yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser: Browser, base: str) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    pg = context.new_page()
    requests: list[str] = []
    problems: list[str] = []
    pg.on("request", lambda r: requests.append(r.url))
    pg.on("pageerror", lambda e: problems.append(str(e)))
    # JavaScript errors fail the test; a 4xx the page shows the user (e.g. a refused
    # admin action) is logged by the browser as an error too, and is not one
    pg.on(
        "console",
        lambda m: (
            problems.append(m.text)
            if m.type == "error" and not m.text.startswith("Failed to load resource")
            else None
        ),
    )
    yield pg
    context.close()
    assert not problems, problems
    outside = [u for u in requests if not u.startswith((base, "data:"))]
    assert not outside, f"the console fetched from outside the server: {outside}"


def shot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def search(page: Page, base: str, query: str) -> None:
    page.goto(base + "/#/search")
    expect(page.locator("#q")).to_be_focused()  # an empty search page waits for typing
    page.keyboard.type(query)
    page.keyboard.press("Enter")
    expect(page.get_by_test_id("verdict")).to_be_visible()


def test_a_search_shows_the_verdict_and_each_hits_evidence(page: Page, base: str) -> None:
    search(page, base, "explain workspace")
    verdict = page.get_by_test_id("verdict")
    expect(verdict).to_contain_text("answer")
    expect(verdict).to_contain_text(
        re.compile(r"reason \w+\s*confidence [01]\.\d\d\s*mode keyword")
    )
    first = page.locator(".hit").first
    expect(first.locator("h3")).to_have_text("Workspace")
    expect(first.locator(".path")).to_have_text("Workspace")
    expect(first.locator(".ranks")).to_have_text("ranks: keyword #1")
    expect(first.locator(".snippet mark").first).to_have_text("workspace")
    expect(first.locator(".cite code")).to_have_text("docs:concepts/workspace.md")
    second = page.locator(".hit").nth(1)
    expect(second.locator(".path")).to_have_text("Workspace > Creating a workspace")
    shot(page, "search")
    # the first hit's link has the focus: Enter opens the document viewer
    page.keyboard.press("Enter")
    expect(page.locator("h1")).to_have_text("Workspace")
    content = page.locator("pre.content")
    expect(content).to_contain_text("A workspace is where your notes live")
    expect(content.locator("mark").first).to_have_text(re.compile("^workspace$", re.I))
    expect(page.locator("main")).not_to_contain_text("null")
    shot(page, "document")
    page.get_by_role("link", name="← Back to the results").click()
    expect(page.locator(".hit").first.locator("h3")).to_have_text("Workspace")
    page.goto(base + "/#/settings")
    expect(page.locator("h1")).to_have_text("Settings")
    page.keyboard.press("/")  # from any page, / goes to the search box
    expect(page.locator("#q")).to_be_focused()


def test_an_api_hit_shows_its_call_and_whether_it_is_deprecated(page: Page, base: str) -> None:
    search(page, base, "create a gadget")
    first = page.locator(".hit").first
    expect(first.locator(".endpoint")).to_have_text("POST /gadgets")
    expect(first.locator(".deprecated")).to_have_text("deprecated")
    search(page, base, "list gadgets")
    first = page.locator(".hit").first
    expect(first.locator(".endpoint")).to_have_text("GET /gadgets")
    expect(first.locator(".deprecated")).to_have_count(0)


def test_a_clarifying_verdict_offers_choices_that_search_again(page: Page, base: str) -> None:
    search(page, base, "home")
    verdict = page.get_by_test_id("verdict")
    expect(verdict).to_contain_text("clarify")
    expect(verdict).to_contain_text("Dashboard")
    choices = verdict.get_by_role("list", name="Suggestions").get_by_role("button")
    expect(choices.first).to_be_visible()
    label = choices.first.inner_text()
    shot(page, "clarify")
    choices.first.click()
    expect(page.locator("#q")).to_have_value(label)


def test_disabling_a_source_changes_the_results_until_it_is_enabled(page: Page, base: str) -> None:
    search(page, base, "explain workspace")
    expect(page.locator('.hit[data-doc-id="concepts/workspace"]').first).to_be_visible()
    page.keyboard.press("g")
    page.keyboard.press("o")  # g o: the sources page
    expect(page.locator("h1")).to_have_text("Sources")
    docs = page.locator('tr[data-source="docs"]')
    docs.get_by_role("button", name="Disable").click()
    expect(page.locator("#sources-status")).to_contain_text("[unauthorized]")
    expect(page.locator("#whoami")).to_contain_text("Reading as anonymous")
    page.get_by_label("Admin token (admin actions)").fill(TOKEN)
    page.get_by_role("button", name="Use token").click()
    expect(page.locator("#whoami")).to_contain_text("Reading as admin")
    docs.get_by_role("button", name="Disable").click()
    expect(page.locator("#sources-status")).to_have_text("Disabled docs.")
    expect(docs).to_contain_text("disabled")
    shot(page, "sources")

    search(page, base, "explain workspace")
    expect(page.locator(".hit")).not_to_have_count(0)
    expect(page.locator('.hit[data-doc-id^="concepts/"]')).to_have_count(0)
    expect(page.get_by_test_id("verdict")).not_to_contain_text("Answer from Workspace")

    page.goto(base + "/#/sources")
    page.locator('tr[data-source="docs"]').get_by_role("button", name="Enable").click()
    expect(page.locator("#sources-status")).to_have_text("Enabled docs.")
    page.locator('tr[data-source="docs"]').get_by_role("button", name="Re-sync").click()
    expect(page.locator("#sources-status")).to_contain_text("Synced docs: 0 inserted")
    search(page, base, "explain workspace")
    expect(page.locator('.hit[data-doc-id="concepts/workspace"]').first).to_be_visible()


def test_the_metrics_page_charts_latency_and_no_match_rate(page: Page, base: str) -> None:
    for q in ("explain notes", "explain calendar"):
        search(page, base, q)
    page.goto(base + "/#/metrics")
    expect(page.locator("h1")).to_have_text("Metrics")
    latency = page.get_by_role("img", name="Search latency p50 and p95 over time")
    expect(latency.locator('polyline[data-series="p95_ms"], circle').first).to_be_attached()
    rates = page.get_by_role("img", name="No-match and clarify rate over time")
    expect(rates).to_be_visible()
    expect(page.locator("#mode-line")).to_contain_text("keyword")
    expect(page.locator(".card").first).not_to_contain_text("0 ")
    shot(page, "metrics")


def test_settings_are_shown_read_only_with_secrets_hidden(page: Page, base: str) -> None:
    page.goto(base + "/#/settings")
    row = page.locator('tr[data-setting="admin_token"]')
    expect(row).to_contain_text("(set, hidden)")
    expect(page.locator('tr[data-setting="option_lead"]')).to_contain_text("0.35")
    assert TOKEN not in page.content()
    shot(page, "settings")


def test_the_api_docs_page_works_without_a_cdn(page: Page, base: str) -> None:
    page.goto(base + "/docs")
    expect(page.locator(".swagger-ui .opblock").first).to_be_visible(timeout=20_000)
    expect(page.get_by_text("/api/search").first).to_be_visible()
    shot(page, "api-docs")
