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

from fastmcp import Client
from fastmcp.client.logging import LogMessage

from mcp_code_mode.executor_server import build_server
from mcp_code_mode.gateway import Gateway

from .support import QUIET

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
