"""Approval cannot be skipped (contract §7, §8): every call path, in every connection state,
on both executors, against a real upstream that writes down each destructive call it receives.

The upstream (`approvals_upstream.py`) is slow to answer `initialize`, so that calls made
while it connects really are made while it connects. Its log file outlives it: a line there
means a call that needed approval reached it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import dspy
import pytest
from dspy.utils.dummies import DummyLM
from fastmcp import Client

from mcp_code_mode import agent
from mcp_code_mode.approval import ApprovalRequest
from mcp_code_mode.config import load_config
from mcp_code_mode.executor_server import build_server
from mcp_code_mode.gateway import Gateway
from mcp_code_mode.sandbox.pyodide_setup import PYODIDE_VERSION
from mcp_code_mode.settings import cache_root
from mcp_code_mode.upstreams import Connect

from ..conftest import require_pyodide
from ..support import QUIET, ROOT, make_settings, server_entry

BOARD = str(ROOT / "tests" / "servers" / "approvals_upstream.py")
SCRIPT = Path(sys.executable).parent / "mcp-code-mode"
START_DELAY_S = 1.5

# Guest code for each call path; each posts `tag`. The last expression is what the call gave
# (or the ToolError in a call_tools slot), so a bypass shows in the result too.
PATHS = {
    "attribute": "tools.board.post_message(text={tag!r})",
    "call_tool": "call_tool('board', 'post_message', {{'text': {tag!r}}})",
    "computed name": "call_tool('bo' + 'ard', 'post_' + 'message', {{'text': {tag!r}}})",
    "call_tools": "call_tools([('board', 'post_message', {{'text': {tag!r}}})])[0]",
    "call_tools batch": (
        "r = call_tools([('board', 'read_posts', {{}}), ('bo' + 'ard', 'delete_posts', {{}}),"
        " ('board', 'post_message', {{'text': {tag!r}}})])\nr[2]"
    ),
    "await": "await tools.board.post_message(text={tag!r})",
    "await call_tool": "await call_tool('board', 'post_message', {{'text': {tag!r}}})",
}

# connected: `wait`; connecting: `background` while the upstream still starts, with an
# empty tool cache (the tool is unknown) or a warm one (known from the cache); on demand:
# nothing started until code needs it, cache empty.
STATES: dict[str, tuple[Connect, bool]] = {
    "connected": ("wait", False),
    "connecting, cold cache": ("background", False),
    "connecting, warm cache": ("background", True),
    "on demand, cold cache": ("on_demand", False),
}


class Person:
    def __init__(self, answer: bool | None) -> None:
        self.answer = answer
        self.asked: list[ApprovalRequest] = []

    async def __call__(self, request: ApprovalRequest) -> bool | None:
        self.asked.append(request)
        return self.answer


def _config(tmp_path: Path, log: Path) -> Path:
    env = {**QUIET, "BOARD_LOG": str(log), "BOARD_START_DELAY_S": str(START_DELAY_S)}
    config = tmp_path / "mcp_servers.json"
    config.write_text(json.dumps({"servers": {"board": server_entry(BOARD, env=env)}}))
    return config


async def _warm_cache(config: Path, cache: Path) -> None:
    settings = make_settings(cache_dir=str(cache))
    async with Gateway(settings, load_config(config)):  # `wait`: lists and caches the tools
        pass


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return tmp_path / "reached.log"


def _cache_dir(tmp_path: Path) -> Path:
    """A cache folder of this test's own (its tool cache starts empty) with the installed
    Pyodide, hard-linked (Deno may read only real paths under the cache folder)."""
    base = tmp_path / "cache"
    name = f"pyodide-{PYODIDE_VERSION}"
    (cache_root(str(base))).mkdir(parents=True, exist_ok=True)
    installed = cache_root() / name
    if installed.exists():
        shutil.copytree(installed, cache_root(str(base)) / name, copy_function=os.link)
    return base


@contextlib.asynccontextmanager
async def _gateway(tmp_path: Path, log: Path, state: str, executor: str) -> AsyncIterator[Gateway]:
    if executor == "pyodide":
        require_pyodide()
    connect, warm = STATES[state]
    config, cache = _config(tmp_path, log), _cache_dir(tmp_path)
    if warm:
        await _warm_cache(config, cache)
    settings = make_settings(
        approval="required", executor=executor, cache_dir=str(cache), timeout_s=60.0
    )
    gateway = Gateway(settings, load_config(config), connect=connect)
    await gateway.start()
    try:
        yield gateway
    finally:
        await gateway.aclose()


def _refused(out: dict[str, Any]) -> bool:
    """The run failed with the approval's TOOL_ERROR, or its last value is that ToolError."""
    error = out.get("error") or {}
    if error.get("type") == "TOOL_ERROR" and "declined" in error.get("message", ""):
        return True
    return out["ok"] and "declined" in str(out["result"])


@pytest.mark.parametrize("executor", ["local", "pyodide"])
@pytest.mark.parametrize("state", list(STATES))
async def test_no_path_reaches_a_tool_that_needs_approval(
    tmp_path: Path, log: Path, state: str, executor: str
) -> None:
    async with _gateway(tmp_path, log, state, executor) as gateway:
        person = {name: Person(False) for name in PATHS}
        runs = [
            gateway.execute(code.format(tag=name), approver=person[name])
            for name, code in PATHS.items()
        ]
        session = gateway.interpreter()  # a dspy session: a client that cannot ask
        outs, in_session = await asyncio.gather(
            asyncio.gather(*runs), asyncio.to_thread(_in_session, session)
        )
        for name, result in zip(PATHS, outs, strict=True):
            out = result.to_json()
            assert _refused(out), (name, out)
            asked = [(a.server, a.tool) for a in person[name].asked]
            assert ("board", "post_message") in asked, (name, asked)
        assert "declined" in in_session and "MCP_CODE_APPROVAL" in in_session
        assert not log.exists(), log.read_text()
        # The same calls approved do reach it: the upstream was there to be reached.
        yes = Person(True)
        out = (
            await gateway.execute(PATHS["computed name"].format(tag="ok"), approver=yes)
        ).to_json()
        assert out["ok"], out
        assert log.read_text() == "post_message ok\n"


def _in_session(session: Any) -> str:
    session.start()
    try:
        code = PATHS["computed name"].format(tag="session")
        wrapped = "try:\n    " + code + "\nexcept ToolError as e:\n    r = str(e)\nr"
        return str(session.execute(wrapped))
    finally:
        session.shutdown()


@pytest.mark.parametrize("state", ["connecting, cold cache", "on demand, cold cache"])
async def test_run_task_steps_ask_too(tmp_path: Path, log: Path, state: str) -> None:
    lm = DummyLM(
        [
            {
                "reasoning": "post it",
                "code": PATHS["computed name"].format(tag="agent"),
                "finished": True,
            },
            {"reasoning": "it was declined", "code": "'not posted'", "finished": True},
            {"answer": "not posted"},
        ]
    )
    async with _gateway(tmp_path, log, state, "local") as gateway:
        person = Person(False)
        with dspy.context(lm=lm):
            out = await agent.run_task(gateway, lm, "post 'agent'", approver=person)
        assert out["steps"] and not out["steps"][0]["ok"], out
        assert "declined" in out["steps"][0]["error"]["message"]
        assert [(a.server, a.tool) for a in person.asked] == [("board", "post_message")]
        assert not log.exists(), log.read_text()


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
@pytest.mark.parametrize("answer", [False, True], ids=["declined", "approved"])
async def test_run_task_over_mcp_asks_the_client_in_both_eras(
    tmp_path: Path, log: Path, mode: str, answer: bool
) -> None:
    """Under the default `auto`, `run_task` from a 2026-07-28 client that can be asked ran
    the agent's writes unasked, as for a client that cannot ask (outside attack 123): its
    questions now go out as `execute_code`'s do, as `input_required`."""
    lm = DummyLM(
        [
            {"reasoning": "post", "code": PATHS["call_tool"].format(tag="agent"), "finished": True},
            {"answer": "done"},
        ]
    )
    asked: list[str] = []

    async def person(message: str, response_type: Any, params: Any, context: Any) -> Any:
        asked.append(message)  # answered in the question's own schema (each era has its own)
        return {"approve": answer} if "approve" in params.requested_schema["properties"] else answer

    settings = make_settings(approval="auto", cache_dir=str(_cache_dir(tmp_path)))
    gateway = Gateway(settings, load_config(_config(tmp_path, log)), connect="wait")
    await gateway.start()
    try:
        server = build_server(gateway, lm=lm)
        async with Client(server, elicitation_handler=person, mode=mode) as client:
            result = await client.call_tool("run_task", {"task": "post"}, raise_on_error=False)
    finally:
        await gateway.aclose()
    out = result.structured_content
    assert isinstance(out, dict) and out["steps"], result
    assert len(asked) == 1 and "board" in asked[0] and "post_message" in asked[0], asked
    if answer:
        assert out["steps"][0]["ok"], out
        assert log.read_text() == "post_message agent\n"
    else:
        assert "declined" in str(out["steps"][0]), out
        assert not log.exists(), log.read_text()


@pytest.mark.slow
@pytest.mark.parametrize("executor", ["local", "pyodide"])
@pytest.mark.parametrize("warm", [False, True], ids=["cold cache", "warm cache"])
async def test_exec_cannot_ask_so_it_refuses(
    tmp_path: Path, log: Path, executor: str, warm: bool
) -> None:
    if executor == "pyodide":
        require_pyodide()
    config, cache = _config(tmp_path, log), _cache_dir(tmp_path)
    if warm:
        await _warm_cache(config, cache)
    env = {
        **os.environ,
        "MCP_CODE_POOL_SIZE": "1",
        "MCP_CODE_APPROVAL": "required",
        "MCP_EXECUTOR": executor,
        "MCP_CODE_CACHE_DIR": str(cache),
    }
    code = PATHS["computed name"].format(tag="exec")
    command = [str(SCRIPT), "exec", "--json", "--config", str(config), "--code", code]
    proc = await asyncio.to_thread(
        subprocess.run,
        command,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    out = json.loads(proc.stdout)
    assert proc.returncode == 1 and _refused(out), (out, proc.stderr)
    assert "MCP_CODE_APPROVAL=required" in out["error"]["message"]
    assert not log.exists(), log.read_text()
