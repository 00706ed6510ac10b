"""The runs page (contract §10): the renderer over hostile records, the ASGI app over a real
SQLite store (filters, paging, 100,000 runs), `mcp-code-mode ui`, and `GET /runs` behind the
token of a real `mcp-code-mode serve --transport http`."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

import httpx
import pytest
from fastmcp import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp.types import Implementation

from mcp_code_mode.runs import CallRecord, RunRecord, RunStore, RunSummary, SQLiteRunBackend
from mcp_code_mode.runs.page import PAGE_SIZE, render_list, render_run
from mcp_code_mode.runs.records import as_stored
from mcp_code_mode.runs_page import runs_app

from .support import QUIET, TEST_SERVER, server_entry
from .test_http_serving import serving, wait_ready

TOKEN = "page-token-51c0e2"
HOSTILE = [
    "<script>alert(1)</script>",
    "</pre></li><script>alert(2)</script>",
    "<img src=x onerror=alert(3)>",
    "'\"><svg onload=alert(4)>",
    "javascript:alert(5)",
    "<!--",
    "]]><![CDATA[",
    "\ud800",
    "\udfff<b>",
    "\x00",
    "\x1b[31m",
    "\u202e",
    "&amp;",
]
# Every element and attribute the page itself writes: data can add none.
TAGS = {
    "html", "head", "meta", "title", "style", "body", "header", "a", "main", "script", "form",
    "label", "br", "select", "option", "input", "button", "p", "table", "thead", "tbody", "tr",
    "th", "td", "time", "nav", "h1", "h2", "code", "dl", "dt", "dd", "pre", "ol", "li", "span",
    "details", "summary", "svg", "rect", "ul", "div",
}  # fmt: skip
ATTRS = {
    "lang", "charset", "name", "content", "href", "method", "action", "value", "selected",
    "type", "class", "data-id", "datetime", "rel", "id", "data-line", "data-order", "viewbox",
    "preserveaspectratio", "aria-hidden", "x", "width", "height",
}  # fmt: skip


class _Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attrs: set[str] = set()
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs |= {name for name, _ in attrs}
        self._in_script = tag == "script"

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts.append(data)


def assert_inert(page: str, *, bound: int) -> None:
    """Only the page's own elements and attributes, its one script, no raw NUL or surrogate,
    sendable as UTF-8, within `bound` characters."""
    assert len(page) <= bound, len(page)
    page.encode("utf-8")  # no lone surrogate
    assert "\x00" not in page and "\x1b" not in page
    parsed = _Elements()
    parsed.feed(page)
    parsed.close()
    assert set(parsed.tags) <= TAGS, set(parsed.tags) - TAGS
    assert parsed.attrs <= ATTRS, parsed.attrs - ATTRS
    assert parsed.tags.count("script") == 1 and page.lower().count("<script") == 1
    assert "alert" not in "".join(parsed.scripts)


hostile_text = st.lists(
    st.one_of(st.sampled_from(HOSTILE), st.text(st.characters(exclude_categories=()))),
    max_size=6,
).map("".join)
numbers = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-(2**70), 2**70))
counts = st.integers(-(2**80), 2**80)
calls = st.builds(
    CallRecord,
    order=counts,
    server=hostile_text,
    tool=hostile_text,
    arguments=hostile_text,
    ok=st.booleans(),
    error=st.none() | hostile_text,
    started_ms=numbers,
    ms=numbers,
    bytes_in=counts,
    bytes_out=counts,
    approval=st.none() | hostile_text,
)
runs = st.builds(
    RunRecord,
    id=hostile_text,
    kind=st.sampled_from(["execute_code", "run_task"]),
    started=numbers,
    ended=numbers,
    client=hostile_text,
    code=hostile_text,
    input=hostile_text,
    ok=st.booleans(),
    error_type=st.none() | hostile_text,
    error=st.none() | hostile_text,
    error_line=st.none() | counts,
    stdout=hostile_text,
    logs=hostile_text,
    result=hostile_text,
    calls=st.lists(calls, max_size=6),
    tokens=st.dictionaries(hostile_text, counts, max_size=4),
)
summaries = st.builds(
    RunSummary,
    id=hostile_text,
    kind=st.sampled_from(["execute_code", "run_task"]),
    started=numbers,
    duration_ms=numbers,
    client=hostile_text,
    ok=st.booleans(),
    error_type=st.none() | hostile_text,
    calls=counts,
    failed_calls=counts,
    tokens_saved=counts,
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(run=runs, huge=st.sampled_from([0, 1, 1_000_000]))
def test_a_hostile_run_renders_inert_and_bounded(run: RunRecord, huge: int) -> None:
    if huge:  # huge texts: the page keeps a bounded part of each
        run = RunRecord(
            kind=run.kind,
            started=0,
            ended=1,
            client="<script>" * huge,
            code="'" * huge,
            ok=False,
            error="<" * huge,
            error_line=2,
            stdout="&" * huge,
            calls=[
                *run.calls,
                CallRecord(order=0, server="s", tool="t", arguments="<" * huge, ok=True),
            ],
        )
    assert_inert(render_run(run), bound=1_000_000)


@settings(max_examples=200, deadline=None)
@given(rows=st.lists(summaries, max_size=PAGE_SIZE + 3), client=st.none() | hostile_text)
def test_a_hostile_list_renders_inert_and_bounded(
    rows: list[RunSummary], client: str | None
) -> None:
    page = render_list(rows, ok=None, client=client, older="before=1.5&client=%3Cscript%3E")
    assert_inert(page, bound=200_000)


def test_hostile_runs_through_the_store_render_inert(tmp_path: Path) -> None:
    backend = SQLiteRunBackend(tmp_path / "hostile.db")
    backend.open()

    @settings(max_examples=60, deadline=None)
    @given(run=runs)
    def check(run: RunRecord) -> None:
        stored = as_stored(run)
        backend.write([stored])
        kept = backend.get(stored.id)
        assert kept is not None
        assert_inert(render_run(kept), bound=1_000_000)
        listed = backend.list_runs(PAGE_SIZE, ok=None, client=None, before=None)
        assert_inert(render_list(listed, ok=None, client=None, older=None), bound=200_000)

    try:
        check()
    finally:
        backend.close()


def test_the_largest_run_the_store_keeps_has_a_bounded_page() -> None:
    calls = [
        CallRecord(order=i, server="'" * 200, tool="'" * 200, arguments="'" * 2_000, ok=False,
                   error="'" * 2_000, started_ms=i, ms=1, approval="'" * 200)
        for i in range(10_000)
    ]  # fmt: skip
    texts = {name: "'" * 20_000 for name in ("code", "input", "error", "stdout", "logs", "result")}
    run = RunRecord(
        id="'" * 200, kind="execute_code", started=0, ended=1, client="'" * 200, ok=False,
        error_type="'" * 200, error_line=3, calls=calls, tokens={"'" * 200: 1}, **texts,
    )  # fmt: skip
    page = render_run(run)
    assert_inert(page, bound=8_000_000)
    assert page.count('class="call') == 500 and "9,500 more calls are not shown" in page


def test_the_failing_line_the_waterfall_and_the_figures() -> None:
    run = RunRecord(
        kind="execute_code",
        started=1_700_000_000.0,
        ended=1_700_000_000.1,
        client="pytest",
        code="a = 1\r\nb = tools.s.slow()\nraise ValueError('x')\n",
        ok=False,
        error_type="RUNTIME_ERROR",
        error="ValueError: x",
        error_line=3,
        calls=[
            CallRecord(order=0, server="s", tool="slow", arguments="{}", ok=True, ms=40),
            CallRecord(
                order=1, server="s", tool="a", arguments="{}", ok=True, started_ms=50, ms=20
            ),
            CallRecord(
                order=2,
                server="s",
                tool="b",
                arguments="{}",
                ok=False,
                error="boom",
                started_ms=55,
                ms=10,
                approval="declined",
            ),
            CallRecord(order=3, server="s", tool="c", arguments="{}", ok=True, started_ms=90, ms=5),
        ],
        tokens={"code": 10, "reply": 30, "upstream_results": 500},
    )
    page = render_run(run)
    lines = re.findall(r"<li[^>]*>(.*?)</li>", page.split('<ol class="code">')[1].split("</ol>")[0])
    assert len(lines) == 3 and lines[1] == "b = tools.s.slow()"
    assert '<li class="failing" id="failing-line" data-line="3">raise ValueError' in page
    rows = re.findall(r'<details class="call (\w+)( concurrent)?" data-order="(\d)"', page)
    assert rows == [("ok", "", "0"), ("ok", " concurrent", "1"), ("failed", " concurrent", "2"),
                    ("ok", "", "3")]  # fmt: skip
    bars = re.findall(r'<rect x="([\d.]+)" width="([\d.]+)"', page)
    assert bars[0] == ("0.0", "400.0") and bars[1] == ("500.0", "200.0")
    assert "<li>#2 s.b: declined</li>" in page and ">470<" in page  # saved: 500 - 30
    assert "RUNTIME_ERROR at line 3" in page and "boom" in page


# ---------------------------------------------------------------- the app over a store


def _summary_run(n: int, **changes: object) -> RunRecord:
    fields: dict[str, object] = {
        "id": f"run-{n:06d}",
        "kind": "execute_code",
        "started": 1_700_000_000.0 + n,
        "ended": 1_700_000_000.0 + n + 0.01,
        "client": "alpha" if n % 2 else "beta",
        "code": "1 + 1",
        "ok": n % 3 != 0,
        "error_type": None if n % 3 else "RUNTIME_ERROR",
        "tokens": {"upstream_results": n, "reply": 1},
    }
    return RunRecord(**{**fields, **changes})  # type: ignore[arg-type]


def _store(path: Path, count: int) -> SQLiteRunBackend:
    backend = SQLiteRunBackend(path)
    backend.open()
    try:
        for n in range(count):
            backend.write([_summary_run(n)])
    finally:
        backend.close()
    return backend


@asynccontextmanager
async def _page_client(backend: SQLiteRunBackend) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=runs_app(backend))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        yield http


def _ids(page: str) -> list[str]:
    return re.findall(r'<tr class="run \w+" data-id="([^"]+)"', page)


async def test_filters_and_paging(tmp_path: Path) -> None:
    backend = _store(tmp_path / "runs.db", 120)
    async with _page_client(backend) as http:
        first = await http.get("/runs")
        assert (
            first.status_code == 200
            and "default-src 'none'" in first.headers["content-security-policy"]
        )
        assert _ids(first.text) == [f"run-{n:06d}" for n in range(119, 69, -1)]
        older = re.search(r'<a rel="next" href="/runs\?([^"]+)"', first.text)
        assert older is not None
        second = await http.get("/runs?" + older.group(1).replace("&amp;", "&"))
        assert _ids(second.text) == [f"run-{n:06d}" for n in range(69, 19, -1)]
        third = await http.get("/runs", params={"before": "1700000020.0"})
        assert len(_ids(third.text)) == 20 and 'rel="next"' not in third.text
        failed = await http.get("/runs", params={"outcome": "failed", "client": "beta"})
        assert _ids(failed.text) == [f"run-{n:06d}" for n in range(114, -1, -6)][:PAGE_SIZE]
        assert '<option value="failed" selected>' in failed.text and 'value="beta"' in failed.text
        for junk in ({"before": "nan"}, {"before": "x"}, {"outcome": "<b>"}, {"client": "\x00"}):
            assert (await http.get("/runs", params=junk)).status_code == 200
        one = await http.get("/runs/run-000007")
        missing = await http.get("/runs/%3Cscript%3E")
        assert one.status_code == 200 and "<code>run-000007</code>" in one.text
        assert missing.status_code == 404 and "&lt;script&gt;" in missing.text


async def test_paging_through_runs_that_share_a_start_time_shows_each_once(
    tmp_path: Path,
) -> None:
    backend = SQLiteRunBackend(tmp_path / "runs.db")
    backend.open()
    same = [replace(_summary_run(n), started=1_700_000_000.0 + n // 40) for n in range(130)]
    backend.write(same)
    backend.close()
    seen: list[str] = []
    async with _page_client(backend) as http:
        query = ""
        for _ in range(10):
            page = (await http.get("/runs" + query)).text
            seen += _ids(page)
            older = re.search(r'<a rel="next" href="/runs(\?[^"]+)"', page)
            if older is None:
                break
            query = older.group(1).replace("&amp;", "&")
    assert sorted(seen) == sorted(run.id for run in same) and len(seen) == 130


async def test_no_store_yet_is_an_empty_list(tmp_path: Path) -> None:
    async with _page_client(SQLiteRunBackend(tmp_path / "none.db")) as http:
        page = await http.get("/runs")
    assert page.status_code == 200 and "No runs match." in page.text


async def test_a_broken_store_is_a_503(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    path.write_bytes(b"this is not a database" * 100)
    async with _page_client(SQLiteRunBackend(path)) as http:
        page = await http.get("/runs")
    assert page.status_code == 503 and str(tmp_path) not in page.text


@pytest.mark.slow
@pytest.mark.timeout(600)
async def test_the_list_page_with_100_000_runs(tmp_path: Path) -> None:
    backend = _store(tmp_path / "runs.db", 100_000)
    async with _page_client(backend) as http:
        await http.get("/runs")  # the first read warms the OS cache
        timings = {}
        for name, query in {
            "newest": "",
            "failed": "?outcome=failed",
            "client": "?client=beta",
            "deep page": "?before=1700000100.0",
        }.items():
            started = time.perf_counter()
            page = await http.get("/runs" + query)
            timings[name] = (time.perf_counter() - started) * 1000
            assert page.status_code == 200 and len(_ids(page.text)) == PAGE_SIZE
    print("list page at 100,000 runs (ms):", {k: round(v, 1) for k, v in timings.items()})
    assert max(timings.values()) < 2_000  # generous: the target is 200 ms (see the report)


# ---------------------------------------------------------------- over real processes


async def test_ui_serves_the_store_on_loopback_only(tmp_path: Path) -> None:
    _store(tmp_path / "runs.db", 3)
    env = {
        "PATH": os.environ.get("PATH", ""),
        **QUIET,
        "MCP_CODE_RUNS_DB": str(tmp_path / "runs.db"),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcp_code_mode.cli", "ui", "--port", "0"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        line = await asyncio.wait_for(asyncio.to_thread(proc.stderr.readline), 30)
        found = re.search(r"runs page at (http://127\.0\.0\.1:(\d+)/runs)", line)
        assert found, line
        async with httpx.AsyncClient(timeout=10) as http:
            page = await http.get(found.group(1))
            root = await http.get(found.group(1).removesuffix("/runs") + "/")
            rebound = await http.get(
                found.group(1), headers={"host": f"evil.example:{found.group(2)}"}
            )
        assert page.status_code == 200 and _ids(page.text) == [
            "run-000002",
            "run-000001",
            "run-000000",
        ]
        assert root.status_code == 307 and root.headers["location"] == "/runs"
        assert rebound.status_code == 421
    finally:
        proc.kill()
        proc.wait(timeout=10)
        if proc.stderr is not None:
            proc.stderr.close()


def _config(tmp_path: Path) -> Path:
    path = tmp_path / "mcp_servers.json"
    path.write_text(json.dumps({"servers": {"testsrv": server_entry(TEST_SERVER)}}))
    return path


FORGER = Implementation(name="evil\nrun_0000 fake row " + "x" * 300, version="1")
CODE = """\
first = tools.testsrv.echo(text="<script>alert(1)</script>")
pair = call_tools([("testsrv", "structured", {"n": 1}), ("testsrv", "structured", {"n": 2})])
[first, pair]
"""


@pytest.mark.slow
async def test_serve_puts_the_page_behind_the_token(tmp_path: Path) -> None:
    settings = {"MCP_CODE_HTTP_TOKEN": TOKEN, "MCP_CODE_RUNS_DB": str(tmp_path / "runs.db")}
    async with serving(_config(tmp_path), tmp_path / "serve.log", **settings) as instance:
        await wait_ready(instance)
        auth = {"authorization": f"Bearer {TOKEN}"}
        async with httpx.AsyncClient(base_url=instance.base, timeout=30) as http:
            for path in ("/runs", "/runs/x", "/runs/"):
                assert (await http.get(path)).status_code == 401
                assert (
                    await http.get(path, headers={"authorization": "Bearer no"})
                ).status_code == 401
            assert (
                await http.get("/runs", headers={**auth, "host": "evil.example"})
            ).status_code == 421
            assert (
                await http.get("/runs", headers={**auth, "origin": "http://evil.example"})
            ).status_code == 403
            async with Client(instance.url, auth=TOKEN, timeout=30) as client:
                reply = await client.call_tool("execute_code", {"code": CODE})
            assert reply.structured_content is not None and reply.structured_content["ok"]
            async with Client(instance.url, auth=TOKEN, timeout=30, client_info=FORGER) as client:
                await client.call_tool("execute_code", {"code": "1"})
            ids: list[str] = []
            for _ in range(100):  # the store's writer thread writes the run soon after
                ids = _ids((await http.get("/runs", headers=auth)).text)
                if len(ids) == 2:
                    break
                await asyncio.sleep(0.1)
            assert len(ids) == 2
            detail = (await http.get(f"/runs/{ids[1]}", headers=auth)).text
    store = RunStore.open(tmp_path / "runs.db")
    try:  # the client as clientInfo names it, with the identity its token was given
        clients = [run.client for run in store.list_runs()]
    finally:
        store.close()
    # A name of the client's own is one short line: it forges no row of `mcp-code-mode runs`
    # and never pushes the token's identity out of the record (outside attack 128).
    assert all(c.endswith("(token: mcp-code-mode-client)") for c in clients), clients
    assert clients[0].startswith("evil run_0000 fake row x") and "\n" not in clients[0]
    listed = subprocess.run(
        [str(Path(sys.executable).parent / "mcp-code-mode"), "runs"],
        env={**os.environ, **QUIET, "MCP_CODE_RUNS_DB": str(tmp_path / "runs.db")},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert not any(line.startswith("run_0000") for line in listed.stdout.splitlines())
    names = re.findall(
        r'data-order="(\d+)"><summary><span class="name">#\d+ ([\w.]+)</span>', detail
    )
    assert names == [
        ("0", "testsrv.echo"),
        ("1", "testsrv.structured"),
        ("2", "testsrv.structured"),
    ]
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in detail and "<script>alert" not in detail
