"""The guest index reaches every worker (issue 19).

A worker forked after its zygote got an index inherits it, and its runs do not carry it;
any other worker gets it in its run message. A run message without an index uses the last
one the worker got. Real zygotes, workers and executors; the router answers every tool
call with the tool's original names.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
import pytest_asyncio
from dspy.primitives.code_interpreter import CodeExecutionError

from mcp_code_mode.sandbox.backend import Worker
from mcp_code_mode.sandbox.base import GuestIndex, Limits, ToolCallRecord
from mcp_code_mode.sandbox.conversation import Conversation
from mcp_code_mode.sandbox.executor import SandboxExecutor
from mcp_code_mode.sandbox.interpreter import MCPCodeInterpreter
from mcp_code_mode.sandbox.local import Zygote
from mcp_code_mode.sandbox.protocol import RunMessage
from mcp_code_mode.settings import DEFAULT_ALLOWED_IMPORTS
from mcp_code_mode.tool_results import ResultBudget

NOTES = {"notes": {"name": "notes", "tools": {"get_note": "get-note", "list_notes": "list_notes"}}}
MORE = {**NOTES, "extra": {"name": "extra", "tools": {"ping": "ping"}}}


class _Echo:
    """A router whose every tool answers with its server's and its own original names."""

    paused_s = 0.0
    owner = ""

    async def call(
        self,
        server: str,
        tool: str,
        args: dict[str, Any],
        *,
        budget: ResultBudget | None = None,
        refused: str | None = None,
    ) -> Any:
        return f"{server}.{tool}"

    def result_budget(self) -> ResultBudget:
        return ResultBudget(10**6)

    async def query(self, kind: str, args: dict[str, Any]) -> Any:
        return []

    def admit(self, count: int) -> None:
        return None

    def records(self) -> list[ToolCallRecord]:
        return []

    def on_pause(
        self, notify: Callable[[], Awaitable[str | None]], resume: Callable[[], Awaitable[None]]
    ) -> None:
        return None

    def logs_to(self) -> None:
        return None


def _message(
    version: int, code: str, *, index: dict[str, Any] | None = None, session: bool = False
) -> RunMessage:
    message: RunMessage = {
        "op": "run",
        "code": code,
        "input": None,
        "index_version": version,
        "timeout_s": 10.0,
        "max_output_chars": 100_000,
        "session": session,
    }
    if index is not None:
        message["index"] = index
    return message


async def _result(worker: Worker, message: RunMessage) -> Any:
    done = await Conversation(worker, _Echo()).run(message)
    assert done["ok"], done["error"]
    return done["result"]


@pytest_asyncio.fixture
async def zygote() -> AsyncIterator[Zygote]:
    zygote = Zygote(allowed_imports=DEFAULT_ALLOWED_IMPORTS)
    await zygote.start()
    try:
        yield zygote
    finally:
        await zygote.aclose()


@pytest_asyncio.fixture
async def forked(zygote: Zygote) -> AsyncIterator[Callable[[], Awaitable[Worker]]]:
    """Forks workers of `zygote`, and disposes of them after the test."""
    workers: list[Worker] = []

    async def fork() -> Worker:
        workers.append(await zygote.fork(memory_mb=256))
        return workers[-1]

    try:
        yield fork
    finally:
        await asyncio.gather(*(worker.dispose() for worker in workers))


async def test_a_worker_forked_after_the_index_runs_without_it(
    zygote: Zygote, forked: Callable[[], Awaitable[Worker]]
) -> None:
    index = GuestIndex.of(NOTES)
    before = await forked()
    zygote.use_index(index)
    after = await forked()
    assert before.index_version is None
    assert after.index_version == index.version
    code = "[dir(tools), repr(tools.notes), tools.notes.get_note()]"
    assert await _result(after, _message(index.version, code)) == [
        ["notes"],
        "<tools.notes: get_note, list_notes>",
        "notes.get-note",
    ]


async def test_a_run_without_an_index_uses_the_last_one_the_worker_got(
    forked: Callable[[], Awaitable[Worker]],
) -> None:
    worker = await forked()  # its zygote has no index
    assert await _result(worker, _message(7, "dir(tools)", session=True)) == []
    with_index = _message(8, "dir(tools)", index=NOTES, session=True)
    assert await _result(worker, with_index) == ["notes"]
    assert await _result(worker, _message(8, "tools.notes.list_notes()", session=True)) == (
        "notes.list_notes"
    )


async def test_a_worker_forked_before_a_version_change_gets_the_full_index(
    zygote: Zygote, forked: Callable[[], Awaitable[Worker]]
) -> None:
    old, new = GuestIndex.of(NOTES), GuestIndex.of(MORE)
    zygote.use_index(old)
    stale = await forked()
    zygote.use_index(new)
    fresh = await forked()
    assert (stale.index_version, fresh.index_version) == (old.version, new.version)
    # The executor's message holds the index; the conversation sends it where it is missing.
    message = _message(new.version, "[dir(tools), tools.extra.ping()]", index=new.servers)
    assert await _result(stale, message) == [["extra", "notes"], "extra.ping"]
    assert stale.index_version == new.version
    # A worker that has this version gets no index, not even a wrong one: it uses its own.
    wrong = _message(new.version, "dir(tools)", index=NOTES)
    assert await _result(fresh, wrong) == ["extra", "notes"]


async def test_a_restarted_zygote_gets_the_index_again(
    zygote: Zygote, forked: Callable[[], Awaitable[Worker]]
) -> None:
    index = GuestIndex.of(NOTES)
    zygote.use_index(index)
    await forked()
    assert zygote._proc is not None
    zygote._proc.send_signal(signal.SIGKILL)
    await zygote._proc.wait()
    worker = await forked()  # restarts the zygote first
    assert worker.index_version == index.version
    assert await _result(worker, _message(index.version, "dir(tools)")) == ["notes"]


async def test_an_index_larger_than_one_read_reaches_forked_workers(
    zygote: Zygote, forked: Callable[[], Awaitable[Worker]]
) -> None:
    tools = {f"tool_{n}": f"tool-{n}-with-a-long-original-name" for n in range(3000)}
    index = GuestIndex.of({"big": {"name": "big", "tools": tools}})
    zygote.use_index(index)
    worker = await forked()
    code = "[len(dir(tools.big)), tools.big.tool_2999()]"
    assert await _result(worker, _message(index.version, code)) == [
        3000,
        "big.tool-2999-with-a-long-original-name",
    ]


async def test_each_run_sees_its_own_index_while_versions_change() -> None:
    executor = SandboxExecutor(
        Zygote(allowed_imports=DEFAULT_ALLOWED_IMPORTS),
        allowed_imports=DEFAULT_ALLOWED_IMPORTS,
        limits=Limits(),
        pool_size=2,
    )
    await executor.start()
    try:
        indexes = [GuestIndex.of(NOTES), GuestIndex.of(MORE)]
        for run in range(8):  # idle workers hold either version, or the one before
            index = indexes[run % 2] if run < 6 else GuestIndex.of(dict(indexes[run % 2].servers))
            result = await executor.run(
                "dir(tools)", input=None, timeout_s=10, index=index, router=_Echo()
            )
            assert result.ok, result.error
            assert result.result == sorted(index.servers)
            await asyncio.sleep(0.05 * (run % 3))  # sometimes the pool refills first
    finally:
        await executor.aclose()


def test_an_interpreter_session_keeps_its_index() -> None:
    with MCPCodeInterpreter(index=MORE, timeout_s=5.0) as session:
        assert session.execute("dir(tools)") == "['extra', 'notes']"
        assert session.execute("repr(tools.notes)") == "'<tools.notes: get_note, list_notes>'"
        with pytest.raises(CodeExecutionError, match="no MCP servers"):
            session.execute("tools.extra.ping()")


# What guest code sees of `tools`: made when first read, exactly as when it was made whole.
ODD = {
    "notes": {
        "name": "notes",
        "tools": {"get_note": "get-note", "_2fa": "2fa", "__repr__": "repr", "_name": "nm"},
    },
    "down": {"name": "down", "tools": {}, "error": "server 'down' is error: boom"},
    "__init__": {"name": "init", "tools": {"x": "x"}},
}
SEEN = [
    ("dir(tools)", ["__init__", "down", "notes"]),
    ("repr(tools)", "<tools: notes, down, __init__>"),
    ("dir(tools.notes)", ["_2fa", "__repr__", "_name", "get_note"]),
    ("repr(tools.notes)", "<tools.notes: get_note, _2fa, __repr__, _name>"),
    ("repr(tools.down)", "<tools.down: no tools>"),
    ("tools.notes._2fa()", "notes.2fa"),
    ("tools.notes.__repr__()", "notes.repr"),  # a tool named like a method of the class
    ("tools.notes._name", "notes"),  # the server's name wins over a tool so named
    ("tools.__init__.x()", "init.x"),  # a server named like a method of the class
    (
        "[hasattr(tools, 'notes'), hasattr(tools, 'nope'), hasattr(tools.notes, '_2fa')]",
        [True, False, True],
    ),
]
REFUSED = [
    (
        "tools.nope",
        "ToolError: nope: unknown server; did you mean notes? (available: notes, down, __init__)",
    ),
    (
        "tools.notes.get_nte()",
        "ToolError: notes.get_nte: no tool 'get_nte'; did you mean get_note, _name? "
        "(available: get_note, _2fa, __repr__, _name)",
    ),
    ("tools.down.anything()", "ToolError: down.anything: server 'down' is error: boom"),
    (  # the view's own state is not the guest's to read, let alone change
        "tools.notes._tools['x'] = 'y'",
        "AttributeError: access to private attribute '_tools' of a _Server object is not "
        "allowed (private attributes of your own classes are fine)",
    ),
]


@pytest_asyncio.fixture(scope="module")
async def odd_executor() -> AsyncIterator[SandboxExecutor]:
    executor = SandboxExecutor(
        Zygote(allowed_imports=DEFAULT_ALLOWED_IMPORTS),
        allowed_imports=DEFAULT_ALLOWED_IMPORTS,
        limits=Limits(),
        pool_size=1,
    )
    await executor.start()
    try:
        yield executor
    finally:
        await executor.aclose()


ODD_INDEX = GuestIndex.of(ODD)


@pytest.mark.parametrize(("code", "expected"), SEEN)
async def test_what_guest_code_sees_of_tools(
    odd_executor: SandboxExecutor, code: str, expected: Any
) -> None:
    result = await odd_executor.run(code, input=None, timeout_s=10, index=ODD_INDEX, router=_Echo())
    assert result.ok, result.error
    assert result.result == expected


@pytest.mark.parametrize(("code", "message"), REFUSED)
async def test_unknown_names_and_changes_are_refused_with_the_same_messages(
    odd_executor: SandboxExecutor, code: str, message: str
) -> None:
    result = await odd_executor.run(code, input=None, timeout_s=10, index=ODD_INDEX, router=_Echo())
    assert result.error is not None
    assert result.error.message.splitlines()[-1] == message
