"""What one run can make the gateway hold or say: arguments that expand when parsed, and a
secret an upstream hands back (outside attack 54). Contract §7."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from mcp_code_mode.gateway import Gateway

from .support import TEST_SERVER, server_entry, start_gateway

_TOKEN = "tok-9f3a-secret-7c1e"


@pytest.fixture
async def gateway(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Gateway]:
    monkeypatch.setenv("MCP_TEST_UPSTREAM_TOKEN", _TOKEN)
    entry = server_entry(TEST_SERVER)
    entry["env"] = {**entry["env"], "UPSTREAM_TOKEN": "${MCP_TEST_UPSTREAM_TOKEN}"}
    path = tmp_path / "mcp_servers.json"
    path.write_text(json.dumps({"servers": {"t": entry}}), encoding="utf-8")
    gw = await start_gateway(path, timeout_s=60.0)
    yield gw
    await gw.aclose()


async def test_arguments_that_expand_are_refused_before_they_are_parsed(gateway: Gateway) -> None:
    """4 million empty lists are 8 MB of JSON and about 400 MB of Python objects: the
    gateway refuses the message by its estimated cost instead of building them (it used
    to build 3 GB for 60 MB of them before the call-size check refused the call)."""
    code = (
        "lists = [[]] * 4000\nnested = [lists] * 1000\n"
        "call_tools([('t', 'echo', {'text': 'x', 'tags': nested})])"
    )
    out = (await gateway.execute(code, timeout_s=60)).to_json()
    assert out["error"]["type"] == "EXECUTOR_ERROR", out
    assert "would take about" in out["error"]["message"], out
    assert (await gateway.execute("1 + 1")).result == 2


async def test_an_upstream_secret_never_reaches_the_reply(gateway: Gateway) -> None:
    code = (
        f"text = tools.t.echo(text='{_TOKEN}')\nprint(text)\nlog(text)\n"
        "{'value': text, text: [text]}"
    )
    out = (await gateway.execute(code)).to_json()
    assert out["ok"], out
    assert _TOKEN not in json.dumps(out), out
    assert "${MCP_TEST_UPSTREAM_TOKEN}" in out["stdout"], out
