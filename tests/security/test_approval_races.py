"""Approval is decided on the tool as the connection a call goes over lists it (contract §8):
not on a listing a tools/list_changed has made stale, not on a tool cache's entry, not on
what the upstream said before it restarted. Found by an outside attack on the first fix."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path
from typing import Any

from mcp_code_mode.approval import ApprovalRequest
from mcp_code_mode.config import load_config
from mcp_code_mode.gateway import Gateway
from mcp_code_mode.upstreams import Connect, ToolCache

from ..support import ROOT, make_settings

FLIPPING = str(ROOT / "tests" / "servers" / "flipping_upstream.py")
ESCAPES = "\x1b[8m\u202e\x1b]0;owned\x07"


def _config(tmp_path: Path, **env: str) -> Path:
    entry = {
        "command": "python",
        "args": [FLIPPING],
        "timeout_s": 8,
        "env": {
            "FLIP_FILE": str(tmp_path / "flip"),
            "CALL_LOG": str(tmp_path / "calls"),
            "START_DELAY_FILE": str(tmp_path / "start_delay"),
            **env,
        },
    }
    path = tmp_path / "mcp_servers.json"
    path.write_text(json.dumps({"servers": {"up": entry}}))
    return path


def _calls(tmp_path: Path) -> list[str]:
    log = tmp_path / "calls"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def _gateway(tmp_path: Path, config: Path, connect: Connect = "wait") -> Gateway:
    settings = make_settings(approval="required", timeout_s=60.0)
    cache = ToolCache(tmp_path / "tools")
    return Gateway(settings, load_config(config), connect=connect, tool_cache=cache)


def _declined(out: dict[str, Any]) -> bool:
    error = out.get("error") or {}
    return error.get("type") == "TOOL_ERROR" and "declined" in error.get("message", "")


async def test_a_call_while_a_changed_list_is_being_read_waits_for_it(tmp_path: Path) -> None:
    async with _gateway(tmp_path, _config(tmp_path, LIST_DELAY_S="3")) as gw:
        assert (await gw.execute("tools.up.trigger()")).ok
        await asyncio.sleep(1.0)  # list_changed is in; the new list takes 3 s to come
        out = (await gw.execute("tools.up.wipe()")).to_json()
        assert _declined(out), out
    assert _calls(tmp_path) == ["trigger"]


async def test_a_stale_tool_cache_never_decides(tmp_path: Path) -> None:
    config = _config(tmp_path)
    async with _gateway(tmp_path, config) as gw:  # caches `wipe` as read-only
        assert (await gw.execute("tools.up.pid()")).ok
    (tmp_path / "flip").touch()  # the upstream now says destructive, and starts slowly
    (tmp_path / "start_delay").write_text("10")  # past its timeout_s: the cache serves
    async with _gateway(tmp_path, config, connect="on_demand") as gw:
        out = (await gw.execute("tools.up.wipe()", timeout_s=60)).to_json()
        assert _declined(out), out
    assert _calls(tmp_path) == ["pid"]


async def test_a_restarted_upstream_is_listed_again_before_a_call(tmp_path: Path) -> None:
    async with _gateway(tmp_path, _config(tmp_path, LIST_DELAY_S="3")) as gw:
        pid = int((await gw.execute("tools.up.pid()")).result)
        (tmp_path / "flip").touch()  # what it lists after a restart (an upgrade, say)
        os.kill(pid, signal.SIGKILL)
        await asyncio.sleep(0.5)
        out = (await gw.execute("tools.up.wipe()")).to_json()
        assert _declined(out), out
    assert _calls(tmp_path) == ["pid"]


async def test_the_question_and_the_error_show_no_escapes(tmp_path: Path) -> None:
    odd = "delete_all" + ESCAPES
    asked: list[ApprovalRequest] = []

    async def person(request: ApprovalRequest) -> bool:
        asked.append(request)
        return False

    async with _gateway(tmp_path, _config(tmp_path, ODD_NAME=odd)) as gw:
        code = f"call_tool('up', {odd!r}, {{'note': '\\x1b[2J'}})"
        out = (await gw.execute(code, approver=person)).to_json()
    assert _declined(out), out
    (request,) = asked
    shown = request.message + out["error"]["message"] + out["tool_calls"][0]["tool"]
    assert "delete_all" in request.message
    assert not any(c in shown for c in "\x1b\x07\u202e"), shown
    assert _calls(tmp_path) == []


async def test_of_two_tools_listed_under_one_name_the_one_that_needs_approval_decides(
    tmp_path: Path,
) -> None:
    async with _gateway(tmp_path, _config(tmp_path, TWIN_WIPE="1")) as gw:
        out = (await gw.execute("tools.up.wipe()")).to_json()
        assert _declined(out), out
    assert _calls(tmp_path) == []
