"""A call's arguments on the host (`call_args`, `runs.trace`): measured once, off the event
loop when large, and recorded as clipped text, never as the value (outside attack 85: a
record kept each call's copied object graph, 27 MB of memory per 1 MB call; a batch's
size checks held the loop 1-3.6 s)."""

from __future__ import annotations

import asyncio
import json
import math
import random
import time
from pathlib import Path

import mcp_types

from mcp_code_mode.call_args import bounded_args, explain
from mcp_code_mode.encodable import wire_size
from mcp_code_mode.errors import ToolCallFailed
from mcp_code_mode.runs.records import MAX_CALL_CHARS
from mcp_code_mode.runs.trace import RunTrace
from mcp_code_mode.sandbox.base import ExecutionResult

from .support import SECRET, TEST_SERVER, ConfigWriter, server_entry, start_gateway, the_one_run


async def _run(write_config: ConfigWriter, code: str, **settings: object) -> ExecutionResult:
    """`code` run once on a gateway over the test upstream, with `settings` changed."""
    gateway = await start_gateway(write_config({"testsrv": server_entry(TEST_SERVER)}), **settings)
    try:
        return await gateway.execute(code, timeout_s=60)
    finally:
        await gateway.aclose()


def _hidden(text: str) -> str:
    return text.replace(SECRET, "${MCP_CODE_TEST_SECRET}")


def test_a_call_is_traced_as_clipped_redacted_text() -> None:
    trace = RunTrace("execute_code", "code", None, "pytest", "clipped", _hidden)
    # the secret straddles the clip: redacted before clipping, none of it is kept
    text = json.dumps({"text": "x" * 1985 + SECRET + "y" * 900_000})
    call = trace.call("s", "t", text, len(text))
    assert call.arguments == _hidden(text)[:MAX_CALL_CHARS]
    assert SECRET[:6] not in call.arguments and call.bytes_in == len(text)
    assert trace.chars < 2 * MAX_CALL_CHARS + len("code")  # the run holds text, not the value
    off = RunTrace("execute_code", "code", None, "pytest", "off", _hidden)
    assert off.call("s", "t", text, len(text)).arguments == ""


async def test_the_text_is_what_is_sent_and_its_size_the_wire_size() -> None:
    args = {"q": "caf\u00e9 \ud800", "n": [1.5, 2, None]}
    checked = await bounded_args(args, 1000)
    assert checked.refused is None and checked.args == {
        "q": "caf\u00e9 \ufffd",
        "n": [1.5, 2, None],
    }
    assert json.loads(checked.text) == checked.args
    assert checked.size == wire_size(checked.args, 1000) == len(checked.text.encode())


async def test_a_recorded_call_keeps_its_size_and_clipped_text(
    write_config: ConfigWriter, tmp_path: Path
) -> None:
    testsrv = server_entry(TEST_SERVER, env={"TOKEN": "${MCP_CODE_TEST_SECRET}"})
    gateway = await start_gateway(
        write_config({"testsrv": testsrv}), runs_db=str(tmp_path / "runs.db")
    )
    code = 'len(tools.testsrv.echo(text="x" * 1985 + "' + SECRET + '" + "y" * 300_000))'
    try:
        reply = await gateway.execute(code, timeout_s=60)
    finally:
        await gateway.aclose()
    assert reply.ok, reply.error
    (call,) = the_one_run(gateway.recorder.path).calls
    assert len(call.arguments) == MAX_CALL_CHARS and SECRET[:6] not in call.arguments
    assert call.bytes_in == len('{"text":""}') + 1985 + len(SECRET) + 300_000


async def test_a_batch_of_size_checks_leaves_the_loop_its_turns(
    write_config: ConfigWriter,
) -> None:
    """29 calls of 130,000 integers each (under 1 MB, over the inline mark): their checks
    ran back to back on the event loop, 3.6 s (attack 85)."""
    gateway = await start_gateway(write_config({"testsrv": server_entry(TEST_SERVER)}))
    code = 'len(call_tools([("testsrv", "no_such_tool", {"q": [0] * 130_000})] * 29))'
    worst, stop = 0.0, asyncio.Event()

    async def beat() -> None:
        nonlocal worst
        while not stop.is_set():
            started = time.perf_counter()
            await asyncio.sleep(0.005)
            worst = max(worst, time.perf_counter() - started - 0.005)

    try:
        await gateway.execute("1", timeout_s=60)  # a worker and the upstream ready
        beating = asyncio.ensure_future(beat())
        reply = await gateway.execute(code, timeout_s=120)
        stop.set()
        await beating
    finally:
        await gateway.aclose()
    assert reply.ok and reply.result == 29, reply.error
    assert worst < 1.5, f"the event loop was held {worst:.2f} s"  # generous: 3.6 s before


async def test_a_batch_results_share_one_budget(write_config: ConfigWriter) -> None:
    """Results reach the worker in one message per batch: together they are bounded like
    one result (24 replies of 9.6 MB took the gateway to 750 MB, attack 85). A result past
    the budget is a ToolError in its slot, and not ok in `tool_calls` (attack 92); a lone
    call is not affected."""
    code = (
        'out = call_tools([("testsrv", "echo", {"text": "x" * 400_000})] * 3)\n'
        "failed = [str(o) for o in out if isinstance(o, ToolError)]\n"
        '[len(failed), failed[0], len(tools.testsrv.echo(text="y" * 450_000))]'
    )
    reply = await _run(write_config, code, max_result_bytes=1_000_000)
    assert reply.ok, reply.error
    count, message, alone = reply.result
    assert count == 1 and alone == 450_000, reply.result
    assert "passed 1,000,000 bytes in all (MCP_CODE_MAX_RESULT_BYTES)" in message
    oks = [call.ok for call in reply.tool_calls]
    assert sorted(oks[:3]) == [False, True, True] and oks[3], reply.tool_calls


def test_many_secrets_in_the_margin_are_still_redacted() -> None:
    """Redaction shrinks the text: with many secrets in the margin, one cut at its end
    came within the kept characters (outside attack 86)."""
    secret = "s" * 300
    trace = RunTrace(
        "execute_code", "", None, "pytest", "clipped", lambda t: t.replace(secret, "$K")
    )
    text = secret * 219 + "x" * 1_540 + secret + "tail"  # the last one cut at 67,536
    call = trace.call("s", "t", text, len(text))
    assert "s" * 10 not in call.arguments and call.arguments.endswith("$Ktail")


async def test_a_batch_budget_charges_text_as_the_worker_gets_it(
    write_config: ConfigWriter,
) -> None:
    """The reply to the worker is ASCII JSON: an emoji is 12 bytes there, so a batch of
    results counted in characters reached 115 MB (attack 86)."""
    code = (
        'out = call_tools([("testsrv", "echo", {"text": "\\U0001F600" * 30_000})] * 3)\n'
        "sum(isinstance(o, ToolError) for o in out)"
    )
    reply = await _run(write_config, code, max_result_bytes=1_000_000)
    assert reply.ok and reply.result == 1, (reply.result, reply.error)  # 360 KB each: 2 fit


async def test_integers_too_long_to_parse_cheaply_are_refused_unsent(
    write_config: ConfigWriter,
) -> None:
    code = (
        "try:\n    tools.testsrv.echo(text=str(10 ** 700), n=10 ** 700)\nexcept ToolError as e:\n"
        "    out = str(e)\nout"
    )
    reply = await _run(write_config, code)
    assert reply.ok and "integers of more than 640 digits" in reply.result, reply


async def test_a_result_may_hold_long_integers(write_config: ConfigWriter) -> None:
    """Only tool arguments are bound to MAX_INT_DIGITS: a run's own result is not."""
    reply = await _run(write_config, "import math\nmath.factorial(500)")
    assert reply.ok and reply.result == math.factorial(500), reply.error


def _tool(schema: dict[str, object]) -> mcp_types.Tool:
    return mcp_types.Tool(name="t", inputSchema=schema)


async def test_a_failed_call_is_explained_in_bounded_time_off_the_loop() -> None:
    """200 argument names of 100 characters over {a, b}, and five unknown ones like them: the
    closest name took 1.4 s a failed call, on the event loop (outside attack 140)."""
    rng = random.Random(140)
    names = ["".join(rng.choice("ab") for _ in range(100)) for _ in range(200)]
    tool = _tool({"type": "object", "properties": {name: {} for name in names}})
    given = {"".join(rng.choice("ab") for _ in range(100)): 1 for _ in range(5)}
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.005)
            ticks += 1

    ticker = asyncio.create_task(tick())
    started = time.perf_counter()
    failed = await explain(ToolCallFailed("h", "t", "bad"), lambda: tool, given)
    took = time.perf_counter() - started
    ticker.cancel()
    assert failed.message.startswith("no argument '"), failed.message
    assert took < 0.5, took  # 30 ms here, bounded whatever the names
    assert ticks >= 1 or took < 0.02, (ticks, took)


async def test_a_schema_that_takes_other_names_gets_no_hint_and_names_are_one_line() -> None:
    """`additionalProperties` made "no argument 'timeout'" lead the reply of a call whose
    schema took any name; a listed name's newline and escape split the reply's lines
    (outside attack 140)."""
    failed = ToolCallFailed("db", "query", "database is down")
    combined = {"allOf": [{"properties": {"timeout": {}}}]}  # a zod intersection (140)
    for extra in ({"additionalProperties": True}, {"patternProperties": {"^x": {}}}, combined):
        tool = _tool({"type": "object", "properties": {"sql": {}}, **extra})
        said = await explain(failed, lambda tool=tool: tool, {"sql": "1", "timeout": 5})
        assert said.message == "database is down", said.message
    tool = _tool({"type": "object", "properties": {"x\n\x1b[2J": {}, "y": {}}})
    said = await explain(failed, lambda: tool, {"z\nforged": 1})
    assert said.message.startswith("no argument 'z forged'; it takes x"), said.message
    assert "\n" not in said.message and "\x1b" not in said.message, said.message
