"""Approval asked on the terminal: a question that times out leaves the terminal alone."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .support import ROOT, server_entry

SCRIPT = Path(sys.executable).parent / "mcp-code-mode"

# The first question is left unanswered (it times out); the second is answered on time.
TWO_QUESTIONS = (
    "try:\n    tools.board.post_message(text='first')\nexcept ToolError as e:\n"
    "    print('first:', e)\n"
    "tools.board.delete_posts()\n'done'"
)


def _read_until(fd: int, marker: bytes, limit_s: float) -> bytes:
    shown, end = b"", time.monotonic() + limit_s
    while marker not in shown and time.monotonic() < end:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                shown += os.read(fd, 65536)
            except OSError:  # the terminal's other end closed
                break
    return shown


@contextmanager
def _exec_on_a_terminal(
    tmp_path: Path, code: str, approval_timeout_s: int
) -> Iterator[tuple[subprocess.Popen[bytes], int, Path]]:
    """`mcp-code-mode exec` of `code` over a board whose writes are logged, with stdin and
    stderr a terminal: the process, the terminal's other end and the board's log."""
    log = tmp_path / "board.log"
    board = server_entry(str(ROOT / "tests" / "servers" / "approvals_upstream.py"))
    board["env"] = {**board.get("env", {}), "BOARD_LOG": str(log)}
    config = tmp_path / "mcp_servers.json"
    config.write_text(json.dumps({"servers": {"board": board}}), encoding="utf-8")
    timeout = str(approval_timeout_s)
    env = {**os.environ, "MCP_CODE_POOL_SIZE": "1", "MCP_CODE_APPROVAL_TIMEOUT_S": timeout}
    controller, terminal = os.openpty()
    proc = subprocess.Popen(
        [str(SCRIPT), "exec", "--config", str(config), "--code", code],
        stdin=terminal,
        stdout=subprocess.PIPE,
        stderr=terminal,
        env=env,
    )
    os.close(terminal)
    try:
        yield proc, controller, log
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(controller)


def test_a_timed_out_question_neither_takes_the_next_answer_nor_holds_the_exit(
    tmp_path: Path,
) -> None:
    """A `readline` in a thread outlived its question's timeout: it took the "y" typed for
    the next question (reported as "nobody answered") and kept `exec` running after its
    result until Enter was pressed (outside attack 146)."""
    with _exec_on_a_terminal(tmp_path, TWO_QUESTIONS, 3) as (proc, controller, log):
        shown = _read_until(controller, b"Approve board.delete_posts", 90)
        assert b"Approve board.post_message" in shown, shown
        os.write(controller, b"y\n")
        started = time.monotonic()
        stdout, _ = proc.communicate(timeout=60)
        after_answer_s = time.monotonic() - started
    assert proc.returncode == 0, stdout
    assert b"nobody answered within 3s" in stdout and stdout.strip().endswith(b"done"), stdout
    assert log.read_text(encoding="utf-8").splitlines() == ["delete_posts "]
    assert after_answer_s < 30  # it ended without a further Enter


def test_two_questions_at_once_are_asked_one_after_the_other(tmp_path: Path) -> None:
    """`call_tools` asks about two tools at once: the second question's reader replaced the
    first's, so the line typed for the question shown first answered the one shown second:
    "n" to delete_posts ran it (review 150)."""
    code = (
        "calls = [('board', 'post_message', {'text': 'x'}), ('board', 'delete_posts', {})]\n"
        "[type(r).__name__ for r in call_tools(calls)]"
    )
    answers = {b"post_message": b"y\n", b"delete_posts": b"n\n"}
    shown = b""
    with _exec_on_a_terminal(tmp_path, code, 20) as (proc, controller, log):
        for _ in range(2):  # each question once the one before is answered
            more = _read_until(controller, b"[y/N]", 90)
            shown += more
            asked = more.rsplit(b"Approve board.", 1)[1].split(b" ", 1)[0]
            os.write(controller, answers[asked])
        stdout, _ = proc.communicate(timeout=60)
    assert shown.count(b"[y/N]") == 2, shown
    assert log.read_text(encoding="utf-8").splitlines() == ["post_message x"], stdout
