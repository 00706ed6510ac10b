"""A `call_tools` batch reaches the host in pieces of about `BATCH_PIECE_BYTES` and is made
whole at its last (protocol.CallRequest): the host parses no worker line larger than a piece
or one call. A batch of 70 legal 1 MB calls was one line past `LINE_LIMIT`, which ended the
run as an executor error; one of 60 was parsed in one C call that held the gateway's event
loop 0.2-0.4 s (outside attack 86)."""

from __future__ import annotations

import json
from pathlib import Path

from mcp_code_mode.gateway import Gateway
from mcp_code_mode.sandbox.channel import LINE_LIMIT
from mcp_code_mode.sandbox.protocol import BATCH_PIECE_BYTES

from ..support import TEST_SERVER, server_entry, start_gateway


async def test_a_batch_longer_than_a_worker_line_is_made_whole(gateway: Gateway) -> None:
    calls = LINE_LIMIT // 990_000 + 5  # each under MCP_CODE_MAX_CALL_BYTES, all over the line
    code = (
        'text = "n" * 990_000\n'
        f'got = call_tools([("notes", "search_notes", {{"query": text + str(i)}}) '
        f"for i in range({calls})])\n"
        "[type(r).__name__ for r in got]"
    )
    reply = await gateway.execute(code, timeout_s=120)
    assert reply.ok, reply.error
    assert len(reply.result) == calls and "ToolError" not in reply.result
    assert sum(getattr(call, "count", 1) for call in reply.tool_calls) == calls


async def test_pieces_keep_the_batch_order(any_gateway: Gateway) -> None:
    size = BATCH_PIECE_BYTES * 2 // 5  # two calls a piece: five calls in three pieces
    code = (
        f'texts = [str(i) * {size} for i in range(5)] + ["short"]\n'
        'got = call_tools([("testsrv", "echo", {"text": t}) for t in texts])\n'
        "[(r[:1], len(r)) if isinstance(r, str) else repr(r) for r in got]"
    )
    reply = await any_gateway.execute(code, timeout_s=120)
    assert reply.ok, reply.error
    assert reply.result == [[str(i), size] for i in range(5)] + [["s", 5]]


async def test_a_batch_past_the_call_limit_makes_none_of_its_calls(tmp_path: Path) -> None:
    path = tmp_path / "mcp_servers.json"
    path.write_text(json.dumps({"servers": {"t": server_entry(TEST_SERVER)}}), encoding="utf-8")
    gateway = await start_gateway(path, max_tool_calls=4)
    size = BATCH_PIECE_BYTES // 3  # the limit is passed at the second piece
    code = f'call_tools([("t", "echo", {{"text": "x" * {size}}})] * 6)'
    try:
        reply = await gateway.execute(code, timeout_s=60)
    finally:
        await gateway.aclose()
    assert reply.error is not None and reply.error.type == "TOOL_CALL_LIMIT"
    assert reply.tool_calls == []
