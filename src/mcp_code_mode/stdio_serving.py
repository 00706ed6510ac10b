"""Serving MCP over this process's stdin and stdout, read and written by the event loop.

The MCP SDK's `stdio_server` reads and writes the standard streams through anyio's worker
threads: each request and its reply cost three hand-offs between a thread and the loop
(the line read, the write, the flush), each waking a thread and then the loop again. On a
busy machine that was a millisecond of the server's CPU per `execute_code` (`bench/`,
BENCHMARKS.md). Here asyncio's pipe transports read and write the same descriptors on the
loop itself; the SDK's stdio_server still frames and parses the messages.

What stays as the SDK does it: while serving, fd 0 reads the null device and fd 1 writes
to stderr, so a child's or a library's stray output cannot reach the wire; both are
restored afterwards. Used only when stdin and stdout are both pipes or sockets (what MCP
clients give a server) and not one socket both ways; a terminal, a regular file or one
socket is served the SDK's way (a terminal's non-blocking mode would outlive this process
in the shell). What differs: a request line over `MAX_LINE_BYTES` is dropped as it is read
and answered (`LineReader`), where the SDK's reader would hold and parse it whole.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import stat
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TYPE_CHECKING, Any

from .sandbox.reply import refused_request
from .upstreams.framing import HEAD_BYTES, request_head

if TYPE_CHECKING:
    from fastmcp import FastMCP

__all__ = ["serve_stdio"]

_STDIN, _STDOUT, _STDERR = 0, 1, 2
# The longest request line, as the MCP SDK's limit on an HTTP request's body: parsing and
# validating a message takes ~50 times its size (a 40 MB line took the server to 2.2 GB,
# outside attack 61). A longer line is dropped as it is read and answered with an error.
MAX_LINE_BYTES = 4 * 1024 * 1024


async def serve_stdio(server: FastMCP) -> None:
    """Serve `server` over stdio until the client closes stdin."""
    if not _served_on_the_loop():
        await server.run_stdio_async(show_banner=False)
        return
    from fastmcp.server.context import reset_transport, set_transport
    from mcp.server.stdio import stdio_server

    token = set_transport("stdio")
    try:
        async with (
            server._lifespan_manager(),  # what `run_stdio_async` does, on other streams
            _loop_streams() as (reader, writer),
            stdio_server(stdin=reader, stdout=writer) as (read_stream, write_stream),  # type: ignore[arg-type]
        ):
            low_level = server._mcp_server
            await low_level.run(
                read_stream, write_stream, low_level.create_initialization_options()
            )
            await writer.flush()  # the last replies, before the pipe is let go
    finally:
        reset_transport(token)


def _served_on_the_loop() -> bool:
    """Whether stdin and stdout are pipes or sockets, and not one socket both ways (inetd,
    socat's EXEC): asyncio's write side of a socket takes what arrives on it for the
    peer's close, so each request would end the serving."""
    try:
        stdin, stdout = os.fstat(_STDIN), os.fstat(_STDOUT)
    except OSError:
        return False
    if not (_is_stream(stdin.st_mode) and _is_stream(stdout.st_mode)):
        return False
    one_socket = (stdin.st_dev, stdin.st_ino) == (stdout.st_dev, stdout.st_ino)
    return not (stat.S_ISSOCK(stdout.st_mode) and one_socket)


def _is_stream(mode: int) -> bool:
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


class LineWriter:
    """A pipe written as the SDK's stdio_server writes a text file: write, then flush."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    async def write(self, text: str) -> None:
        self._writer.write(text.encode("utf-8", errors="replace"))

    async def flush(self) -> None:
        await self._writer.drain()


class LineReader:
    """The lines of a pipe, as the SDK's stdio_server iterates a text file; a line over
    `MAX_LINE_BYTES` is answered here (an error for the id in its first bytes) instead."""

    def __init__(self, reader: asyncio.StreamReader, answers: LineWriter) -> None:
        self._reader = reader
        self._answers = answers

    def __aiter__(self) -> LineReader:
        return self

    async def __anext__(self) -> str:
        while True:
            try:
                line = await self._reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as end:
                line = end.partial
            except asyncio.LimitOverrunError as over:
                await self._refuse(await self._reader.readexactly(over.consumed))
                continue
            if not line:
                raise StopAsyncIteration
            return line.decode("utf-8", errors="replace")

    async def _refuse(self, head: bytes) -> None:
        """Drop the rest of the line `head` begins; answer its request, if it has an id."""
        while True:
            try:
                await self._reader.readuntil(b"\n")
                break
            except asyncio.LimitOverrunError as over:
                await self._reader.readexactly(over.consumed)
            except asyncio.IncompleteReadError:
                break
        ident, method = request_head(head[:HEAD_BYTES])
        if ident is not None:
            why = f"the request is longer than {MAX_LINE_BYTES:,} bytes, the limit of one message"
            reply = {"jsonrpc": "2.0", "id": ident, **refused_request(method, why)}
            await self._answers.write(json.dumps(reply) + "\n")


@contextlib.asynccontextmanager
async def _loop_streams() -> AsyncIterator[tuple[LineReader, LineWriter]]:
    """fd 0 and 1 claimed (see the module's docstring), their pipes on the loop."""
    loop = asyncio.get_running_loop()
    with _claimed(_STDIN, _null_input) as wire_in, _claimed(_STDOUT, _stderr_copy) as wire_out:
        reader = asyncio.StreamReader(limit=MAX_LINE_BYTES, loop=loop)
        protocol = asyncio.StreamReaderProtocol(reader, loop=loop)
        read_transport, _ = await loop.connect_read_pipe(lambda: protocol, _file(wire_in, "rb"))
        write_transport, flow = await loop.connect_write_pipe(
            lambda: asyncio.streams.FlowControlMixin(loop=loop), _file(wire_out, "wb")
        )
        writer = asyncio.StreamWriter(write_transport, flow, None, loop)
        try:
            lines = LineWriter(writer)
            yield LineReader(reader, lines), lines
        finally:  # at once, unless a lost peer closed them: the descriptors close next
            if not read_transport.is_closing():
                read_transport.close()
            if not write_transport.is_closing():
                write_transport.abort()


def _file(fd: int, mode: str) -> Any:
    return os.fdopen(fd, mode, buffering=0, closefd=False)


@contextlib.contextmanager
def _claimed(fd: int, diversion: Callable[[], int]) -> Iterator[int]:
    """A private copy of `fd` (the wire) while `fd` itself points at `diversion()`."""
    wire = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    blocking = os.get_blocking(wire)
    diverted = diversion()
    try:
        os.dup2(diverted, fd)
    finally:
        os.close(diverted)
    try:
        yield wire
    finally:
        os.dup2(wire, fd)
        # Shared with whatever else holds this end of the pipe; a server killed while
        # serving leaves it non-blocking (asyncio's pipes need it so).
        os.set_blocking(wire, blocking)
        os.close(wire)


def _null_input() -> int:
    return os.open(os.devnull, os.O_RDONLY)


def _stderr_copy() -> int:
    return os.dup(_STDERR)
