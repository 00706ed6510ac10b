"""Sanity check of the configured executor through dspy's CodeInterpreter protocol.

    python scripts/test_dspy_sandbox.py [--config mcp_servers.json]

Starts the gateway on the config, opens `gateway.interpreter()` (a session: state persists
between snippets), runs a few snippets, one upstream tool call, one policy violation and one
timeout, and exits non-zero when any check fails.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dspy.primitives.code_interpreter import CodeExecutionError, FinalOutput

from mcp_code_mode.gateway import Gateway
from mcp_code_mode.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
# Only the runaway snippet gets a short limit: upstream start-up and the other snippets keep
# MCP_CODE_TIMEOUT_S, so a slow machine starting three upstreams at once does not fail them.
TIMEOUT_CHECK_S = 2.0


def check(name: str, run: Callable[[], Any], accept: Callable[[Any], bool]) -> bool:
    try:
        outcome: Any = run()
    except Exception as exc:  # the check reports whatever the interpreter raised
        outcome = exc
    ok = accept(outcome)
    shown = outcome.output if isinstance(outcome, FinalOutput) else outcome
    print(f"[{'PASS' if ok else 'FAIL'}] {name}: {type(outcome).__name__}: {str(shown)[:120]}")
    return ok


def run_with_timeout(interp: Any, code: str, timeout_s: float) -> Any:
    """Run one snippet under a shorter time limit than the session's, then restore it."""
    saved, interp.timeout_s = interp.timeout_s, timeout_s
    try:
        return interp.execute(code)
    finally:
        interp.timeout_s = saved


def checks(interp: Any) -> bool:
    ok = check(
        "define a variable", lambda: interp.execute("total = sum(range(10))"), lambda r: r is None
    )
    ok &= check("state persists", lambda: interp.execute("print(total)"), lambda r: r == "45\n")
    ok &= check(
        "tool call",
        lambda: interp.execute("len(tools.data.list_customers(country='DE'))"),
        lambda r: isinstance(r, str) and r.isdigit(),
    )
    ok &= check(
        "policy violation",
        lambda: interp.execute("import subprocess"),
        lambda r: isinstance(r, CodeExecutionError) and "POLICY_VIOLATION" in str(r),
    )
    ok &= check(
        "timeout",
        lambda: run_with_timeout(interp, "while True:\n    pass", TIMEOUT_CHECK_S),
        lambda r: isinstance(r, CodeExecutionError) and "TIMEOUT" in str(r),
    )
    ok &= check(
        "SUBMIT",
        lambda: interp.execute("SUBMIT(answer=total)"),
        lambda r: isinstance(r, FinalOutput) and r.output == {"answer": 45},
    )
    return ok


async def main(config: str) -> int:
    settings = Settings()
    # The session holds one worker of the executor MCP_EXECUTOR names between snippets.
    print(f"executor: {settings.executor}")
    async with Gateway.from_settings(settings, config) as gateway:
        interp = gateway.interpreter()
        try:
            ok = await asyncio.to_thread(checks, interp)
        finally:
            await asyncio.to_thread(interp.shutdown)
    print("all checks passed" if ok else "some checks FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", default=str(ROOT / "mcp_servers.json"))
    sys.exit(asyncio.run(main(parser.parse_args().config)))
