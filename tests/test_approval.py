"""Approval of writes (contract §8) through the gateway: the questions asked, the answers
kept for the run, declined calls that never reach the upstream, and paused clocks."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from fastmcp import Client
from mcp.types import ElicitResult

from mcp_code_mode.approval import ApprovalRequest
from mcp_code_mode.executor_server import build_server
from mcp_code_mode.gateway import Gateway
from mcp_code_mode.sandbox.run_slots import RunSlots

from .conftest import require_pyodide
from .support import ROOT, TEST_SERVER, server_entry, start_gateway

BOARD = str(ROOT / "tests" / "servers" / "approvals_upstream.py")


class Person:
    """An approver that answers as told and remembers what it was asked."""

    def __init__(self, answer: bool | None = True, *, delay_s: float = 0.0) -> None:
        self.answer = answer
        self.delay_s = delay_s
        self.asked: list[ApprovalRequest] = []

    async def __call__(self, request: ApprovalRequest) -> bool | None:
        self.asked.append(request)
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        return self.answer


async def _board(tmp_path: Path, **overrides: Any) -> Gateway:
    config = tmp_path / "mcp_servers.json"
    extra = overrides.pop("entry", {})
    config.write_text(json.dumps({"servers": {"board": server_entry(BOARD, **extra)}}))
    return await start_gateway(config, pool_size=1, **overrides)


@pytest_asyncio.fixture
async def board(tmp_path: Path) -> AsyncIterator[Gateway]:
    gw = await _board(tmp_path)
    try:
        yield gw
    finally:
        await gw.aclose()


async def posts(gateway: Gateway) -> list[str]:
    out = (await gateway.execute("tools.board.read_posts()")).to_json()
    assert out["ok"], out
    return list(out["result"])


async def test_one_question_covers_a_fifty_call_loop(board: Gateway) -> None:
    person = Person(True)
    code = "for i in range(50):\n    tools.board.post_message(text=f'hi {i}')\ntools.board.read_posts()"
    out = (await board.execute(code, approver=person)).to_json()
    assert out["ok"], out
    assert len(out["result"]) == 50
    assert len(person.asked) == 1
    asked = person.asked[0]
    assert (asked.server, asked.tool) == ("board", "post_message")
    assert "hi 0" in asked.arguments and "rest of this run" in asked.message
    # The answer is kept for that run only: the next run asks again.
    await board.execute("tools.board.post_message(text='again')", approver=person)
    assert len(person.asked) == 2


async def test_a_declined_call_never_reaches_the_upstream(board: Gateway) -> None:
    person = Person(False)
    code = (
        "try:\n    tools.board.post_message(text='secret plan')\nexcept ToolError as e:\n"
        "    declined = str(e)\ndeclined"
    )
    out = (await board.execute(code, approver=person)).to_json()
    assert out["ok"], out
    assert "declined" in out["result"] and "MCP_CODE_APPROVAL" in out["result"]
    assert out["tool_calls"] == [
        {"server": "board", "tool": "post_message", "ms": out["tool_calls"][0]["ms"], "ok": False}
    ]
    assert await posts(board) == []
    uncaught = (await board.execute("tools.board.delete_posts()", approver=person)).to_json()
    assert uncaught["error"]["type"] == "TOOL_ERROR"


async def test_reads_and_read_only_tools_are_not_asked_about(board: Gateway) -> None:
    person = Person(False)
    out = (
        await board.execute(
            "[tools.board.read_posts(), tools.board.contradictory(), tools.board.plain()]",
            approver=person,
        )
    ).to_json()
    assert out["ok"], out
    assert person.asked == []


async def test_concurrent_calls_wait_for_the_one_answer(board: Gateway) -> None:
    person = Person(True, delay_s=0.3)
    code = "r = call_tools([('board', 'post_message', {'text': str(i)}) for i in range(8)])\nr"
    out = (await board.execute(code, approver=person)).to_json()
    assert out["ok"], out
    assert sorted(out["result"]) == list(range(1, 9))
    assert len(person.asked) == 1


@pytest.mark.parametrize("executor", ["local", "pyodide"])
async def test_waiting_for_a_person_does_not_count_against_the_run(
    tmp_path: Path, executor: str
) -> None:
    if executor == "pyodide":
        require_pyodide()
    gw = await _board(tmp_path, executor=executor)
    try:
        person = Person(True, delay_s=2.5)
        code = (
            "import asyncio\nawait asyncio.sleep(0.5)\ntools.board.post_message(text='x')\n"
            "await asyncio.sleep(0.5)\n'done'"
        )
        started = time.perf_counter()
        out = (await gw.execute(code, timeout_s=2.0, approver=person)).to_json()
        assert out["ok"], out
        assert out["result"] == "done"
        assert time.perf_counter() - started > 3.0  # it did wait for the person
        # ... and the run's own time still counts: a runaway after the answer times out.
        runaway = "tools.board.post_message(text='y')\nwhile True:\n    pass"
        out = (await gw.execute(runaway, timeout_s=1.0, approver=person)).to_json()
        assert out["error"]["type"] == "TIMEOUT", out
    finally:
        await gw.aclose()


@pytest.mark.parametrize(("mode", "reaches"), [("auto", True), ("required", False), ("off", True)])
async def test_a_client_that_cannot_ask(
    tmp_path: Path, mode: str, reaches: bool, caplog: pytest.LogCaptureFixture
) -> None:
    gw = await _board(tmp_path, approval=mode)
    try:
        code = "tools.board.post_message(text='x')\ntools.board.post_message(text='y')"
        out = (await gw.execute(code)).to_json()
        assert out["ok"] is reaches, out
        if not reaches:
            assert "MCP_CODE_APPROVAL=required" in out["error"]["message"]
        assert (await posts(gw)) == (["x", "y"] if reaches else [])
        # `auto` lets it through where nobody can be asked, never without a trace
        traced = [line for line in out["logs"] if line.startswith("approval:")]
        warned = [r for r in caplog.records if "ran without a person's approval" in r.message]
        unasked = mode == "auto"
        assert len(traced) == len(warned) == (1 if unasked else 0), (traced, warned)
        assert not unasked or "board.post_message" in traced[0]
    finally:
        await gw.aclose()


async def test_off_never_asks(tmp_path: Path) -> None:
    gw = await _board(tmp_path, approval="off")
    person = Person(False)
    try:
        out = (await gw.execute("tools.board.post_message(text='x')", approver=person)).to_json()
        assert out["ok"], out
        assert person.asked == []
    finally:
        await gw.aclose()


async def test_an_unanswered_question_is_a_decline(tmp_path: Path) -> None:
    gw = await _board(tmp_path, approval_timeout_s=0.5)
    try:
        never = Person(True, delay_s=30)
        out = (await gw.execute("tools.board.post_message(text='x')", approver=never)).to_json()
        assert out["error"]["type"] == "TOOL_ERROR"
        assert "nobody answered within 0.5s" in out["error"]["message"]
        assert await posts(gw) == []
    finally:
        await gw.aclose()


async def test_a_run_waiting_for_a_person_gives_its_place_to_other_runs(board: Gateway) -> None:
    """Runs at once are capped (here 1); a run whose question nobody answers held its place
    for `MCP_CODE_APPROVAL_TIMEOUT_S`, so one client's unanswered questions stopped every
    other client's runs for 2 minutes (outside attack 123). It gives its place back while
    it waits; as many may wait so as may run, and a question past that is declined at once."""
    executor: Any = board.executor
    executor.run_slots = RunSlots(1)
    answer: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

    async def slow(request: ApprovalRequest) -> bool:
        return await answer

    code = "tools.board.post_message(text='parked')\n'posted'"
    parked = asyncio.ensure_future(board.execute(code, approver=slow))
    while executor.run_slots.parked == 0:
        await asyncio.sleep(0.01)
    started = time.perf_counter()
    plain = await board.execute("1 + 1", timeout_s=10)
    waited = time.perf_counter() - started
    declined = await board.execute(code, approver=Person(True))
    answer.set_result(True)
    out = (await parked).to_json()
    assert plain.ok and plain.result == 2 and waited < 8, (plain.to_json(), waited)
    assert declined.error is not None and "already waiting for a person" in declined.error.message
    assert out["ok"] and out["result"] == "posted", out
    assert await posts(board) == ["parked"]
    assert executor.run_slots.parked == 0 and not executor.run_slots.locked()


async def test_an_agent_step_waiting_for_a_person_gives_its_session_place_back(
    board: Gateway,
) -> None:
    """`run_task`'s steps run in sessions, a few at once (here 1); a step whose question
    nobody answered kept its session's place, so 4 unanswered questions stopped every
    other client's `run_task` for the approval timeout (outside attack 124)."""
    executor: Any = board.executor
    executor.session_slots = RunSlots(1)
    answer: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

    async def slow(request: ApprovalRequest) -> bool:
        return await answer

    sessions = [executor.open_session() for _ in range(3)]
    code = "tools.board.post_message(text='parked')\n'posted'"
    try:
        parked = asyncio.ensure_future(board.execute(code, approver=slow, session=sessions[0]))
        while executor.session_slots.parked == 0:
            await asyncio.sleep(0.01)
        other = await asyncio.wait_for(board.execute("1 + 1", session=sessions[1]), 30)
        sessions[1].close()  # its place back: the third may take it
        declined = await board.execute(code, approver=Person(True), session=sessions[2])
        answer.set_result(True)  # the third session keeps the place: this one goes on without
        out = (await asyncio.wait_for(parked, 30)).to_json()  # it waited for one (attack 126)
        assert executor.session_slots.parked == 1  # out of its place until it ends
    finally:
        for session in sessions:
            session.close()
    assert other.ok and other.result == 2, other.to_json()
    assert declined.error is not None and "already waiting for a person" in declined.error.message
    assert out["ok"] and out["result"] == "posted", out
    assert executor.session_slots.parked == 0 and not executor.session_slots.locked()


async def test_an_approver_that_fails_declines_and_the_run_is_timed_again(
    board: Gateway,
) -> None:
    """A client answering the question with an error made the approver raise: the call
    failed as an internal error and the run went on with its clock stopped and out of its
    place, past its time limit (review of attack 124's fix). It is a decline now."""

    async def failing(request: ApprovalRequest) -> bool:
        raise RuntimeError("the client answered with an error")

    code = (
        "try:\n    tools.board.post_message(text='x')\nexcept ToolError as e:\n"
        "    print(e)\nwhile True:\n    pass"
    )
    started = time.perf_counter()
    out = (await board.execute(code, timeout_s=2.0, approver=failing)).to_json()
    took = time.perf_counter() - started
    assert out["error"] and out["error"]["type"] == "TIMEOUT", out
    assert "declined: the question could not be asked (RuntimeError)" in out["stdout"], out
    assert took < 6, took
    assert board.executor.run_slots.parked == 0  # type: ignore[attr-defined]
    assert await posts(board) == []


async def test_the_rest_of_a_batch_after_an_answer_is_timed(tmp_path: Path) -> None:
    """The run's clock stopped when a person was asked and started again only when the whole
    batch had ended, so the calls after the answer ran with no time limit (and no place
    among runs at once): 20 s for a 3 s run, 31 minutes possible (outside attack 124)."""
    config = tmp_path / "mcp_servers.json"
    servers = {"board": server_entry(BOARD), "t": server_entry(TEST_SERVER)}
    config.write_text(json.dumps({"servers": servers}))
    gw = await start_gateway(config, pool_size=1, max_concurrent_calls=1)
    try:
        code = "call_tools([('board', 'post_message', {'text': 'x'})] + [('t', 'sleep', {'seconds': 0.5})] * 12)"
        started = time.perf_counter()
        out = (await gw.execute(code, timeout_s=2.0, approver=Person(True))).to_json()
        took = time.perf_counter() - started
    finally:
        await gw.aclose()
    assert out["error"] and out["error"]["type"] == "TIMEOUT", out
    assert took < 5.5, took  # 6 s of calls after the answer, for a 2 s run


async def test_approve_tools_globs_replace_the_annotations(tmp_path: Path) -> None:
    gw = await _board(tmp_path, entry={"approve_tools": ["plain", "read_*"]})
    person = Person(False)
    try:
        out = (
            await gw.execute(
                "try:\n    tools.board.read_posts()\nexcept ToolError:\n    pass\n"
                "tools.board.post_message(text='no question')",
                approver=person,
            )
        ).to_json()
        assert out["ok"], out
        assert [(a.server, a.tool) for a in person.asked] == [("board", "read_posts")]
    finally:
        await gw.aclose()


async def test_search_and_docs_say_what_needs_approval(board: Gateway) -> None:
    hits = {h["tool"]: h for h in board.search_tools("post message", 10)}
    assert hits["post_message"]["description"].startswith("[needs approval")
    assert hits["read_posts"]["description"].startswith("[read-only]")
    assert board.get_tool_docs("board", "delete_posts").startswith("# needs approval")
    assert "needs approval" not in board.get_tool_docs("board", "plain")


# -- through a real MCP client with an elicitation handler --------------------------------


class Handler:
    """A client's elicitation handler: answers with `action`, after `delay_s`."""

    def __init__(self, action: str, *, delay_s: float = 0.0) -> None:
        self.action = action
        self.delay_s = delay_s
        self.messages: list[str] = []

    async def __call__(self, message: str, response_type: Any, params: Any, context: Any) -> Any:
        self.messages.append(message)
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if self.action == "accept":
            return {"approve": True}
        if self.action == "accept-unticked":  # a form's "Accept" with its box left empty
            return ElicitResult(action="accept", content={})
        return ElicitResult(action=self.action)


async def call(gateway: Gateway, handler: Handler | None, code: str) -> dict[str, Any]:
    server = build_server(gateway)
    client = Client(server, elicitation_handler=handler) if handler else Client(server)
    async with client:
        result = await client.call_tool("execute_code", {"code": code}, raise_on_error=False)
    assert isinstance(result.structured_content, dict), result
    return result.structured_content


LOOP = (
    "for i in range(50):\n    tools.board.post_message(text=str(i))\nlen(tools.board.read_posts())"
)


async def test_a_client_that_accepts_is_asked_once_for_a_loop(board: Gateway) -> None:
    handler = Handler("accept")
    out = await call(board, handler, LOOP)
    assert out["ok"] and out["result"] == 50, out
    assert len(handler.messages) == 1
    assert "board.post_message" in handler.messages[0] and '"0"' in handler.messages[0]


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_a_client_that_declines_or_cancels(board: Gateway, action: str) -> None:
    handler = Handler(action)
    code = (
        "try:\n    tools.board.post_message(text='x')\nexcept ToolError as e:\n    r = str(e)\n"
        "[r, len(tools.board.read_posts())]"
    )
    out = await call(board, handler, code)
    assert out["ok"], out
    assert "declined" in out["result"][0] and out["result"][1] == 0
    assert len(handler.messages) == 1


async def test_an_accept_without_a_yes_declines_and_says_why(board: Gateway) -> None:
    """A client's plain "Accept" with the `approve` box left empty was declined as if the
    person had said no (a new user's first hour, M): the call is still not sent, and the
    reason says what an approval needs."""
    code = (
        "try:\n    tools.board.post_message(text='x')\nexcept ToolError as e:\n    r = str(e)\n"
        "[r, len(tools.board.read_posts())]"
    )
    out = await call(board, Handler("accept-unticked"), code)
    assert out["ok"] and out["result"][1] == 0, out
    assert "without approve set to true" in out["result"][0], out


async def test_a_client_that_never_answers(tmp_path: Path) -> None:
    gw = await _board(tmp_path, approval_timeout_s=1.0)
    try:
        out = await call(gw, Handler("accept", delay_s=3.0), "tools.board.post_message(text='x')")
        assert out["error"]["type"] == "TOOL_ERROR", out
        assert "nobody answered" in out["error"]["message"]
        assert await posts(gw) == []
    finally:
        await gw.aclose()


async def test_concurrent_calls_in_call_tools_share_the_clients_answer(board: Gateway) -> None:
    handler = Handler("accept")
    code = "call_tools([('board', 'post_message', {'text': str(i)}) for i in range(6)])"
    out = await call(board, handler, code)
    assert out["ok"] and sorted(out["result"]) == [1, 2, 3, 4, 5, 6], out
    assert len(handler.messages) == 1


@pytest.mark.parametrize(("mode", "posted"), [("auto", 1), ("required", 0)])
async def test_a_client_without_elicitation(tmp_path: Path, mode: str, posted: int) -> None:
    gw = await _board(tmp_path, approval=mode)
    try:
        code = "try:\n    tools.board.post_message(text='x')\nexcept ToolError:\n    pass\n1"
        out = await call(gw, None, code)
        assert out["ok"], out
        assert len(await posts(gw)) == posted
    finally:
        await gw.aclose()


class Picky(Handler):
    """Approves the questions that name `tool`, declines the others."""

    def __init__(self, tool: str) -> None:
        super().__init__("accept")
        self.tool = tool

    async def __call__(self, message: str, response_type: Any, params: Any, context: Any) -> Any:
        self.messages.append(message)
        return {"approve": True} if self.tool in message else ElicitResult(action="decline")


@pytest.mark.parametrize("first", ["post_message", "delete_posts"])
async def test_each_answer_settles_the_question_it_was_shown_for(
    board: Gateway, first: str
) -> None:
    """Outside attack 82: a run asking about two tools at once (`call_tools`) kept one
    answer slot, so the answer to the question shown settled the other: approving
    `add_note` ran `delete_note`. Each question now has its own answer."""
    code = (
        "out = []\ncalls = [('board', 'post_message', {'text': 'x'}), ('board', 'delete_posts', {})]\n"
        f"for r in call_tools(calls if {first!r} == 'post_message' else calls[::-1]):\n"
        "    out.append(r if isinstance(r, int) else 'declined' if 'declined' in str(r) else 'ERR')\n"
        "[out, tools.board.read_posts()]"
    )
    handler = Picky("board.post_message")
    result = await call(board, handler, code)
    assert result["ok"], result
    outcomes, left = result["result"]
    posted, deleted = outcomes if first == "post_message" else outcomes[::-1]
    assert (posted, deleted, left) == (1, "declined", ["x"]), result
    assert len(handler.messages) == 2, handler.messages


def _unanswered() -> tuple[asyncio.Future[bool], Callable[[ApprovalRequest], Awaitable[bool]]]:
    """An approver whose person answers only when the future is set."""
    answer: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

    async def never(request: ApprovalRequest) -> bool:
        return await answer

    return answer, never


async def test_one_client_cannot_take_every_place_of_runs_waiting_for_a_person(
    board: Gateway,
) -> None:
    """A client that asked as many questions as may wait, never answered and hung up had
    every other client's questions declined unasked for the whole approval timeout
    (outside attack 146). One client (by its token, when it has one) may have three
    quarters of those places."""
    executor: Any = board.executor
    executor.run_slots = RunSlots(4)  # three for one client
    answer, never = _unanswered()
    code = "tools.board.post_message(text='x')\n'posted'"
    held = [
        asyncio.ensure_future(board.execute(code, approver=never, client=f"{n} 1 (token: team)"))
        for n in "abc"  # one token, whatever names its clients give
    ]
    while executor.run_slots.parked < 3:
        await asyncio.sleep(0.01)
    fourth = await board.execute(code, approver=Person(True), client="d 1 (token: team)")
    other = Person(True)
    answered = await board.execute(code, approver=other, client="e 1 (token: ops)")
    answer.set_result(False)
    await asyncio.gather(*held)
    assert fourth.error is not None and "of this client" in fourth.error.message, fourth
    assert answered.ok and len(other.asked) == 1, answered
    assert executor.run_slots.parked == 0 and executor.run_slots.parked_by == {}


async def test_one_client_cannot_take_every_session_place_waiting_for_a_person(
    board: Gateway,
) -> None:
    """`run_task`'s steps run in sessions, whose places were taken without naming their
    client: the share of one client never applied to them (review 150)."""
    executor: Any = board.executor
    executor.session_slots = RunSlots(4)  # three for one client
    answer, never = _unanswered()
    code = "tools.board.post_message(text='x')\n'posted'"
    sessions = [executor.open_session() for _ in range(5)]
    try:
        held = [
            asyncio.ensure_future(
                board.execute(code, approver=never, session=sessions[i], client="a (token: t)")
            )
            for i in range(3)
        ]
        while executor.session_slots.parked < 3:
            await asyncio.sleep(0.01)
        fourth = await board.execute(
            code, approver=Person(True), session=sessions[3], client="b (token: t)"
        )
        other = await board.execute(
            code, approver=Person(True), session=sessions[4], client="c (token: u)"
        )
        answer.set_result(False)
        await asyncio.gather(*held)
    finally:
        for session in sessions:
            session.close()
    assert fourth.error is not None and "of this client" in fourth.error.message, fourth
    assert other.ok, other.to_json()


async def test_each_question_of_a_run_is_timed_from_when_it_is_asked(tmp_path: Path) -> None:
    """A person answers one question at a time (a terminal asks them in turn): the second
    question's time ran out while it waited behind the first, and it was declined as
    "nobody answered" though it was answered in time (review 151)."""
    gw = await _board(tmp_path, approval_timeout_s=4.0)
    in_turn = asyncio.Lock()
    asked: list[str] = []

    async def one_at_a_time(request: ApprovalRequest) -> bool:
        async with in_turn:
            asked.append(request.tool)
            await asyncio.sleep(2.5)  # each answered well within its 4 s
            return True

    code = (
        "calls = [('board', 'post_message', {'text': 'x'}), ('board', 'delete_posts', {})]\n"
        "[r if isinstance(r, int) else str(r) for r in call_tools(calls)]"
    )
    try:
        out = (await gw.execute(code, approver=one_at_a_time, timeout_s=30)).to_json()
    finally:
        await gw.aclose()
    assert out["ok"] and all(isinstance(r, int) for r in out["result"]), out
    assert sorted(asked) == ["delete_posts", "post_message"]
