"""A reply that fits MCP_CODE_MAX_OUTPUT_CHARS also fits what a client reads over HTTP."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from .support import QUIET
from .test_http_serving import _config, serving, wait_ready


async def test_a_reply_of_escaped_characters_still_reaches_the_client(tmp_path: Path) -> None:
    """From MCP 2026-07-28 on, over HTTP, the SDK escapes every non-ASCII character (26
    bytes an emoji, text and structured copies together): 60,000 emoji of logs, within the
    character limit, made a 1.4 MB event the SDK's client refuses past 1 MiB, and the caller
    got a protocol error instead of a result (outside attack 148)."""
    async with serving(_config(tmp_path), tmp_path / "serve.log") as instance:
        await wait_ready(instance)
        async with Client(instance.url) as client:
            cut = await client.call_tool(
                "execute_code", {"code": 'log("\\U0001F600" * 60000)\n1'}, raise_on_error=False
            )
            fits = await client.call_tool(
                "execute_code", {"code": 'x = "中" * 15000\nx'}, raise_on_error=False
            )
    reply = json.loads(cut.content[0].text)
    assert (
        reply["error"]["type"] == "OUTPUT_LIMIT" and "as MCP sends it" in reply["error"]["message"]
    )
    assert json.loads(fits.content[0].text)["result"] == "中" * 15000  # within the bound: whole


async def test_over_stdio_a_reply_is_not_cut_for_how_http_sends_it(tmp_path: Path) -> None:
    """Over stdio the SDK does not escape non-ASCII: the HTTP bound cut replies that fit
    there (review 150)."""
    config = tmp_path / "mcp_servers.json"
    config.write_text(json.dumps({"servers": {}}), encoding="utf-8")
    transport = StdioTransport(
        command=sys.executable,
        args=["-m", "mcp_code_mode.executor_server", "--config", str(config)],
        env={"PATH": "/usr/bin:/bin", **QUIET, "MCP_CODE_CACHE_DIR": str(tmp_path / "c")},
        cwd=str(tmp_path),
    )
    async with Client(transport) as client:
        done = await client.call_tool(
            "execute_code", {"code": 'log("\\U0001F600" * 60000)\n1'}, raise_on_error=False
        )
    reply = json.loads(done.content[0].text)
    assert reply["ok"] and reply["logs"] == ["\U0001f600" * 60000], reply["error"]
