"""Baseline stdio MCP server: `execute(code)` in a fresh forked process per call, no sandbox.

    python bench/servers/fork_exec_server.py

The floor under any design that runs each snippet in a process of its own (as ours does, for
isolation), with none of the isolation: a child forked ahead of time (two kept ready, the next
forked after a reply is sent) reads the code from a socket, evaluates it, sends the result and
exits (each child touches its run path while it waits, and the zygote freezes its objects for
the collector, as ours do). The code may call `call("get-note", {...})`, which asks the parent,
which calls the notes server (examples/servers/notes_server.py, over stdio, one fastmcp
`Client`) and answers: an upstream call from code in a child process, with nothing else in the
way. What a code tool of this shape costs beyond plain `exec`
(bench/servers/bare_exec_server.py) is the cost of the process boundary itself. As in any such
design (ours included) the children are forked from a small zygote (a process started before
fastmcp is imported, holding only the stdlib), not from the server: forking the server would
copy its page tables and make both sides fault in every page either writes.
Never serve this to anything untrusted.
"""

from __future__ import annotations

import gc
import json
import os
import socket
import struct
from typing import Any


def _send(sock: socket.socket, value: Any) -> None:
    data = json.dumps(value).encode()
    sock.sendall(struct.pack(">I", len(data)) + data)


def _read(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:  # the server is gone: so is this child
            os._exit(0)
        data += chunk
    return data


def _recv(sock: socket.socket) -> Any:
    return json.loads(_read(sock, struct.unpack(">I", _read(sock, 4))[0]))


def _child(sock: socket.socket) -> None:
    """One run: code in, result out, exit. Tool calls go to the server and wait for it."""

    def call(tool: str, args: dict[str, Any]) -> Any:
        _send(sock, {"call": tool, "args": args})
        return _recv(sock)["value"]

    # Touch the run path before the code arrives, as our workers do (`zygote._warm_up`): its
    # copy-on-write page faults then happen while the child waits, not during the run.
    json.loads(json.dumps({"done": eval(compile("1+1", "<code>", "eval"), {"call": call})}))
    code = _recv(sock)["code"]
    namespace: dict[str, Any] = {"call": call}
    try:
        value = eval(compile(code, "<code>", "eval"), namespace)
    except SyntaxError:
        exec(compile(code, "<code>", "exec"), namespace)
        value = namespace.get("result")
    _send(sock, {"done": value})


def _zygote(control: socket.socket) -> None:
    """Fork a child for every byte the server sends; hand the server its socket end."""
    gc.freeze()  # as our zygote does: the collector copies no inherited object in a child
    while control.recv(1):
        mine, theirs = socket.socketpair()
        pid = os.fork()
        if pid == 0:
            control.close()
            mine.close()
            try:
                _child(theirs)
            finally:
                os._exit(0)
        theirs.close()
        socket.send_fds(control, [struct.pack(">i", pid)], [mine.fileno()])
        mine.close()
        while True:  # reap the children that ended
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    break
            except ChildProcessError:
                break


if __name__ == "__main__":
    _control, _zygote_end = socket.socketpair()
    if os.fork() == 0:
        _control.close()
        _zygote(_zygote_end)
        os._exit(0)
    _zygote_end.close()

import asyncio  # noqa: E402  (the server's imports: after the zygote is forked)
import sys  # noqa: E402
from collections import deque  # noqa: E402
from pathlib import Path  # noqa: E402

from fastmcp import Client, FastMCP  # noqa: E402
from fastmcp.client.transports import StdioTransport  # noqa: E402

NOTES = Path(__file__).resolve().parents[2] / "examples" / "servers" / "notes_server.py"
READY = 2  # children kept forked ahead of the next call
server = FastMCP("fork-exec")
_idle: deque[socket.socket] = deque()
_notes: list[Client[Any]] = []


def _fork() -> None:
    """A new child from the zygote (blocking: a few hundred microseconds)."""
    _control.send(b"f")
    _, (fd,), _, _ = socket.recv_fds(_control, 4, 1)
    sock = socket.socket(fileno=fd)
    sock.setblocking(False)
    _idle.append(sock)


def _refill() -> None:
    while len(_idle) < READY:
        _fork()


async def _recv_async(reader: asyncio.StreamReader) -> Any:
    size = struct.unpack(">I", await reader.readexactly(4))[0]
    return json.loads(await reader.readexactly(size))


async def _upstream(tool: str, args: dict[str, Any]) -> Any:
    if not _notes:
        client: Client[Any] = Client(StdioTransport(sys.executable, [str(NOTES)]))
        await client.__aenter__()
        _notes.append(client)
    result = await _notes[0].call_tool(tool, args)
    return result.structured_content


@server.tool(output_schema=None)
async def execute(code: str) -> Any:
    """Run `code` in a fresh child process; `call(tool, args)` reaches the notes server."""
    if not _idle:
        _fork()
    reader, writer = await asyncio.open_unix_connection(sock=_idle.popleft())
    try:
        data = json.dumps({"code": code}).encode()
        writer.write(struct.pack(">I", len(data)) + data)
        while "done" not in (message := await _recv_async(reader)):
            value = await _upstream(message["call"], message["args"])
            reply = json.dumps({"value": value}).encode()
            writer.write(struct.pack(">I", len(reply)) + reply)
        return message["done"]
    finally:
        writer.close()
        asyncio.get_running_loop().call_later(0.001, _refill)  # after the reply


if __name__ == "__main__":
    _refill()
    server.run(show_banner=False)
