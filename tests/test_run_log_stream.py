"""Live log lines (contract §10): a client that asked for log messages gets a run's `log(...)`
lines as `notifications/message` while the run works; a client that did not gets none.

Both eras, through real parts: a fastmcp `Client` on MCP 2026-07-28 (which asks with the
request's log-level `_meta`), and a 2025-06-18 client over stdio to a real server process,
before and after it sends `logging/setLevel`.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastmcp import Client
from fastmcp.client.logging import LogMessage

from mcp_code_mode.executor_server import build_server
from mcp_code_mode.gateway import Gateway
from mcp_code_mode.runs.log_stream import RunLogStream

from .support import QUIET, ROOT, ConfigWriter, server_entry, start_gateway
from .test_http_serving import MCP_HEADERS, serving, wait_ready

BOARD = str(ROOT / "tests" / "servers" / "approvals_upstream.py")

SLOW_LOGGER = """
import asyncio
log("first", 1)
await asyncio.sleep(1.0)
for i in range(3):
    log(f"line {i}")
"done"
"""


async def test_log_lines_reach_a_client_that_asked_while_the_run_works(
    any_gateway: Gateway,
) -> None:
    """Locally, as the worker writes them; under Pyodide (no memory shared with the
    runner), all when the run is done, still ahead of its result."""
    got: list[tuple[float, LogMessage]] = []

    async def on_log(message: LogMessage) -> None:
        got.append((time.monotonic(), message))

    async with Client(build_server(any_gateway), log_handler=on_log) as client:
        result = await client.call_tool("execute_code", {"code": SLOW_LOGGER})
        ended = time.monotonic()
        await asyncio.sleep(0.2)  # the client runs each handler in a task of its own
    assert result.structured_content is not None and result.structured_content["ok"] is True
    ours = [(at, m) for at, m in got if m.logger == "execute_code"]
    texts = [m.data["msg"] for _, m in ours]
    assert "\n".join(texts).splitlines() == ["first 1", "line 0", "line 1", "line 2"]
    first_at = next(at for at, m in ours if "first 1" in m.data["msg"])
    if any_gateway.executor.name == "local":
        assert first_at < ended - 0.5, "the first line came only with the result"
    assert len(ours) == (2 if any_gateway.executor.name == "local" else 1)
    assert all(m.level == "info" for _, m in ours)


def _send(proc: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write((json.dumps(message) + "\n").encode())
    proc.stdin.flush()


def _until_reply(proc: subprocess.Popen[bytes], request_id: int) -> list[dict[str, Any]]:
    """Messages the server sent up to and including the reply to `request_id`."""
    assert proc.stdout is not None
    seen = []
    while True:
        line = proc.stdout.readline()
        assert line, "the server closed its stdout"
        seen.append(json.loads(line))
        if seen[-1].get("id") == request_id:
            return seen


def test_a_handshake_client_gets_log_lines_only_after_it_sets_a_level(tmp_path: Path) -> None:
    config = tmp_path / "mcp_servers.json"
    config.write_text('{"servers": {}}')
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcp_code_mode.executor_server", "--config", str(config)],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", **QUIET, "MCP_CODE_CACHE_DIR": str(tmp_path / "c")},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        hello = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        }
        _send(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello})
        assert _until_reply(proc, 1)[-1]["result"]["protocolVersion"] == "2025-06-18"
        _send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        call = {"name": "execute_code", "arguments": {"code": SLOW_LOGGER}}
        _send(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
        before = _until_reply(proc, 2)
        _send(
            proc,
            {"jsonrpc": "2.0", "id": 3, "method": "logging/setLevel", "params": {"level": "info"}},
        )
        assert "result" in _until_reply(proc, 3)[-1]
        _send(proc, {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": call})
        after = _until_reply(proc, 4)
    finally:
        proc.kill()
        proc.communicate()
    for replies in (before, after):  # the result carries every line either way
        result = json.loads(replies[-1]["result"]["content"][0]["text"])
        assert result["ok"] is True and result["logs"] == ["first 1", "line 0", "line 1", "line 2"]
    assert [m for m in before if m.get("method") == "notifications/message"] == []
    logged = [m["params"] for m in after if m.get("method") == "notifications/message"]
    assert logged and all(p["logger"] == "execute_code" for p in logged)
    assert "\n".join(p["data"]["msg"] for p in logged).splitlines()[0] == "first 1"


async def test_lines_logged_around_an_approval_reach_the_request_that_answers_it(
    write_config: ConfigWriter,
) -> None:
    """On MCP 2026-07-28 the question ends the first request (`input_required`) and the
    run goes on under the call that brings the answer: the lines logged before the question
    and after it all reach the client, through the request that is still open."""
    code = "log('before')\ntools.board.post_message(text='hi')\nlog('after')\n'done'"
    gateway = await start_gateway(write_config({"board": server_entry(BOARD)}))
    got: list[LogMessage] = []

    async def on_log(message: LogMessage) -> None:
        got.append(message)

    async def approve(message: str, response_type: Any, params: Any, context: Any) -> Any:
        return {"approve": True}

    try:
        server = build_server(gateway)
        async with Client(server, log_handler=on_log, elicitation_handler=approve) as client:
            result = await client.call_tool("execute_code", {"code": code})
            await asyncio.sleep(0.2)
    finally:
        await gateway.aclose()
    assert result.structured_content is not None, result
    assert result.structured_content["ok"] is True, result.structured_content
    texts = [m.data["msg"] for m in got if m.logger == "execute_code"]
    assert "\n".join(texts).splitlines() == ["before", "after"]


async def test_a_stream_holds_lines_until_it_has_a_sink_and_stops_at_its_cap() -> None:
    sent: list[str] = []

    async def sink(text: str) -> None:
        sent.append(text)

    stream = RunLogStream(None, max_chars=1_000)
    assert await stream.send(["held 1", "held 2"]) is True  # no sink yet: kept for later
    stream.retarget(sink)
    assert await stream.send(["now"]) is True
    assert sent == ["held 1\nheld 2\nnow"]
    assert await stream.send(["x" * 600, "y" * 600]) is False  # over the cap: the last message
    assert await stream.send(["more"]) is False and len(sent) == 2
    assert sum(map(len, sent)) <= 1_000 and sent[-1].endswith("are in the run's result)")
    assert "\x1b" not in "".join(sent)
    await stream.send(["\x1b[31mred"])  # nothing more is sent, clean or not
    assert len(sent) == 2


def _messages(reply: httpx.Response) -> list[dict[str, Any]]:
    """The JSON-RPC messages of one streamable-HTTP reply (a JSON body or an event stream)."""
    if reply.headers.get("content-type", "").startswith("text/event-stream"):
        events = [line[5:] for line in reply.text.splitlines() if line.startswith("data:")]
        return [json.loads(event) for event in events if event.strip()]
    return [reply.json()] if reply.text else []


@pytest.mark.slow
async def test_stateless_http_clients_do_not_share_a_log_level(tmp_path: Path) -> None:
    """Without a session id every client is the same key in fastmcp's levels: one client's
    `logging/setLevel` must not turn log messages on for another that never asked."""
    config = tmp_path / "mcp_servers.json"
    config.write_text('{"servers": {}}')
    call = {"name": "execute_code", "arguments": {"code": "log('x')\n1"}}
    hello = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    }
    headers = {**MCP_HEADERS, "mcp-protocol-version": "2025-06-18"}
    async with serving(config, tmp_path / "serve.log", MCP_CODE_HTTP_STATELESS="true") as instance:
        await wait_ready(instance)
        async with httpx.AsyncClient(timeout=60) as http:

            async def send(method: str, params: dict[str, Any]) -> list[dict[str, Any]]:
                body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
                return _messages(await http.post(instance.url, json=body, headers=headers))

            assert "result" in (await send("initialize", hello))[-1]
            assert "result" in (await send("logging/setLevel", {"level": "info"}))[-1]
            others = await send("tools/call", call)  # another client, never asked
    assert json.loads(others[-1]["result"]["content"][0]["text"])["logs"] == ["x"]
    assert [m for m in others if m.get("method") == "notifications/message"] == []
