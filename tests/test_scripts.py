"""scripts/debug_executor.py, run as users run it: without an LM, and with a loopback stub LM."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from .servers.stub_lm import chat_reply, serve_stub
from .support import ROOT

pytestmark = pytest.mark.slow  # whole commands in subprocesses

SCRIPT = ROOT / "scripts" / "debug_executor.py"


def run_script(extra_env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSPY_")}
    return subprocess.run(
        [sys.executable, str(SCRIPT)],
        capture_output=True,
        text=True,
        timeout=180,
        env={**env, "MCP_CODE_POOL_SIZE": "1", **extra_env},
        cwd=ROOT,
    )


def test_debug_executor_without_lm() -> None:
    proc = run_script({})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "[FAIL]" not in proc.stdout
    assert "[PASS] filter in code" in proc.stdout
    assert "[SKIP] run_task: no LM configured" in proc.stdout


def test_debug_executor_with_stub_lm() -> None:
    replies = [
        chat_reply(reasoning="r", code="len(tools.data.list_customers())", finished="True"),
        chat_reply(answer="There are 200 customers."),
    ]
    with serve_stub(replies) as stub:
        proc = run_script(
            {
                "DSPY_LM": "openai/stub-model",
                "DSPY_API_BASE": stub.api_base,
                "OPENAI_API_KEY": "not-a-real-key",
            }
        )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "[PASS] run_task: There are 200 customers." in proc.stdout
    assert "len(tools.data.list_customers())" in proc.stdout
    assert "not-a-real-key" not in proc.stdout + proc.stderr


def test_dspy_sandbox_script() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "test_dspy_sandbox.py")],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
        env={**os.environ, "MCP_CODE_POOL_SIZE": "1"},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("[PASS]") == 6 and "all checks passed" in proc.stdout
