"""The lines a worker sends are bounded by its run's limits (`channel.line_bound`), and the
host parses none longer.

A `call_tools` batch reaches the host in pieces of about `BATCH_PIECE_BYTES` and is made
whole at its last (protocol.CallRequest); its pieces together may cost `BATCH_BUDGET` to
read, the calls past it refused unsent. A batch of 60 legal 1 MB calls was one line parsed
in one C call that held the gateway's event loop 0.2-0.4 s (outside attack 86). The worst
legal lines (output and calls of the widest characters) stay within the bound on both
executors."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path
from typing import Any

import pytest

from mcp_code_mode.errors import WorkerCrashed
from mcp_code_mode.gateway import Gateway
from mcp_code_mode.sandbox.base import ExecutionResult
from mcp_code_mode.sandbox.channel import LINE_LIMIT, Channel, line_bound
from mcp_code_mode.sandbox.child.outgoing import pieces
from mcp_code_mode.sandbox.conversation import Conversation
from mcp_code_mode.sandbox.protocol import BATCH_BUDGET, BATCH_PIECE_BYTES, RunMessage, encode
from mcp_code_mode.tool_results import ResultBudget

from ..conftest import require_pyodide
from ..support import TEST_SERVER, server_entry, start_gateway


async def test_a_batch_of_megabyte_calls_is_made_whole(gateway: Gateway) -> None:
    calls = BATCH_BUDGET // 990_000 - 10  # each under MCP_CODE_MAX_CALL_BYTES, 50 pieces
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
    size = BATCH_PIECE_BYTES // 3  # the limit is passed at the second piece
    code = (  # guest code that catches the limit makes no call after it (attack 89)
        f'try:\n    call_tools([("t", "echo", {{"text": "x" * {size}}})] * 6)\n'
        "except BaseException:\n    pass\n"
        'call_tool("t", "echo", {"text": "after"})'
    )
    reply = await _run(tmp_path, code, 60, upstream=True, max_tool_calls=4)
    assert reply.error is not None and reply.error.type == "TOOL_CALL_LIMIT"
    assert reply.tool_calls == []


async def _channel() -> tuple[Channel, asyncio.StreamWriter]:
    """The host's channel, and the worker's end of it to write lines to, on a socket pair."""
    left, right = socket.socketpair()
    reader, host_writer = await asyncio.open_connection(sock=left, limit=LINE_LIMIT)
    _, worker = await asyncio.open_connection(sock=right, limit=LINE_LIMIT)
    return Channel(reader, host_writer, peer="worker"), worker


async def test_a_line_longer_than_its_run_allows_is_refused_unparsed() -> None:
    host, worker = await _channel()
    run: RunMessage = {
        "op": "run",
        "code": "1",
        "input": None,
        "index_version": 1,
        "timeout_s": 1.0,
        "max_output_chars": 1000,
        "max_call_bytes": 1000,
    }
    await host.send(run)
    bound = line_bound(run)
    assert bound < LINE_LIMIT // 10
    empty = len(encode({"op": "query", "id": 1, "kind": "progress", "args": {"message": ""}}))
    try:
        for size in (bound, bound + 1):
            text = "x" * (size - empty)
            worker.write(
                encode({"op": "query", "id": 1, "kind": "progress", "args": {"message": text}})
            )
            if size == bound:
                assert (await host.receive())["args"] == {"message": text}  # type: ignore[typeddict-item]
            else:
                with pytest.raises(WorkerCrashed, match="longer than its run's limits"):
                    await host.receive()
    finally:
        worker.close()
        host.close()


@pytest.mark.parametrize("executor", ["local", "pyodide"])
async def test_the_widest_legal_output_is_within_the_bound(tmp_path: Path, executor: str) -> None:
    """Logs kept to the limit, then stdout kept to it too, of astral characters (12 bytes
    each as escaped JSON), and a long error: the largest `done` a run can make."""
    if executor == "pyodide":
        require_pyodide()
    code = (
        'log("\U0001f600" * 199_990)\n'
        'print("\U0001f600" * 200_000)\n'
        'raise ValueError("\U0001f600" * 100_000)'
    )
    reply = await _run(
        tmp_path, code, 60, upstream=False, max_output_chars=200_000, executor=executor
    )
    assert reply.error is not None and reply.error.type == "OUTPUT_LIMIT", reply.error


async def test_the_widest_legal_call_is_within_the_bound(any_gateway: Gateway) -> None:
    """A call of the most escaped JSON its UTF-8 size allows: 2-byte characters, 6 bytes
    each as the worker writes them."""
    code = 'len(call_tool("testsrv", "echo", {"text": "\u00e9" * 499_990}))'
    reply = await any_gateway.execute(code, timeout_s=60)
    assert reply.ok, reply.error
    assert reply.result == 499_990


async def test_a_batch_past_what_it_may_cost_to_read_refuses_its_last_calls(
    gateway: Gateway,
) -> None:
    """Each call's 300,000 empty lists cost about 39 MB as Python objects: the calls past
    the batch's share of `DECODE_BUDGET` are refused unsent, the others made."""
    code = (
        'got = call_tools([("testsrv", "echo", {"text": [[]] * 300_000})] * 5)\n'
        '[("fewer" in str(r)) if isinstance(r, ToolError) else "made" for r in got]'
    )
    reply = await gateway.execute(code, timeout_s=120)  # the worker's code is Pyodide's too
    assert reply.ok, reply.error
    refused = [r for r in reply.result if r is True]
    assert 0 < len(refused) < 5 and reply.result[-len(refused) :] == refused, reply.result
    assert len(reply.tool_calls) == 5  # the refused too


async def test_a_batch_whose_pieces_cost_too_much_ends_the_worker() -> None:
    """A worker that escaped its guest code sends pieces costing more than the budget
    together, each within the line bound: the host stops before parsing the one past it."""
    host, worker = await _channel()
    piece = {"op": "call", "id": 1, "calls": [{"server": "s", "tool": "t", "args": {}}]}
    piece["calls"][0]["args"] = {
        "q": [0] * 1_400_000
    }  # 2.8 MB, about 45 MB as objects: two pass 64
    piece["more"] = True
    try:
        worker.write(encode(piece))
        assert (await host.receive())["op"] == "call"
        worker.write(encode(piece))
        with pytest.raises(WorkerCrashed, match="pieces of a batch"):
            await host.receive()
    finally:
        worker.close()
        host.close()


async def test_legal_programs_the_line_bound_once_broke(any_gateway: Gateway) -> None:
    """Found by outside attack 89: integer keys the worker's lower bound counted as empty
    text (a 4 MB call sent, past the bound), and a result's type name in an uncharged note
    (a 3.6 MB `done`). Each is now refused or cut in the worker, never EXECUTOR_ERROR."""
    code = (
        "try:\n    call_tool('testsrv', 'echo', {10**4000 + i: 0 for i in range(1000)})\n"
        "except ToolError as e:\n    log(str(e)[-60:])\n"
        "C = type('\\U0001d538' * 300_000, (), {'__repr__': lambda self: 'ok'})\n"
        "C()"
    )
    reply = await any_gateway.execute(code, timeout_s=60)
    assert reply.ok, reply.error
    assert reply.result == "ok" and "MCP_CODE_MAX_CALL_BYTES" in reply.logs[0], reply.logs
    assert len(reply.logs) == 2 and len(reply.logs[1]) < 300  # the note, its name cut


class _Recording:
    """A router that records the calls it makes, each answered with its tool's name."""

    paused_s = 0.0
    owner = ""

    def __init__(self) -> None:
        self.made: list[str] = []

    async def call(self, server: str, tool: str, args: Any, **_: Any) -> Any:
        self.made.append(tool)
        return tool

    def result_budget(self) -> ResultBudget:
        return ResultBudget(10**6)

    def admit(self, count: int) -> None:
        return None

    def on_pause(self, notify: Any, resume: Any) -> None:
        return None

    def logs_to(self) -> None:
        return None


class _Scripted:
    """A worker that sends `script`, each request once the one before it is answered."""

    index_version = None

    def __init__(self, script: list[dict[str, Any]]) -> None:
        self.script, self.sent, self.asked, self.killed = script, [], 0, False

    async def send(self, message: Any) -> None:
        self.sent.append(message)

    async def receive(self) -> Any:
        while sum(m["op"] == "reply" for m in self.sent) < self.asked and not self.killed:
            await asyncio.sleep(0.001)
        self.asked += 1
        return None if self.killed else self.script.pop(0)

    def kill(self) -> None:
        self.killed = True


async def test_held_calls_of_an_abandoned_batch_are_dropped() -> None:
    """Guest code that caught an error between two pieces of a batch (a MemoryError
    building the second) had the first piece's calls made with its next call, which got
    one of their results (outside attack 90): pieces carry their batch's number."""
    spec = {"server": "s", "args": {}}
    worker = _Scripted(
        [
            {"op": "call", "id": 1, "batch": 1, "more": True, "calls": [{**spec, "tool": "held"}]},
            {"op": "call", "id": 2, "calls": [{**spec, "tool": "next"}]},
            {"op": "call", "id": 3, "batch": 2, "more": True, "calls": [{**spec, "tool": "a"}]},
            {"op": "call", "id": 4, "batch": 2, "calls": [{**spec, "tool": "b"}]},
            {"op": "done", "ok": True, "result": None, "stdout": "", "logs": [], "error": None},
        ]
    )
    router = _Recording()
    run = {"op": "run", "code": "", "input": None, "index_version": 1, "timeout_s": 5}
    await Conversation(worker, router).run(run)  # type: ignore[arg-type]
    replies = [m["results"] for m in worker.sent if m["op"] == "reply"]
    assert router.made == ["next", "a", "b"]
    assert [[o["value"] for o in r] for r in replies] == [[], ["next"], [], ["a", "b"]]


async def test_a_batch_costly_for_its_names_is_counted_as_the_host_counts(
    gateway: Gateway,
) -> None:
    """Each name's thousand brackets cost 96 KB by the host's estimate: the worker counts
    the pieces as the host will, framing and refused calls included, and refuses the calls
    past the budget (this ended the run with EXECUTOR_ERROR: attack 90)."""
    code = (
        'got = call_tools([("notes", "[" * 1000, {})] * 1000)\n'
        "[len(got), sum(isinstance(r, ToolError) for r in got)]"
    )
    reply = await gateway.execute(code, timeout_s=60)
    assert reply.ok, reply.error
    assert reply.result == [1000, 1000]


async def test_the_last_piece_of_a_batch_whose_others_are_gone_ends_the_worker() -> None:
    """A call between two pieces drops the first (a finalizer's, or an escaped worker's):
    the batch's last piece then has nothing held, and made alone its results would not
    match the batch (attack 91). The worker pauses collection while it sends pieces."""
    spec = {"server": "s", "args": {}}
    worker = _Scripted(
        [
            {"op": "call", "id": 1, "batch": 1, "more": True, "calls": [{**spec, "tool": "a"}]},
            {"op": "call", "id": 2, "calls": [{**spec, "tool": "between"}]},
            {"op": "call", "id": 3, "batch": 1, "calls": [{**spec, "tool": "b"}]},
        ]
    )
    router = _Recording()
    run = {"op": "run", "code": "", "input": None, "index_version": 1, "timeout_s": 5}
    with pytest.raises(WorkerCrashed):
        await Conversation(worker, router).run(run)  # type: ignore[arg-type]
    assert router.made == ["between"] and worker.killed


def test_tiny_calls_are_not_refused_for_the_room_kept_for_refusals() -> None:
    """Room is kept for each call at what it costs at least (itself, or refused): 100,000
    tiny calls were a ValueError under MCP_CODE_MAX_TOOL_CALLS=0, far under the budget
    (attack 91)."""
    specs = [{"server": "n", "tool": "t", "args": {"i": i}} for i in range(100_000)]
    cut = pieces(specs)
    assert [spec for piece in cut for spec in piece] == specs


async def test_one_call_costlier_to_read_than_the_host_reads_is_refused(
    tmp_path: Path,
) -> None:
    """1.4 MB of `[` in a string is legal under MCP_CODE_MAX_CALL_BYTES=2000000 and about
    129 MB by the host's estimate: refused in the worker, not an EXECUTOR_ERROR."""
    code = 'call_tool("t", "echo", {"text": "[" * 1_400_000})'
    reply = await _run(tmp_path, code, 60, upstream=True, max_call_bytes=2_000_000)
    assert reply.error is not None and reply.error.type == "TOOL_ERROR", reply.error
    assert "MB of the gateway's memory to read" in reply.error.message


async def test_a_batch_of_one_shared_string_stays_within_the_workers_memory(
    gateway: Gateway,
) -> None:
    """400 calls of one 900 KB string: the worker measured the batch holding every call's
    text at once (360 MB past its 256 MB) and ended with MEMORY_LIMIT (attack 92)."""
    code = (
        'text = "n" * 900_000\n'
        'got = call_tools([("notes", "search_notes", {"query": text})] * 400)\n'
        "[sum(not isinstance(r, ToolError) for r in got), sum('fewer' in str(r) for r in got)]"
    )
    reply = await gateway.execute(code, timeout_s=120)
    assert reply.ok, reply.error
    made, refused = reply.result
    assert made > 0 and refused > 0 and made + refused == 400


async def test_a_batch_too_long_to_send_is_a_value_error(tmp_path: Path) -> None:
    """Too long even refused (MCP_CODE_MAX_TOOL_CALLS=0): the host is asked about its
    length with a call sent without arguments (its first, 700 KB of `[`, went whole and
    passed the host's budget: EXECUTOR_ERROR, attack 92)."""
    code = (
        'said = "sent"\ntry:\n'
        '    call_tools([("t", "echo", {"text": "[" * 700_000})] + [("t", "echo", {})] * 200_000)\n'
        "except ValueError as e:\n    said = str(e)\nsaid"
    )
    reply = await _run(tmp_path, code, 120, upstream=True, max_tool_calls=0)
    assert reply.ok, reply.error
    assert "too long to send" in reply.result


async def test_a_wide_call_at_the_edge_of_the_budget_is_refused_in_the_worker(
    tmp_path: Path,
) -> None:
    """Outside attack 102: 1,342,164 `[` and one emoji, under MCP_CODE_MAX_CALL_BYTES=2000000,
    were below the size the worker counts from (at 97 bytes a character; 100 at the widest)
    and past what the host reads: EXECUTOR_ERROR. Now a ToolError, and the run goes on."""
    code = (
        "try:\n    call_tool('t', 'echo', {'text': '[' * 1_342_164 + '\\U0001F600'})\n"
        "except ToolError as e:\n    log(str(e))\n'after'"
    )
    reply = await _run(tmp_path, code, 60, upstream=True, max_call_bytes=2_000_000)
    assert reply.ok and reply.result == "after", reply.error
    assert "MB of the gateway's memory to read" in reply.logs[0], reply.logs


@pytest.mark.parametrize("executor", ["local", "pyodide"])
async def test_output_costlier_to_read_than_the_host_reads_is_an_output_limit(
    tmp_path: Path, executor: str
) -> None:
    """Outside attack 102: under MCP_CODE_MAX_OUTPUT_CHARS=1400000, 1,390,000 `[` printed
    was within the limit and about 129 MB for the host to read: EXECUTOR_ERROR. Now an
    OUTPUT_LIMIT with the output cut."""
    if executor == "pyodide":
        require_pyodide()
    code = 'print("[" * 1_390_000)'
    reply = await _run(
        tmp_path, code, 60, upstream=False, max_output_chars=1_400_000, executor=executor
    )
    assert reply.error is not None and reply.error.type == "OUTPUT_LIMIT", reply.error
    assert "MB of the gateway's memory to read" in reply.error.message
    assert 0 < len(reply.stdout) <= 10_000


async def _run(
    tmp_path: Path, code: str, timeout_s: float, *, upstream: bool, **settings: Any
) -> ExecutionResult:
    """`code` run once on a gateway of its own with `settings` changed, over the test
    upstream as `t` or over none."""
    servers = {"t": server_entry(TEST_SERVER)} if upstream else {}
    path = tmp_path / "mcp_servers.json"
    path.write_text(json.dumps({"servers": servers}), encoding="utf-8")
    gateway = await start_gateway(path, **settings)
    try:
        return await gateway.execute(code, timeout_s=timeout_s)
    finally:
        await gateway.aclose()
