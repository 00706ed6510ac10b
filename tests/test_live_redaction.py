"""What a client is sent while a run works is redacted as its result is (contract §7): a
secret an upstream hands back, logged or reported by guest code, went out as it was in live
log messages and progress notifications (outside attack 88)."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.client.logging import LogMessage

from mcp_code_mode.config import GatewayConfig
from mcp_code_mode.executor_server import build_server

from .support import SECRET, TEST_SERVER, ConfigWriter, server_entry, start_gateway

LEAKER = """
secret = tools.testsrv.env(name="TOKEN")
log("the token is", secret)
log("x" * 1990 + secret)  # cut by the stream's clip
log(secret[:6] + "\\x00" + secret[6:])  # cleaning takes the NUL out: then redacted
try:
    call_tool("testsrv", secret)
except ToolError:
    pass
# the worker cuts this at 1,000 characters, in a copy; the host's redaction shrinks the
# whole copies, which brings the cut one within the 200 it shows (attack 89)
progress(2, 2, "keys: " + " ".join([secret] * 60))  # the last is always sent
"done"
"""


async def test_live_logs_and_progress_are_redacted(write_config: ConfigWriter) -> None:
    testsrv = server_entry(TEST_SERVER, env={"TOKEN": "${MCP_CODE_TEST_SECRET}"})
    gateway = await start_gateway(write_config({"testsrv": testsrv}))
    logs: list[str] = []
    progress: list[str] = []

    async def on_log(message: LogMessage) -> None:
        logs.append(str(message.data))

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(str(message))

    try:
        async with Client(
            build_server(gateway), log_handler=on_log, progress_handler=on_progress
        ) as client:
            result = await client.call_tool("execute_code", {"code": LEAKER})
            await asyncio.sleep(0.5)  # the client runs each handler in a task of its own
    finally:
        await gateway.aclose()
    assert result.structured_content is not None and result.structured_content["ok"]
    sent = "\n".join(logs + progress)
    assert "the token is ${MCP_CODE_TEST_SECRET}" in sent
    assert "keys: ${MCP_CODE_TEST_SECRET} ${MCP_CODE_TEST_SECRET}" in sent
    assert SECRET[:8] not in sent, sent[-300:]
    calls = result.structured_content["tool_calls"]
    assert calls[-1]["tool"] == "${MCP_CODE_TEST_SECRET}", calls


def test_many_lines_redact_in_linear_time() -> None:
    """100,000 log lines and 9 secrets: 3 s when each call built every spelling again."""
    secrets = tuple((f"sk-live-{i}-{'q' * 20}", f"${{K{i}}}") for i in range(9))
    config = GatewayConfig(servers={}, secrets=secrets)
    lines: list[Any] = [""] * 100_000 + [f"a {secrets[3][0]} b"]
    started = time.perf_counter()
    redacted = [config.redact(line) for line in lines]
    assert time.perf_counter() - started < 1.0  # generous: 0.06 s here
    assert redacted[-1] == "a ${K3} b"


async def test_text_cut_before_it_is_redacted_keeps_no_part_of_a_secret(
    write_config: ConfigWriter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 300-character secret in text the worker cut (an error message at 4,000
    characters, a log line read 64 KB at a time): redaction shrank the copies before the
    cut, which brought the cut copy's first 222 characters into what was shown (attack 90)."""
    long_secret = "pem-" + "".join(chr(97 + i % 26) for i in range(296))
    monkeypatch.setenv("MCP_CODE_TEST_LONG", long_secret)
    testsrv = server_entry(TEST_SERVER, env={"TOKEN": "${MCP_CODE_TEST_LONG}"})
    gateway = await start_gateway(write_config({"testsrv": testsrv}))
    code = (
        'secret = tools.testsrv.env(name="TOKEN")\n'
        'log("notes: " + " ".join([secret] * 250))\n'
        'raise RuntimeError("unexpected: " + " ".join([secret] * 40))'
    )
    logs: list[str] = []

    async def on_log(message: LogMessage) -> None:
        logs.append(str(message.data))

    try:
        async with Client(build_server(gateway), log_handler=on_log) as client:
            result = await client.call_tool("execute_code", {"code": code}, raise_on_error=False)
            await asyncio.sleep(0.5)
    finally:
        await gateway.aclose()
    reply = result.structured_content
    assert reply is not None and reply["error"]["type"] == "RUNTIME_ERROR"
    shown = json.dumps(reply) + "\n".join(logs)
    assert "${MCP_CODE_TEST_LONG}" in shown and long_secret[:12] not in shown


async def test_stdout_cut_at_the_output_limit_keeps_no_part_of_a_secret(
    write_config: ConfigWriter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker keeps stdout to MCP_CODE_MAX_OUTPUT_CHARS, cutting the last write: its
    copy of a secret was cut to 8 characters, which redaction did not know (attack 91
    kept 239 of 300)."""
    long_secret = "pem-" + "".join(chr(97 + i % 26) for i in range(296))
    monkeypatch.setenv("MCP_CODE_TEST_LONG", long_secret)
    testsrv = server_entry(TEST_SERVER, env={"TOKEN": "${MCP_CODE_TEST_LONG}"})
    gateway = await start_gateway(write_config({"testsrv": testsrv}))
    code = (  # 330 lines of 303 characters, then 10 of the next kept: "t=pem-abcd"
        'secret = tools.testsrv.env(name="TOKEN")\nfor i in range(400):\n    print("t=" + secret)'
    )
    try:
        reply = await gateway.execute(code, timeout_s=60)
    finally:
        await gateway.aclose()
    assert reply.error is not None and reply.error.type == "OUTPUT_LIMIT"
    assert reply.stdout.count("${MCP_CODE_TEST_LONG}") == 330
    assert long_secret[:4] not in reply.stdout, reply.stdout[-40:]


async def test_a_progress_message_cut_through_a_secret_keeps_none_of_it(
    write_config: ConfigWriter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker sends 1,000 characters of a message; control characters cleaned out of
    them made it look uncut, and the secret's start was shown (attack 92)."""
    long_secret = "pem-" + "".join(chr(97 + i % 26) for i in range(296))
    monkeypatch.setenv("MCP_CODE_TEST_LONG", long_secret)
    testsrv = server_entry(TEST_SERVER, env={"TOKEN": "${MCP_CODE_TEST_LONG}"})
    gateway = await start_gateway(write_config({"testsrv": testsrv}))
    code = 'progress(1, 1, "\\x00" * 900 + " key=" + tools.testsrv.env(name="TOKEN"))'
    got: list[str] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        got.append(str(message))

    try:
        async with Client(build_server(gateway), progress_handler=on_progress) as client:
            await client.call_tool("execute_code", {"code": code})
            await asyncio.sleep(0.5)
    finally:
        await gateway.aclose()
    assert got and all(long_secret[:8] not in message for message in got), got


async def test_what_upstreams_describe_and_log_is_redacted_everywhere_it_is_shown(
    write_config: ConfigWriter, caplog: pytest.LogCaptureFixture
) -> None:
    """A key the config gives an upstream, in its tool's description and its log message:
    results were redacted, but `search_tools`, `get_tool_docs` and `list_servers` over MCP,
    the servers line of `tools/list` and `instructions`, and the gateway's log line of the
    upstream's message showed it (outside attack 123)."""
    description = "keys: ${MCP_CODE_TEST_SECRET}"  # the config's own text holds it too
    testsrv = server_entry(
        TEST_SERVER, env={"TOKEN": "${MCP_CODE_TEST_SECRET}"}, description=description
    )
    gateway = await start_gateway(write_config({"testsrv": testsrv}))
    shown: list[str] = []
    try:
        async with Client(build_server(gateway)) as client:
            shown.append(client.instructions or "")
            shown.append(json.dumps([t.model_dump(mode="json") for t in await client.list_tools()]))
            for tool, args in (
                ("search_tools", {"query": "says what its key is"}),
                ("get_tool_docs", {"server": "testsrv", "tool": "keyed"}),
                ("get_tool_docs", {"server": "testsrv"}),
                ("list_servers", {}),
                ("execute_code", {"code": "tools.testsrv.keyed()"}),
            ):
                result = await client.call_tool(tool, args)
                shown.append(result.content[0].text)  # type: ignore[union-attr]
    finally:
        await gateway.aclose()
    logged = [r.getMessage() for r in caplog.records if "logging in with" in r.getMessage()]
    assert logged, [r.getMessage() for r in caplog.records][-5:]
    shown += logged
    assert "Says what its key is: ${MCP_CODE_TEST_SECRET}" in shown[2], shown[2]
    assert "keys: ${MCP_CODE_TEST_SECRET}" in shown[5]
    assert "logging in with ${MCP_CODE_TEST_SECRET}" in logged[0]
    for text in shown:
        assert SECRET not in text and SECRET[:8] not in text, text[:500]
