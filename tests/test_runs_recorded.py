"""Runs are recorded (contract §10): a real gateway over real upstreams writes each run to the
store, and `mcp-code-mode runs` reads it back from another process."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_code_mode.approval import ApprovalRequest
from mcp_code_mode.runs import RunRecord, RunStore, RunSummary

from .support import (
    QUIET,
    ROOT,
    SECRET,
    TEST_SERVER,
    ConfigWriter,
    server_entry,
    start_gateway,
)
from .test_executor_server import _serve as serve_stdio

BOARD = str(ROOT / "tests" / "servers" / "approvals_upstream.py")

CODE = """
import asyncio
first = tools.testsrv.echo(text="one")
many = await call_tools([("testsrv", "structured", {"n": i}) for i in range(20)])
try:
    tools.testsrv.fail(message="it broke on purpose")
except ToolError as exc:
    print("failed as asked")
tools.board.post_message(text="hello")
leak = tools.testsrv.env(name="TOKEN")
print(leak)
result = {"first": first, "n": len(many), "leak": leak}
"""


def _the_one_run(path: Path) -> tuple[RunSummary, RunRecord | None]:
    """The only run the store at `path` lists, and that run read back whole."""
    store = RunStore.open(path)
    try:
        (summary,) = store.list_runs()
        return summary, store.get(summary.id)
    finally:
        store.close()


def _servers() -> dict[str, object]:
    testsrv = server_entry(TEST_SERVER, env={"TOKEN": "${MCP_CODE_TEST_SECRET}"})
    return {"testsrv": testsrv, "board": server_entry(BOARD)}


async def test_a_run_is_recorded_with_every_call_in_order(
    write_config: ConfigWriter, tmp_path: Path
) -> None:
    asked: list[ApprovalRequest] = []

    async def approve(request: ApprovalRequest) -> bool:
        asked.append(request)
        return True

    gateway = await start_gateway(write_config(_servers()), runs_db=str(tmp_path / "runs.db"))
    try:
        reply = await gateway.execute(CODE, approver=approve, client="pytest 1.0")
    finally:
        await gateway.aclose()  # writes what is queued
    assert reply.ok, reply.error
    assert len(asked) == 1
    summary, run = _the_one_run(gateway.recorder.path)
    assert run is not None and run.ok and run.client == "pytest 1.0"
    assert run.kind == "execute_code" and run.code == CODE
    names = [f"{c.server}.{c.tool}" for c in run.calls]
    assert names == [
        "testsrv.echo",
        *["testsrv.structured"] * 20,
        "testsrv.fail",
        "board.post_message",
        "testsrv.env",
    ]
    assert [c.order for c in run.calls] == list(range(24))
    failed = [c for c in run.calls if not c.ok]
    assert [c.tool for c in failed] == ["fail"] and "it broke on purpose" in (failed[0].error or "")
    (posted,) = [c for c in run.calls if c.tool == "post_message"]
    assert posted.approval == "approved" and json.loads(posted.arguments) == {"text": "hello"}
    batch = [c for c in run.calls if c.tool == "structured"]
    # The batch ran concurrently: each call started before the batch's last one ended.
    assert max(c.started_ms for c in batch) < max(c.started_ms + c.ms for c in batch)
    assert all(c.bytes_out > 0 for c in run.calls if c.ok)
    assert summary.calls == 24 and summary.failed_calls == 1
    assert set(run.tokens) == {"code", "reply", "upstream_results"} and run.tokens["code"] > 50
    # The secret an upstream was given (a ${VAR} value) came back through the run: never stored.
    stored = json.dumps([run.stdout, run.result, [c.arguments for c in run.calls]])
    assert SECRET not in stored and "${MCP_CODE_TEST_SECRET}" in run.stdout


async def test_auto_approval_without_a_person_is_recorded(
    write_config: ConfigWriter, tmp_path: Path
) -> None:
    gateway = await start_gateway(write_config(_servers()), runs_db=str(tmp_path / "runs.db"))
    try:
        reply = await gateway.execute('tools.board.post_message(text="x")', client="no-asker")
    finally:
        await gateway.aclose()
    assert reply.ok
    _, run = _the_one_run(gateway.recorder.path)
    assert run is not None
    assert [c.approval for c in run.calls] == ["not asked (auto)"]
    assert "needs approval and ran without it" in run.logs


async def test_runs_off_writes_nothing(write_config: ConfigWriter, tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    gateway = await start_gateway(write_config({}), runs_db=str(store), runs="off")
    try:
        assert (await gateway.execute("result = 1 + 1")).ok
    finally:
        await gateway.aclose()
    assert gateway.recorder.path == store and not store.exists()


def test_the_runs_command_lists_and_shows_from_another_process(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "MCP_CODE_CACHE_DIR": str(tmp_path),
        "MCP_CODE_RUNS_DB": "",  # the default: runs.sqlite3 in the cache folder
        "FASTMCP_CHECK_FOR_UPDATES": "off",
        "FASTMCP_SHOW_SERVER_BANNER": "false",
    }
    command = [str(Path(sys.executable).parent / "mcp-code-mode")]
    config = tmp_path / "mcp_servers.json"
    config.write_text(json.dumps({"servers": {"testsrv": server_entry(TEST_SERVER)}}))
    code = 'tools.testsrv.echo(text="<script>alert(1)</script>")\nresult = 1 / 0'
    ran = subprocess.run(
        [*command, "exec", "--config", str(config), "--code", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert ran.returncode == 1, ran.stderr
    store = tmp_path / "mcp-code-mode" / "runs.sqlite3"  # the user's alone (attack 136)
    assert store.stat().st_mode & 0o777 == 0o600
    listed = subprocess.run(
        [*command, "runs", "--json"], env=env, capture_output=True, text=True, timeout=60
    )
    (row,) = json.loads(listed.stdout)
    assert row["ok"] is False and row["error_type"] == "RUNTIME_ERROR" and row["calls"] == 1
    shown = subprocess.run(
        [*command, "runs", row["id"]], env=env, capture_output=True, text=True, timeout=60
    )
    assert shown.returncode == 0
    assert "   2 | result = 1 / 0" in shown.stdout and "error (line 2)" in shown.stdout
    assert "testsrv.echo(" in shown.stdout and "cli exec" in shown.stdout
    missing = subprocess.run(
        [*command, "runs", "0" * 32], env=env, capture_output=True, text=True, timeout=60
    )
    assert missing.returncode == 2 and "no run" in missing.stderr
    none = subprocess.run(  # it said "no runs recorded yet", with a run there (attack 133)
        [*command, "runs", "--last", "0"], env=env, capture_output=True, text=True, timeout=60
    )
    assert none.returncode == 2 and "1 or more" in none.stderr


BIG = str(ROOT / "tests" / "servers" / "big_reply_upstream.py")


async def test_a_big_result_is_measured_and_counted_from_the_text_the_wire_carried(
    write_config: ConfigWriter, tmp_path: Path
) -> None:
    """The record's sizes and token figure come from each result's text as it arrived (kept
    by reference, measured on the writer's thread), past the part kept for counting too."""
    code = 'big = tools.big.big(size=3_000_000)\nsmall = tools.big.echo(text="é" * 1_000)\nlen(big)'
    gateway = await start_gateway(
        write_config({"big": server_entry(BIG)}), runs_db=str(tmp_path / "runs.db")
    )
    try:
        reply = await gateway.execute(code)
    finally:
        await gateway.aclose()
    assert reply.ok and reply.result == 3_000_000, reply.error
    _, run = _the_one_run(gateway.recorder.path)
    assert run is not None
    assert [(c.tool, c.bytes_out) for c in run.calls] == [("big", 3_000_000), ("echo", 2_000)]
    assert [json.loads(c.arguments) for c in run.calls] == [
        {"size": 3_000_000},
        {"text": "é" * 1_000},
    ]
    # Counted on the first 250,000 characters, then scaled to all 3,001,001 of them.
    assert run.tokens["upstream_results"] > run.tokens["reply"] * 100


async def test_an_unapproved_write_stays_in_the_reply_past_unknown_names_and_an_output_cut(
    write_config: ConfigWriter, tmp_path: Path
) -> None:
    """Outside attack 137: twenty unknown tool names called first put the write in
    `(others)`, and logs past the output limit cut the note that it ran unapproved: the
    reply named neither the tool nor the approval."""
    code = (
        "for i in range(20):\n    try:\n        call_tool('testsrv', 'nope%d' % i, {})\n"
        "    except ToolError:\n        pass\n"
        "tools.board.post_message(text='x')\n"
        "for i in range(300):\n    log(i, 'y' * 400)\n"
    )
    gateway = await start_gateway(
        write_config(_servers()), runs_db=str(tmp_path / "runs.db"), max_output_chars=20_000
    )
    try:
        reply = await gateway.execute(code, client="no-asker")
    finally:
        await gateway.aclose()
    assert reply.error is not None and reply.error.type == "OUTPUT_LIMIT", reply
    assert ("board", "post_message") in {(c.server, c.tool) for c in reply.tool_calls}
    assert "approval: board.post_message needs approval and ran without it" in reply.logs[0]


async def test_a_run_its_client_cancelled_is_recorded_with_its_calls(
    write_config: ConfigWriter, tmp_path: Path
) -> None:
    """Outside attack 138: 32 runs cancelled or dropped by their clients, each after an
    upstream call, left no record (a cancellation skipped the recorder)."""
    code = "tools.testsrv.echo(text='before')\nimport asyncio\nawait asyncio.sleep(60)"
    gateway = await start_gateway(write_config(_servers()), runs_db=str(tmp_path / "runs.db"))
    try:
        run = asyncio.create_task(gateway.execute(code, client="leaves"))
        await asyncio.sleep(3)  # its call is made in milliseconds; its sleep has a minute
        assert not run.done()
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
    finally:
        await gateway.aclose()
    summary, record = _the_one_run(gateway.recorder.path)
    assert record is not None and summary.ok is False and summary.client == "leaves"
    assert record.error is not None and "cancelled" in record.error, record.error
    assert [(c.tool, c.ok) for c in record.calls] == [("echo", True)]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_run_under_way_when_the_server_is_stopped_by_a_signal_is_recorded(
    tmp_path: Path, signum: int
) -> None:
    """Outside attack 139: a desktop client quitting (SIGTERM) or Ctrl-C stopped a stdio
    server whose run had written upstream; the run reached the recorder, but the second
    close of the store (the signal's cleanup) did not wait for its writer, and the process
    exited with the record still queued."""
    upstream = {"command": sys.executable, "args": [TEST_SERVER], "env": dict(QUIET)}
    proc = serve_stdio(tmp_path, {"t": upstream})
    assert proc.stdin is not None and proc.stdout is not None
    client = {"name": "t", "version": "1"}
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client}
    code = "tools.t.echo(text='written')\nimport asyncio\nawait asyncio.sleep(60)"
    call = {"name": "execute_code", "arguments": {"code": code}, "_meta": {"progressToken": 7}}
    for message in (
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call},
    ):
        proc.stdin.write((json.dumps(message) + "\n").encode())
        proc.stdin.flush()
    assert "result" in json.loads(proc.stdout.readline())
    store_path = tmp_path / "c" / "mcp-code-mode" / "runs.sqlite3"
    try:
        # progress says when the run has made its call (a fixed 3 s after the upstream's
        # process appeared was too short on a busy machine); pytest's timeout ends a wait
        while '"1 call, ' not in proc.stdout.readline().decode():
            pass
        proc.send_signal(signum)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
    summary, record = _the_one_run(store_path)
    assert record is not None and summary.ok is False
    assert [(c.tool, c.ok) for c in record.calls] == [("echo", True)]
    # the gateway's doing, not its client's (outside attack 148: "the client cancelled")
    assert "a signal to the gateway stopped the run" in json.dumps(record.error), record.error
