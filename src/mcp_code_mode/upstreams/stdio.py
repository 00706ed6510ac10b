"""A stdio upstream whose replies are read through a bounded line reader.

`BoundedStdioTransport` is fastmcp's `StdioTransport` (same command, arguments,
environment, working folder and stderr file; fastmcp's `Client` on top) with its own
pipe tasks instead of the MCP SDK's `stdio_client`, which reads each whole line of the
upstream's stdout into memory before parsing it. Here each line passes a `LineSplitter`:

- a tool call's reply over `max_line_bytes` (any other reply: over `max_other_bytes`, at
  least `OTHER_REPLY_BYTES`, so a small result limit leaves a catalog listable) is
  answered with a JSON-RPC error reply for the id found in its first or last few KB, so
  the call waiting for it fails at once with a message naming its size and
  `MCP_CODE_MAX_RESULT_BYTES`; a line is held up to `max_other_bytes` at most, the rest is
  dropped up to its end as it is read; the connection stays up (no transport failure);
- a line that is not a JSON-RPC message is answered the same way when it carries the id
  of a reply, instead of leaving its call to time out.

Otherwise it does what `stdio_client` does: the upstream gets only the SDK's minimal
environment plus its configured `env`, runs in its own process group, and on close has
its stdin closed, then (after a grace period) its group terminated and killed.

What it does not stop: a cut line whose id is in neither end, or that is the upstream's
own request (both are dropped; a call waiting for it times out); a stream of lines each
under the limit; a line that never ends (dropped as it comes, its call times out); memory
of parsing a reply that is under the limit (the MCP SDK and pydantic build it whole).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import anyio
import mcp_types
from anyio.abc import Process
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from fastmcp.client.transports import ClientTransport, StdioTransport
from fastmcp.client.transports.base import SessionKwargs, TransportOptions
from mcp import ClientSession
from mcp.client.stdio import get_default_environment
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage
from typing_extensions import Unpack

from ..encodable import MAX_DEPTH
from ..offload import offloaded
from .framing import (
    HEAD_BYTES,
    RESULT_TOO_LARGE_CODE,
    TAIL_BYTES,
    LineSplitter,
    Oversized,
    reply_id,
    too_large_message,
)
from .process_group import end_group, reap_watchers

__all__ = ["OTHER_REPLY_BYTES", "BoundedStdioTransport", "error_reply"]

logger = logging.getLogger(__name__)
_PARSED_IN_THREAD = 256 * 1024  # a longer line is parsed off the event loop

_GRACE_S = 2.0  # for the upstream to exit after its stdin closes (as the SDK)
_KILL_S = 2.0  # from SIGTERM to SIGKILL of its process group, and again to see it gone
_FLUSH_S = 0.5  # for the writer to send what it accepted before stdin closes

_Inbound = SessionMessage | Exception
# What a reply that is not a call's may be, however small MCP_CODE_MAX_RESULT_BYTES: the
# limit is on results; at 100,000 a 600-tool upstream never started (attack 133).
OTHER_REPLY_BYTES = 10_000_000


class BoundedStdioTransport(ClientTransport):
    """A stdio upstream (as `source` describes it) read through a bounded line reader."""

    def __init__(
        self,
        source: StdioTransport,
        *,
        max_line_bytes: int,
        on_other_bytes: Callable[[int], None] | None = None,
    ) -> None:
        self.command = source.command
        self.args = list(source.args)
        self.env = dict(source.env or {})
        self.cwd = source.cwd
        self.log_file = source.log_file  # a file, a path to append to, or None (our stderr)
        self.max_line_bytes = max_line_bytes  # of a tool call's reply
        self.max_other_bytes = max(max_line_bytes, OTHER_REPLY_BYTES)  # any other reply
        self.on_other_bytes = on_other_bytes  # told the size of each reply that is not a call's
        # For the upstream to exit after its stdin closes; a stop on a signal shortens it
        # (`client.close(..., exit_grace_s=...)`): its process group is ended sooner.
        self.exit_grace_s = _GRACE_S

    @contextlib.asynccontextmanager
    async def connect_session(
        self,
        *,
        transport_options: TransportOptions | None = None,
        **session_kwargs: Unpack[SessionKwargs],
    ) -> AsyncIterator[ClientSession]:
        options = transport_options or TransportOptions()
        async with (
            self._streams() as (read_stream, write_stream),
            options.session_class(read_stream, write_stream, **session_kwargs) as session,
        ):
            yield session

    def __repr__(self) -> str:
        return f"<BoundedStdioTransport(command={self.command!r}, args={self.args!r})>"

    @contextlib.asynccontextmanager
    async def _streams(
        self,
    ) -> AsyncIterator[
        tuple[MemoryObjectReceiveStream[_Inbound], MemoryObjectSendStream[SessionMessage]]
    ]:
        with _errlog(self.log_file) as errlog:
            env = get_default_environment() | self.env
            process = await anyio.open_process(
                _dying_with_us(self.command, self.args, env, self.cwd),
                env=env,
                stderr=errlog,
                cwd=self.cwd,
                start_new_session=True,
            )
        # No awaits until the task group is entered: a cancellation there would leak it.
        inbound_writer, inbound = anyio.create_memory_object_stream[_Inbound](0)
        outbound, outbound_reader = anyio.create_memory_object_stream[SessionMessage](0)
        writer_done = anyio.Event()
        async with anyio.create_task_group() as tg:
            limits = _Limits(self.max_line_bytes, self.max_other_bytes, self.on_other_bytes)
            tg.start_soon(_read_stdout, process, inbound_writer, limits)
            tg.start_soon(
                _write_stdin, process, outbound_reader, inbound_writer, writer_done, limits
            )
            try:
                yield inbound, outbound
            finally:
                with anyio.CancelScope(shield=True):  # every wait inside is bounded
                    inbound.close()
                    outbound.close()
                    with anyio.move_on_after(_FLUSH_S):
                        await writer_done.wait()
                    await _stop(process, self.exit_grace_s)
                tg.cancel_scope.cancel()


_WITH_PARENT = str(Path(__file__).with_name("with_parent.py"))  # run before the command


def _dying_with_us(
    command: str, args: list[str], env: dict[str, str], cwd: str | Path | None
) -> list[str]:
    """The upstream's argv, started so that it and its helpers end with the gateway: in a
    session of its own, it outlived a gateway its client killed outright (a desktop client
    that gave it no time to close, or a killed terminal: outside attacks 138, 139). Linux
    only; a command not found is left to fail as it would (see `with_parent`)."""
    if not sys.platform.startswith("linux"):
        return [command, *args]
    folder = str(cwd or os.getcwd())
    if os.sep in command:
        found = os.access(os.path.join(folder, command), os.X_OK)
    else:  # relative PATH entries are read from the upstream's folder, as it will
        entries = (env.get("PATH") or os.defpath).split(os.pathsep)
        path = os.pathsep.join(os.path.join(folder, entry) for entry in entries)
        found = shutil.which(command, path=path) is not None
    if not found:
        return [command, *args]
    reap_watchers()  # those of earlier starts, when they came to us
    ctype = "=" + env["LC_CTYPE"] if "LC_CTYPE" in env else "-"
    return [sys.executable, "-I", "-S", _WITH_PARENT, str(os.getpid()), ctype, command, *args]


def _errlog(log_file: Path | TextIO | None) -> contextlib.AbstractContextManager[TextIO]:
    """Where the upstream's stderr goes (the child keeps its own copy of the descriptor)."""
    if isinstance(log_file, Path):
        return log_file.open("a", encoding="utf-8")
    return contextlib.nullcontext(log_file or sys.stderr)


def error_reply(request_id: int | str, code: int, message: str) -> SessionMessage:
    """A JSON-RPC error reply to our request `request_id`, as if the upstream sent it."""
    error = mcp_types.ErrorData(code=code, message=message)
    return SessionMessage(mcp_types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error))


def _inbound(line: bytes | Oversized, limit: int) -> _Inbound | None:
    """What one line of the upstream's stdout is for the session (None: nothing)."""
    if isinstance(line, Oversized):
        found = reply_id(line.head, line.tail)
        message = too_large_message(line.size, limit)
        if found is None:
            logger.warning("upstream sent a line it cannot be answered for: %s", message)
            return ValueError(message)
        return error_reply(found, RESULT_TOO_LARGE_CODE, message)
    if not line.strip():
        return None
    try:
        # json's parser, then the model: pydantic's own parser held the GIL (and so the event
        # loop, whatever thread it ran in) 250 ms over a 10 MB reply, json's 40 ms; json's
        # also takes escaped lone surrogates, which replies have replaced later (contract §7)
        parsed = mcp_types.jsonrpc_message_adapter.validate_python(_loads(line), by_name=False)
    except (ValueError, RecursionError) as exc:
        found = reply_id(line[:4096], line[-4096:])
        if found is None:
            return exc  # the session hands it to the message handler, which logs it
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        text = f"the upstream sent a reply that is not a JSON-RPC message ({reason})"
        return error_reply(found, mcp_types.PARSE_ERROR, text)
    return SessionMessage(parsed)


def _loads(line: bytes) -> object:
    """`line` parsed, no deeper than `MAX_DEPTH` (as deep as the SDK's parser goes)."""
    value = json.loads(line)
    if line.count(b"[") + line.count(b"{") > MAX_DEPTH:  # else it cannot be that deep
        stack: list[tuple[object, int]] = [(value, 1)]
        while stack:
            item, depth = stack.pop()
            if isinstance(item, dict | list) and depth > MAX_DEPTH:
                raise ValueError(f"the reply is nested deeper than {MAX_DEPTH} levels")
            if isinstance(item, dict):
                stack.extend((v, depth + 1) for v in item.values())
            elif isinstance(item, list):
                stack.extend((v, depth + 1) for v in item)
    return value


@dataclass(slots=True)
class _Limits:
    """A call's reply is bounded at `calls` bytes, any other reply at `others` (the ids of
    requests in flight that are not calls are in `roomy`, put there as they are written)."""

    calls: int
    others: int
    count: Callable[[int], None] | None = None  # told each other reply's size on the wire
    roomy: set[int | str] = field(default_factory=set)

    def within(self, line: bytes | Oversized) -> bytes | Oversized:
        """`line`, or as Oversized when it is a call's reply (or no known reply) past `calls`."""
        if isinstance(line, Oversized) or len(line) <= self.calls:
            return line
        head, tail = line[:HEAD_BYTES], line[-TAIL_BYTES:]
        found = reply_id(head, tail)
        if found is not None and found in self.roomy:
            return line  # parsed, then checked again by the id the parser kept
        return Oversized(len(line), head, tail)

    def limit_of(self, line: bytes | Oversized) -> int:
        """The limit a refusal of `line` names: a call's, unless it answers another request."""
        if isinstance(line, Oversized) and reply_id(line.head, line.tail) in self.roomy:
            return self.others
        return self.calls

    def checked(self, item: _Inbound | None, line: bytes | Oversized) -> _Inbound | None:
        """`item` as parsed from `line`: a line past `calls` only as the reply, by the id
        the parser kept, to a request that is not a call (a line with two `"id"` members
        was sized by the first and parsed by the last: a call's result of 3 MB got past a
        100 KB limit; attack 134)."""
        root = item.message if isinstance(item, SessionMessage) else None
        ident = (
            root.id
            if isinstance(root, mcp_types.JSONRPCResponse | mcp_types.JSONRPCError)
            else None
        )
        size = line.size if isinstance(line, Oversized) else len(line)
        if ident is not None and ident in self.roomy:
            self.roomy.discard(ident)
            if self.count is not None:
                self.count(size)
            return item
        if isinstance(line, bytes) and size > self.calls:
            message = too_large_message(size, self.calls)
            return (
                ValueError(message)
                if ident is None
                else error_reply(ident, RESULT_TOO_LARGE_CODE, message)
            )
        return item


async def _read_stdout(
    process: Process, sink: MemoryObjectSendStream[_Inbound], limits: _Limits
) -> None:
    """Lines of stdout to the session, bounded; after the session is gone, drain stdout
    (an upstream blocked on writing could not exit)."""
    assert process.stdout is not None
    splitter = LineSplitter(limits.others)
    delivering = True
    with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        async with sink:
            async for chunk in process.stdout:
                if delivering:
                    delivering = await _deliver(splitter.feed(chunk), sink, limits)
            if delivering:
                await _deliver(splitter.finish(), sink, limits)


async def _deliver(
    lines: list[bytes | Oversized], sink: MemoryObjectSendStream[_Inbound], limits: _Limits
) -> bool:
    """Send each line's message; False once the session no longer takes them."""
    for line in map(limits.within, lines):
        limit = limits.limit_of(line)
        if isinstance(line, bytes) and len(line) > _PARSED_IN_THREAD:
            item = await offloaded(_inbound, line, limit)  # off the event loop
        else:
            item = _inbound(line, limit)
        item = limits.checked(item, line)
        if item is None:
            continue
        try:
            await sink.send(item)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return False
    return True


async def _write_stdin(
    process: Process,
    source: MemoryObjectReceiveStream[SessionMessage],
    inbound: MemoryObjectSendStream[_Inbound],
    done: anyio.Event,
    limits: _Limits,
) -> None:
    assert process.stdin is not None
    try:
        async with source:
            async for message in source:
                root = message.message
                if isinstance(root, mcp_types.JSONRPCRequest) and root.method != "tools/call":
                    limits.roomy.add(root.id)
                text = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                await process.stdin.send((text + "\n").encode())
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        # The upstream may still run: end the session's stream so no request hangs.
        await inbound.aclose()
    finally:
        done.set()


async def _stop(process: Process, grace_s: float) -> None:
    """Close stdin, give the upstream `grace_s` to exit, then end its process group."""
    assert process.stdin is not None and process.stdout is not None
    with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdin.aclose()
    if not await _exited(process, grace_s):
        await terminate_posix_process_tree(process, _KILL_S)
        if not await _exited(process, _KILL_S):
            logger.warning("upstream process %d is still alive after SIGKILL", process.pid)
    await end_group(process.pid, _KILL_S)
    with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdout.aclose()


async def _exited(process: Process, timeout_s: float) -> bool:
    """Whether it exits within `timeout_s` (polled: `wait` also waits for pipes that a
    child of the upstream may hold open)."""
    with anyio.move_on_after(timeout_s):
        while process.returncode is None:
            await anyio.sleep(0.01)
    return process.returncode is not None
