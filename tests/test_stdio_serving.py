"""The stdio transport of the server (`stdio_serving`): the wire, read and written by the
event loop, against the raw JSON-RPC lines a client sends, and against a fastmcp `Client`."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .support import QUIET

APP = Path(__file__).parent / "servers" / "stdio_app.py"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def _call(ident: int) -> dict[str, Any]:
    params = {"name": "stray", "arguments": {}}
    return {"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": params}


def _line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


def _answers(out: bytes) -> dict[int, Any]:
    found = {}
    for line in out.splitlines():
        if line.startswith(b"{"):
            message = json.loads(line)
            found[message.get("id")] = message
    return found


def _serve_raw(
    lines: list[bytes], *args: str, stdout: Any = subprocess.PIPE, reply_to: int = 2
) -> tuple[bytes, bytes]:
    """The app fed `lines` on a pipe; its input ends once request `reply_to` is answered
    (the SDK answers a request still open at the end of input with "Connection closed")."""
    with subprocess.Popen(
        [sys.executable, str(APP), *args],
        stdin=subprocess.PIPE,
        stdout=stdout,
        stderr=subprocess.PIPE,
        env={**QUIET, "PYTHONPATH": str(Path(__file__).parents[1] / "src")},
    ) as proc:
        assert proc.stdin is not None and proc.stderr is not None
        proc.stdin.write(b"".join(lines))
        proc.stdin.flush()
        out = _read_until_answered(proc, stdout, reply_to)
        proc.stdin.close()
        rest = proc.stdout.read() if proc.stdout is not None else b""
        err = proc.stderr.read()
        assert proc.wait(timeout=60) == 0, err.decode(errors="replace")
    return out + rest, err


def _read_until_answered(proc: subprocess.Popen[bytes], stdout: Any, ident: int) -> bytes:
    deadline = time.monotonic() + 60
    out = b""
    while ident not in _answers(out) and time.monotonic() < deadline:
        if proc.stdout is not None:
            out += proc.stdout.readline()
        else:
            time.sleep(0.05)
            out = Path(stdout.name).read_bytes()
    return out if proc.stdout is not None else b""


def test_stray_output_misses_the_wire_and_the_descriptors_come_back() -> None:
    out, err = _serve_raw([_line(INITIALIZE), _line(INITIALIZED), _line(_call(2))])
    answers = _answers(out)
    assert answers[2]["result"]["content"][0]["text"] == "ok"
    assert b"stray" not in out
    assert {b"stray print", b"stray fd1", b"stray child"} <= set(err.splitlines())
    assert out.splitlines()[-1] == b"after True True"


def test_a_line_over_the_limit_is_refused_and_the_next_answered() -> None:
    """A request longer than the limit is answered with an error for its id, and dropped
    as it is read (parsing it would take ~50 times its size, outside attack 61)."""
    long_call = _call(2)
    long_call["params"]["arguments"] = {"pad": "x" * 5000}
    no_id = {"jsonrpc": "2.0", "method": "notifications/x", "params": {"pad": "y" * 5000}}
    ping = {"jsonrpc": "2.0", "id": 4, "method": "ping", "params": {"pad": "z" * 5000}}
    lines = [_line(INITIALIZE), _line(INITIALIZED), _line(long_call), _line(no_id), _line(ping)]
    out, _ = _serve_raw([*lines, _line(_call(3))], "1000", reply_to=3)
    answers = _answers(out)
    # a tool call gets a result object all the same (contract §7), any other request an error
    refused = answers[2]["result"]
    assert refused["isError"] is True
    assert refused["structuredContent"]["error"]["type"] == "EXECUTOR_ERROR"
    assert "longer than 1,000 bytes" in refused["structuredContent"]["error"]["message"]
    assert json.loads(refused["content"][0]["text"]) == refused["structuredContent"]
    assert answers[4]["error"]["code"] == -32600
    assert answers[3]["result"]["content"][0]["text"] == "ok"
    assert set(answers) == {1, 2, 3, 4}


def test_stdout_to_a_regular_file_is_served_the_sdk_way(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    with path.open("wb") as stdout:
        _serve_raw([_line(INITIALIZE), _line(INITIALIZED), _line(_call(2))], stdout=stdout)
    out = path.read_bytes()
    assert _answers(out)[2]["result"]["content"][0]["text"] == "ok"
    assert b"stray" not in out


@pytest.mark.parametrize("size", [0, 90_000, 3_000_000])
async def test_a_fastmcp_client_gets_whole_replies(size: int) -> None:
    """Replies bigger than a pipe's buffer arrive whole (the loop writes them in pieces)."""
    code = f"'x' * {size}" if size else "1+1"
    transport = StdioTransport(
        command=sys.executable,
        args=["-m", "mcp_code_mode.executor_server", "--config", "mcp_servers.json"],
        env={**QUIET, "MCP_CODE_POOL_SIZE": "1", "MCP_CODE_MAX_OUTPUT_CHARS": "4000000"},
        cwd=str(Path(__file__).parents[1]),
        keep_alive=False,
    )
    async with Client(transport, init_timeout=60) as client:
        for _ in range(3):
            result = await client.call_tool_mcp("execute_code", {"code": code})
            reply = json.loads(result.content[0].text)
            assert reply["ok"] is True
            assert reply["result"] == (eval(code) if size else 2)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    junk=st.lists(
        st.binary(max_size=300).map(lambda b: b.replace(b"\n", b"")), min_size=1, max_size=6
    ),
    text=st.text(max_size=40),
)
def test_hostile_bytes_on_the_wire_leave_the_server_answering(junk: list[bytes], text: str) -> None:
    """Invalid UTF-8, NUL, lone surrogates (escaped in JSON and raw), truncated JSON: each
    line is refused or answered; the next call is answered; the output is valid UTF-8."""
    odd = [b"\xff\xfe\x00", b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {']
    escaped = json.dumps({"jsonrpc": "2.0", "id": 8, "method": "ping", "params": {"t": text}})
    surrogate = b'{"jsonrpc": "2.0", "id": 9, "method": "ping", "params": {"t": "\\ud800"}}'
    lines = [_line(INITIALIZE), _line(INITIALIZED)]
    lines += [b + b"\n" for b in [*junk, *odd, escaped.encode(), surrogate]]
    lines.append(_line(_call(2)))
    out, _ = _serve_raw(lines)
    out.decode("utf-8")  # strict: nothing invalid reached the client
    assert _answers(out)[2]["result"]["content"][0]["text"] == "ok"


def _app(**streams: Any) -> subprocess.Popen[bytes]:
    env = {**QUIET, "PYTHONPATH": str(Path(__file__).parents[1] / "src")}
    return subprocess.Popen([sys.executable, str(APP)], stderr=subprocess.PIPE, env=env, **streams)


def _read_answer(sock: socket.socket, ident: int) -> dict[str, Any]:
    got = b""
    while ident not in _answers(got):
        chunk = sock.recv(65536)
        assert chunk, got
        got += chunk
    return _answers(got)[ident]


def test_one_socket_both_ways_is_served() -> None:
    """inetd or socat's EXEC give a server one socket as stdin and stdout (outside attack
    61: asyncio's write side took each request for the peer's close and serving ended)."""
    ours, theirs = socket.socketpair()
    with ours, _app(stdin=theirs, stdout=theirs) as proc:
        theirs.close()
        ours.settimeout(60)
        ours.sendall(_line(INITIALIZE) + _line(INITIALIZED))
        _read_answer(ours, 1)
        ours.sendall(_line(_call(2)))
        assert _read_answer(ours, 2)["result"]["content"][0]["text"] == "ok"
        ours.shutdown(socket.SHUT_WR)
        assert proc.wait(timeout=60) == 0


def test_a_client_that_stops_reading_ends_serving_with_its_own_error() -> None:
    """A client closing its end of the server's stdout: the server ends, and what it says is
    the lost pipe, not an error of its own clean-up (outside attack 61)."""
    with _app(stdin=subprocess.PIPE, stdout=subprocess.PIPE) as proc:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        proc.stdin.write(_line(INITIALIZE) + _line(INITIALIZED))
        proc.stdin.flush()
        assert 1 in _answers(proc.stdout.readline())
        proc.stdout.close()
        proc.stdin.write(_line(_call(2)) + _line(_call(3)))
        proc.stdin.flush()
        proc.wait(timeout=60)
        err = proc.stderr.read().decode(errors="replace")
    assert "AttributeError" not in err, err


async def test_a_request_over_the_limit_gets_its_result_object() -> None:
    """Through a real client (newest protocol): an `execute_code` too long to read is
    answered with a §3 result object, and the next call is served."""
    transport = StdioTransport(
        command=sys.executable,
        args=["-m", "mcp_code_mode.executor_server", "--config", "mcp_servers.json"],
        env={**QUIET, "MCP_CODE_POOL_SIZE": "1"},
        cwd=str(Path(__file__).parents[1]),
        keep_alive=False,
    )
    async with Client(transport, init_timeout=60) as client:
        big = await client.call_tool_mcp("execute_code", {"code": "1", "input": "x" * 5_000_000})
        after = await client.call_tool_mcp("execute_code", {"code": "len(input)", "input": "ab"})
    assert big.is_error is True
    refused = json.loads(big.content[0].text)
    assert refused["ok"] is False and refused["error"]["type"] == "EXECUTOR_ERROR"
    assert "longer than 4,194,304 bytes" in refused["error"]["message"]
    assert json.loads(after.content[0].text)["result"] == 2
