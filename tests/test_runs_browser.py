"""The runs page in a real browser (contract §10): headless Chromium (Debian's `chromium`,
driven by Playwright's Python API; no Playwright browser download) loads `mcp-code-mode ui`
and `mcp-code-mode serve --transport http` over a store a real gateway recorded into.

Without Chromium or Playwright the tests are skipped, unless CI is set: then they fail.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from mcp_code_mode.approval import ApprovalRequest

from .support import QUIET, ROOT, SECRET, TEST_SERVER, server_entry, start_gateway
from .test_http_serving import serving, wait_ready

BOARD = str(ROOT / "tests" / "servers" / "approvals_upstream.py")
TOKEN = "browser-token-9d41"
CHROMIUM_PATHS = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
HOSTILE_CLIENT = "<script>alert('client')</script>"

GOOD = """\
first = tools.testsrv.echo(text="<img src=x onerror=alert('arg')>")
batch = call_tools([("testsrv", "structured", {"n": i}) for i in range(5)])
try:
    tools.testsrv.fail(message="it broke on purpose")
except ToolError:
    pass
tools.board.post_message(text="hello")
leak = tools.testsrv.env(name="TOKEN")
[first, len(batch), leak]
"""
GOOD_CALLS = [
    "testsrv.echo",
    *["testsrv.structured"] * 5,
    "testsrv.fail",
    "board.post_message",
    "testsrv.env",
]
FAILING = """\
x = tools.testsrv.echo(text="one")
y = 2
raise ValueError("<script>alert('error')</script>")
"""


def require_browser() -> str:
    """Chromium's path; skips without it or Playwright, fails instead when CI is set."""
    chromium = next((p for p in CHROMIUM_PATHS if os.access(p, os.X_OK)), None)
    missing = None
    if chromium is None:
        missing = "Chromium is not installed (apt-get install chromium)"
    elif importlib.util.find_spec("playwright") is None:
        missing = "Playwright is not installed (pip install playwright)"
    if missing is not None:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the browser tests: {missing}")
        pytest.skip(missing)
    assert chromium is not None
    return chromium


@pytest_asyncio.fixture(scope="module")
async def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store a real gateway recorded two runs into: one good, one failing at line 3."""
    require_browser()  # nothing to set up for a skipped test
    folder = tmp_path_factory.mktemp("browser-runs")
    config = folder / "mcp_servers.json"
    testsrv = server_entry(TEST_SERVER, env={"TOKEN": "${MCP_CODE_TEST_SECRET}"})
    config.write_text(json.dumps({"servers": {"testsrv": testsrv, "board": server_entry(BOARD)}}))

    async def approve(request: ApprovalRequest) -> bool:
        return True

    gateway = await start_gateway(config, runs_db=str(folder / "runs.db"))
    try:
        good = await gateway.execute(GOOD, approver=approve, client="browser-test")
        failing = await gateway.execute(FAILING, client=HOSTILE_CLIENT)
    finally:
        await gateway.aclose()  # writes what is queued
    assert good.ok, good.error
    assert not failing.ok and failing.error is not None and failing.error.line == 3
    return folder / "runs.db"


@pytest.fixture(scope="module")
def ui_url(store: Path) -> Iterator[str]:
    """`mcp-code-mode ui --port 0` over the store; its URL as printed on stderr."""
    env = {"PATH": os.environ.get("PATH", ""), **QUIET, "MCP_CODE_RUNS_DB": str(store)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcp_code_mode.cli", "ui", "--port", "0"],
        cwd=store.parent,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        found = re.search(r"runs page at (http://127\.0\.0\.1:\d+/runs)", proc.stderr.readline())
        assert found, "ui printed no URL"
        yield found.group(1)
    finally:
        proc.kill()
        proc.wait(timeout=10)
        if proc.stderr is not None:
            proc.stderr.close()


@pytest_asyncio.fixture
async def browser() -> AsyncIterator[Any]:
    chromium = require_browser()
    from playwright.async_api import async_playwright

    args = ["--no-sandbox"] if os.geteuid() == 0 else []  # Chromium's sandbox refuses root
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=chromium, args=args)
        try:
            yield launched
        finally:
            await launched.close()


class Watched:
    """A page's dialogs (an injected `alert` would open one) and CSP violations."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.dialogs: list[str] = []
        self.blocked: list[str] = []
        page.on("dialog", self._dialog)
        page.on("console", self._console)

    async def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(dialog.message)
        await dialog.dismiss()

    def _console(self, message: Any) -> None:
        if "Content Security Policy" in message.text:
            self.blocked.append(message.text)


@pytest.mark.slow
async def test_runs_waterfall_and_failing_line_in_chromium(browser: Any, ui_url: str) -> None:
    watched = Watched(await browser.new_page())
    page = watched.page
    assert (await page.goto(ui_url)).status == 200
    clients = await page.locator("tr.run td:nth-child(2)").all_inner_texts()
    assert clients == [HOSTILE_CLIENT, "browser-test"]  # newest first, shown as text
    outcomes = await page.locator("tr.run td:nth-child(4)").all_inner_texts()
    assert outcomes == ["RUNTIME_ERROR", "ok"]
    times = await page.locator("tr.run time").all_inner_texts()
    assert times and not any(t.endswith("UTC") for t in times)  # the page's script ran

    await page.locator("tr.run", has_text="browser-test").locator("a").click()
    await page.wait_for_selector(".waterfall")
    calls = page.locator(".waterfall details.call")
    orders = await calls.evaluate_all("rows => rows.map(r => Number(r.dataset.order))")
    names = await page.locator(".waterfall .call .name").all_inner_texts()
    assert orders == list(range(len(GOOD_CALLS)))
    assert names == [f"#{i} {name}" for i, name in enumerate(GOOD_CALLS)]
    # The batch ran concurrently: its five bars overlap, each on its own row.
    batch = page.locator('.waterfall .call.concurrent .name:text-is("#1 testsrv.structured")')
    assert await batch.count() == 1 and await page.locator(".call.concurrent").count() >= 5
    spans = await page.locator(".waterfall rect").evaluate_all(
        "rs => rs.map(r => [r.x.baseVal.value, r.width.baseVal.value])"
    )
    starts = [x for x, _ in spans]
    assert starts[0] <= starts[1] and starts[-2] <= starts[-1]
    assert max(x for x, _ in spans[1:6]) < max(x + w for x, w in spans[1:6])
    assert "failed" in (await calls.nth(6).get_attribute("class") or "")
    await calls.nth(0).locator("summary").click()
    arguments = calls.nth(0).locator("pre.arguments")
    assert await arguments.is_visible() and "onerror" in await arguments.inner_text()
    assert await page.locator("ul.approvals").inner_text() == "#7 board.post_message: approved"
    assert SECRET not in await page.content()

    await page.go_back()
    await page.locator("tr.run.failed a").click()
    failing = page.locator("ol.code li.failing")
    await failing.wait_for()
    assert await failing.get_attribute("data-line") == "3" and await failing.is_visible()
    assert await failing.evaluate("li => [...li.parentNode.children].indexOf(li)") == 2
    assert (await failing.inner_text()).startswith('raise ValueError("<script>')
    assert "RUNTIME_ERROR at line 3" in await page.locator("dd.outcome").inner_text()
    assert watched.dialogs == [] and watched.blocked == []


@pytest.mark.slow
async def test_the_page_over_http_needs_the_token(browser: Any, store: Path) -> None:
    config = store.parent / "empty_servers.json"
    config.write_text(json.dumps({"servers": {}}))
    settings = {"MCP_CODE_HTTP_TOKEN": TOKEN, "MCP_CODE_RUNS_DB": str(store)}
    async with serving(config, store.parent / "serve.log", **settings) as instance:
        await wait_ready(instance)
        from playwright.async_api import Error as PlaywrightError

        anonymous = await browser.new_page()
        async with anonymous.expect_response(f"{instance.base}/runs") as answer:
            with contextlib.suppress(PlaywrightError):  # Chromium fails on an empty 401
                await anonymous.goto(f"{instance.base}/runs")
        refused = await answer.value
        assert refused.status == 401 and TOKEN not in await refused.text()
        context = await browser.new_context(extra_http_headers={"authorization": f"Bearer {TOKEN}"})
        watched = Watched(await context.new_page())
        assert (await watched.page.goto(f"{instance.base}/runs")).status == 200
        assert await watched.page.locator("tr.run").count() == 2
        await watched.page.locator("tr.run", has_text="browser-test").locator("a").click()
        await watched.page.wait_for_selector(".waterfall")
        assert await watched.page.locator(".waterfall details.call").count() == len(GOOD_CALLS)
        assert SECRET not in await watched.page.content()
        assert watched.dialogs == [] and watched.blocked == []
        await context.close()
