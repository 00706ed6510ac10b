"""A client that cancels its `execute_code` stops the run, whether or not it was asked."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from mcp_code_mode.answer_routing import state_security
from mcp_code_mode.executor_server import build_server

from .support import ROOT, server_entry, start_gateway, the_one_run

BOARD = str(ROOT / "tests" / "servers" / "approvals_upstream.py")
SLOW_POSTS = (
    "import asyncio\nfor i in range(200):\n"
    "    tools.board.post_message(text=str(i))\n    await asyncio.sleep(0.1)\n'done'"
)


class _Yes:
    """Answers every question with the field the README names, and keeps their schemas."""

    def __init__(self) -> None:
        self.fields: list[list[str]] = []

    async def __call__(
        self, message: str, response_type: object, params: Any, ctx: object
    ) -> object:
        self.fields.append(sorted(params.requested_schema["properties"]))
        return {"approve": True}


def _posted(log: Path) -> int:
    return len(log.read_text(encoding="utf-8").splitlines()) if log.exists() else 0


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_cancelled_call_stops_its_approved_writes(tmp_path: Path, mode: str) -> None:
    """A 2026-07-28 client's run works in a task of its own while its questions go back and
    forth: cancelling the call cancelled only the wait for it, and the approved writes went
    on to the end, recorded as a run that ended well (outside attack 146)."""
    log = tmp_path / "board.log"
    config = tmp_path / "mcp_servers.json"
    entry = server_entry(BOARD)
    entry["env"]["BOARD_LOG"] = str(log)
    config.write_text(json.dumps({"servers": {"board": entry}}), encoding="utf-8")
    gateway = await start_gateway(config, pool_size=1, runs_db=str(tmp_path / "runs.db"))
    try:
        client = Client(build_server(gateway), elicitation_handler=(yes := _Yes()), mode=mode)
        async with client:
            call = asyncio.ensure_future(client.call_tool("execute_code", {"code": SLOW_POSTS}))
            for _ in range(600):  # approved, and writing
                if _posted(log) >= 3:
                    break
                await asyncio.sleep(0.05)
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            await asyncio.sleep(1.0)  # whatever was in flight lands
            at_cancel = _posted(log)
            await asyncio.sleep(3.0)
            assert 3 <= _posted(log) == at_cancel < 200
        # Before 2026-07-28 too the one field is `approve` (it was `value`: attack 146).
        assert yes.fields == [["approve"]]
    finally:
        await gateway.aclose()  # writes what is queued
    run = the_one_run(gateway.recorder.path)
    assert not run.ok
    assert "the client cancelled the run before it ended" in json.dumps(run.error)


@pytest.mark.parametrize("key", [None, "k" * 64])
def test_a_question_state_lives_as_long_as_its_question_waits(key: str | None) -> None:
    """The SDK's states expire after 600 s: an answer given in time under a longer
    MCP_CODE_APPROVAL_TIMEOUT_S was refused as "Invalid or expired" (outside attack 146)."""
    assert state_security(key, 900.0).ttl > 900.0
    assert state_security(key, 5.0).ttl <= 600.0  # and no longer than needed
