"""Upstreams heal (contract §6): real upstream processes, driven through `Gateway.execute`.

HTTP upstreams run as their own processes (`tests/servers/healing_upstream.py --port N`)
and are killed and restarted on the same port mid-test, in both protocol eras: 2026-07-28
(sessionless) and, with `--legacy`, 2025-11-25 (a session id the restarted server no
longer knows, so it answers 404).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from mcp_code_mode.config import load_config
from mcp_code_mode.gateway import Gateway

from .support import ROOT, ConfigWriter, make_settings, server_entry

HEALING_SERVER = str(ROOT / "tests" / "servers" / "healing_upstream.py")
MALFORMED_SERVER = str(ROOT / "tests" / "servers" / "malformed_upstream.py")
ERAS = ["modern", "legacy"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class HttpUpstream:
    """A healing upstream over streamable HTTP on a fixed port, which a test can restart."""

    def __init__(self, *, legacy: bool, extra_args: tuple[str, ...] = ()) -> None:
        self.extra_args = extra_args
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.legacy = legacy
        self.proc: subprocess.Popen[bytes] | None = None

    async def start(self) -> None:
        args = [sys.executable, HEALING_SERVER, "--port", str(self.port), *self.extra_args]
        self.proc = subprocess.Popen(
            [*args, "--legacy"] if self.legacy else args,
            env={**os.environ, "FASTMCP_LOG_LEVEL": "WARNING"},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 90  # a loaded machine starts Python slowly
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"the upstream exited with {self.proc.returncode}"
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", self.port)
            except OSError:
                await asyncio.sleep(0.05)
                continue
            writer.close()
            await writer.wait_closed()
            return
        raise AssertionError("the HTTP upstream did not start listening within 90 s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)
        self.proc = None

    async def restart(self) -> None:
        self.stop()
        await self.start()


@pytest_asyncio.fixture(params=ERAS)
async def http_upstream(request: pytest.FixtureRequest) -> AsyncIterator[HttpUpstream]:
    upstream = HttpUpstream(legacy=request.param == "legacy")
    await upstream.start()
    try:
        yield upstream
    finally:
        upstream.stop()


async def start(path: Path, *, health_interval_s: float = 10.0, **settings: Any) -> Gateway:
    gateway = Gateway(make_settings(**settings), load_config(path))
    gateway.manager.health_interval_s = health_interval_s
    await gateway.start()
    return gateway


async def run(gw: Gateway, code: str, timeout_s: float = 20) -> dict[str, Any]:
    return (await gw.execute(code, timeout_s=timeout_s)).to_json()


async def value(gw: Gateway, code: str) -> Any:
    out = await run(gw, code)
    assert out["ok"], out["error"]
    return out["result"]


async def eventually(check: Callable[[], Awaitable[bool] | bool], within_s: float = 15) -> None:
    deadline = time.monotonic() + within_s
    while True:
        outcome = check()
        if not isinstance(outcome, bool):
            outcome = await outcome
        if outcome:
            return
        assert time.monotonic() < deadline, "the condition did not hold in time"
        await asyncio.sleep(0.1)


def tool_names(gw: Gateway, server: str) -> set[str]:
    return {tool.name for tool in gw.manager.tools().get(server, [])}


def status(gw: Gateway, name: str) -> dict[str, Any]:
    return next(row for row in gw.list_servers() if row["name"] == name)


async def test_http_upstream_restarted_on_the_same_port(
    http_upstream: HttpUpstream, write_config: ConfigWriter
) -> None:
    gw = await start(write_config({"h": {"url": http_upstream.url, "timeout_s": 10}}))
    try:
        first = await value(gw, "tools.h.boot()")
        assert (await value(gw, "tools.h.add_tool(name='short_lived')")) == "short_lived"
        await http_upstream.restart()
        # Legacy: the new process answers 404 for the old session; the gateway starts a
        # new one and sends the refused call once more, so the guest sees no failure.
        out = await run(gw, "call_tools([('h', 'boot', {})] * 4)")
        assert out["ok"], out["error"]
        assert [c["ok"] for c in out["tool_calls"]] == [True] * 4
        boots = {row["boot_id"] for row in out["result"]}
        assert len(boots) == 1 and first["boot_id"] not in boots
        assert status(gw, "h")["status"] == "ok"
        assert gw.manager.state("h") == "ok"
        if http_upstream.legacy:
            # The new session's tool list replaces the old one's: the added tool is gone.
            # (A sessionless upstream's list is followed by the health check: see below.)
            await eventually(lambda: "short_lived" not in tool_names(gw, "h"))
    finally:
        await gw.aclose()


async def test_list_servers_follows_an_http_upstream_down_and_back(
    http_upstream: HttpUpstream, write_config: ConfigWriter
) -> None:
    gw = await start(
        write_config({"h": {"url": http_upstream.url, "timeout_s": 10}}), health_interval_s=0.3
    )
    try:
        first = await value(gw, "tools.h.boot()")
        http_upstream.stop()
        # No call needed: the health check notices, and the row says why, naming the URL.
        await eventually(lambda: status(gw, "h")["status"] == "error")
        assert http_upstream.url in status(gw, "h")["error"]
        out = await run(gw, "tools.h.echo(text='anyone?')")
        assert out["error"]["type"] == "TOOL_ERROR"
        assert http_upstream.url in out["error"]["message"]
        await http_upstream.start()
        await eventually(lambda: status(gw, "h")["status"] == "ok")
        assert status(gw, "h")["error"] is None
        again = await value(gw, "tools.h.boot()")
        assert again["boot_id"] != first["boot_id"]
    finally:
        await gw.aclose()


async def test_a_call_after_the_upstream_came_back_reconnects_first(
    http_upstream: HttpUpstream, write_config: ConfigWriter
) -> None:
    """The next call re-establishes the connection, even before the supervisor retries."""
    gw = await start(write_config({"h": {"url": http_upstream.url, "timeout_s": 10}}))
    try:
        await value(gw, "tools.h.boot()")
        http_upstream.stop()
        out = await run(gw, "tools.h.boot()")
        assert out["error"]["type"] == "TOOL_ERROR" and http_upstream.url in out["error"]["message"]
        assert status(gw, "h")["status"] == "error"
        await http_upstream.start()
        assert (await value(gw, "tools.h.echo(text='back')")) == "back"
        assert status(gw, "h")["status"] == "ok"
    finally:
        await gw.aclose()


async def test_a_sessionless_upstream_tool_list_is_followed_without_notifications(
    write_config: ConfigWriter,
) -> None:
    """2026-07-28 over HTTP: a restart changes nothing for the connection, and the tools
    the old process added vanish from the catalog by the health check's tools/list."""
    upstream = HttpUpstream(legacy=False)
    await upstream.start()
    gw = await start(write_config({"h": {"url": upstream.url}}), health_interval_s=0.3)
    try:
        assert (await value(gw, "tools.h.add_tool(name='short_lived')")) == "short_lived"
        assert "short_lived" in tool_names(gw, "h")
        await upstream.restart()
        await eventually(lambda: "short_lived" not in tool_names(gw, "h"))
        assert status(gw, "h")["status"] == "ok"
        out = await run(gw, "tools.h.short_lived()")
        assert out["error"]["type"] == "TOOL_ERROR"
    finally:
        await gw.aclose()
        upstream.stop()


@pytest.mark.parametrize("transport", ["stdio", "http-modern", "http-legacy"])
async def test_timed_out_call_is_cancelled_upstream_and_the_connection_kept(
    transport: str, write_config: ConfigWriter
) -> None:
    upstream = None
    if transport == "stdio":
        entry: dict[str, Any] = server_entry(HEALING_SERVER)
    else:
        upstream = HttpUpstream(legacy=transport == "http-legacy")
        await upstream.start()
        entry = {"url": upstream.url}
    # The default call timeout (MCP_CODE_TIMEOUT_S) is short here; runs get their own.
    gw = await start(write_config({"t": entry}), timeout_s=2.0)
    try:
        first = await value(gw, "tools.t.boot()")
        started = time.perf_counter()
        out = await run(gw, "tools.t.sleep(seconds=60)")
        assert out["error"]["type"] == "TOOL_ERROR"
        assert "timed out after 2s" in out["error"]["message"]
        assert time.perf_counter() - started < 8
        # The same connection serves the next call at once: same process, no reconnect.
        assert (await value(gw, "[tools.t.echo(text='next'), tools.t.boot()]")) == ["next", first]
        assert status(gw, "t")["status"] == "ok"

        async def cancelled_upstream() -> bool:
            stats = await value(gw, "tools.t.stats()")
            return bool(stats["cancelled"] == 1 and stats["finished"] == 0)

        await eventually(cancelled_upstream, within_s=5)
    finally:
        await gw.aclose()
        if upstream is not None:
            upstream.stop()


@pytest.mark.parametrize("transport", ["stdio", "http-modern", "http-legacy"])
async def test_tools_list_changed_refreshes_the_catalog(
    transport: str, write_config: ConfigWriter
) -> None:
    upstream = None
    if transport == "stdio":
        entry: dict[str, Any] = server_entry(HEALING_SERVER)
    else:
        upstream = HttpUpstream(legacy=transport == "http-legacy")
        await upstream.start()
        entry = {"url": upstream.url}
    gw = await start(write_config({"t": entry}))
    try:
        count = status(gw, "t")["tool_count"]
        assert "freshly_added" not in [hit["tool"] for hit in gw.search_tools("freshly_added")]
        # Callable right after the call that added it returns, in the same run...
        code = (
            "call_tool('t', 'add_tool', {'name': 'freshly_added'})\ncall_tool('t', 'freshly_added')"
        )
        assert (await value(gw, code)) == "freshly_added ok"
        # ...and in the next run's `tools` namespace, search and docs.
        assert (await value(gw, "tools.t.freshly_added()")) == "freshly_added ok"
        assert gw.search_tools("freshly_added")[0]["tool"] == "freshly_added"
        assert "freshly_added" in gw.get_tool_docs("t", "freshly_added")
        assert status(gw, "t")["tool_count"] == count + 1
    finally:
        await gw.aclose()
        if upstream is not None:
            upstream.stop()


@pytest.mark.parametrize("era", ERAS)
async def test_malformed_reply_fails_only_that_call(era: str, write_config: ConfigWriter) -> None:
    args = [MALFORMED_SERVER, "--modern"] if era == "modern" else [MALFORMED_SERVER]
    gw = await start(write_config({"m": {"command": "python", "args": args}}))
    try:
        pid = (await value(gw, "tools.m.boot()"))["pid"]
        broken = ["content_not_list", "text_not_string"]
        if era == "modern":  # a 2025-shaped result on a 2026-07-28 connection
            broken.append("no_result_type")
        code = (
            "errors = []\n"
            f"for name in {broken!r}:\n"
            "    try:\n"
            "        call_tool('m', name)\n"
            "    except ToolError as e:\n"
            "        errors.append(e.message)\n"
            "errors"
        )
        errors = await value(gw, code)
        assert len(errors) == len(broken)
        assert all("malformed reply" in message for message in errors), errors
        assert "content: Input should be a valid list" in errors[0]
        out = await run(gw, "tools.m.content_not_list()")
        assert out["error"]["type"] == "TOOL_ERROR" and "malformed reply" in out["error"]["message"]
        # A line that is not JSON-RPC at all is skipped; the reply after it still counts.
        assert (await value(gw, "tools.m.garbage_first()")) == "after garbage"
        # Nothing was torn down: the same process answers, and the server is ok.
        assert (await value(gw, "tools.m.boot()"))["pid"] == pid
        assert status(gw, "m")["status"] == "ok"
    finally:
        await gw.aclose()


async def test_stdio_upstream_killed_between_calls_is_back_on_the_next_call(
    write_config: ConfigWriter,
) -> None:
    gw = await start(write_config({"t": server_entry(HEALING_SERVER)}))
    try:
        pid = (await value(gw, "tools.t.boot()"))["pid"]
        os.kill(pid, signal.SIGKILL)
        await eventually(lambda: status(gw, "t")["status"] == "error")
        assert "command:" in status(gw, "t")["error"]
        again = await value(gw, "tools.t.boot()")
        assert again["pid"] != pid
        assert status(gw, "t")["status"] == "ok"
    finally:
        await gw.aclose()


async def test_start_failures_name_the_command_stderr_or_url(write_config: ConfigWriter) -> None:
    refused = f"http://127.0.0.1:{free_port()}/mcp"
    gw = await start(
        write_config(
            {
                "missing": {"command": "python", "args": ["no/such/script.py"]},
                "refused": {"url": refused},
            }
        )
    )
    try:
        missing = status(gw, "missing")
        assert missing["status"] == "error"
        assert f"command: {sys.executable} no/such/script.py" in missing["error"]
        assert "stderr:" in missing["error"] and "No such file or directory" in missing["error"]
        assert status(gw, "refused")["status"] == "error"
        assert f"url: {refused}" in status(gw, "refused")["error"]
        out = await run(gw, "tools.missing.anything()")
        assert out["error"]["type"] == "TOOL_ERROR"
        assert "no/such/script.py" in out["error"]["message"]
        out = await run(gw, "call_tool('refused', 'anything')")
        assert out["error"]["type"] == "TOOL_ERROR" and refused in out["error"]["message"]
    finally:
        await gw.aclose()


@pytest.mark.slow  # whole commands in subprocesses
async def test_conformance_wrapper_drives_the_gateway_client(http_upstream: HttpUpstream) -> None:
    """scripts/conformance_client.py as the conformance suite runs it (the suite itself,
    which needs Node 22, runs in .ci/conformance)."""
    script = str(ROOT / "scripts" / "conformance_client.py")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_")}

    def wrapper(url: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, script, url],
            env={**env, "MCP_CONFORMANCE_SCENARIO": "initialize"},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    ok = await asyncio.to_thread(wrapper, http_upstream.url)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert json.loads(ok.stdout)["result"] == ["ok"]
    refused = await asyncio.to_thread(wrapper, f"http://127.0.0.1:{free_port()}/mcp")
    assert refused.returncode == 1
    assert "All connection attempts failed" in refused.stderr + refused.stdout
