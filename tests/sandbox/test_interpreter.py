"""MCPCodeInterpreter: dspy's CodeInterpreter protocol as a sandbox session."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from dspy.primitives.code_interpreter import (
    CodeExecutionError,
    CodeInterpreter,
    CodeInterpreterError,
    FinalOutput,
)

from mcp_code_mode.gateway import Gateway
from mcp_code_mode.sandbox.interpreter import MCPCodeInterpreter


@pytest.fixture(scope="module")
def interp() -> Iterator[MCPCodeInterpreter]:
    with MCPCodeInterpreter(timeout_s=1.0) as session:
        yield session


def test_implements_the_protocol(interp: MCPCodeInterpreter) -> None:
    assert isinstance(interp, CodeInterpreter)
    assert interp.tools == {}


def test_state_persists_between_calls(interp: MCPCodeInterpreter) -> None:
    assert interp.execute("counter = 40") is None
    assert interp.execute("counter += 2\nprint('counted')\ncounter") == "counted\n\n42"
    assert interp.execute("counter + bonus", variables={"bonus": 8}) == "50"


def test_submit_returns_final_output(interp: MCPCodeInterpreter) -> None:
    out = interp.execute("SUBMIT(answer=counter, note='done')")
    assert isinstance(out, FinalOutput)
    assert out.output == {"answer": 42, "note": "done"}


def test_guest_errors_are_recoverable(interp: MCPCodeInterpreter) -> None:
    with pytest.raises(CodeExecutionError, match="ZeroDivisionError"):
        interp.execute("1 / 0")
    with pytest.raises(CodeExecutionError, match="POLICY_VIOLATION"):
        interp.execute("import os")
    with pytest.raises(SyntaxError):
        interp.execute("x = (")
    with pytest.raises(CodeExecutionError, match="TIMEOUT"):
        interp.execute("while True:\n    pass")
    with pytest.raises(CodeExecutionError, match="no MCP servers"):
        interp.execute("call_tool('notes', 'list_notes')")
    with pytest.raises(CodeExecutionError, match="unknown server"):
        interp.execute("tools.notes.list_notes()")
    assert interp.execute("counter") == "42"  # the session survived all of them


def test_a_limit_raised_again_by_later_code_is_its_own_error() -> None:
    """A session that caught a limit's exception keeps its class; raised again in a later
    step with a forged type (a `str` subclass equal to every code, a dict, "TIMEOUT") it
    broke the worker's report: a malformed result, or the worker dead and the session lost
    (outside attack 117). It is the code's own RUNTIME_ERROR now, and the session lives."""
    with MCPCodeInterpreter(timeout_s=2.0) as session:
        with pytest.raises(CodeExecutionError, match="OUTPUT_LIMIT"):
            session.execute(
                "try:\n    print('x' * 2_000_000)\nexcept BaseException as e:\n    F = type(e)"
            )
        forged = (
            "class K(str):\n    def __hash__(self):\n        return hash('TIMEOUT')\n"
            "    def __eq__(self, other):\n        return True\n    def __ne__(self, other):\n"
            "        return False\nraise F(K('NOT_A_CODE'), 'm')",
            "raise F({'a': 1}, ['not', 'text'])",
            "class G(F):\n    pass\nraise G('TIMEOUT', 'forged')",
        )
        for code in forged:
            with pytest.raises(CodeExecutionError, match=r"RUNTIME_ERROR.*limit exception itself"):
                session.execute(code)
        assert session.execute("F.__name__") == "'Fatal'"  # the same worker, still serving


def test_a_submit_subclass_is_the_codes_own_error() -> None:
    """A subclass of SUBMIT's exception whose `fields` raised killed the session's worker
    (outside attack 119): it is the code's own error, and the session lives."""
    with MCPCodeInterpreter(timeout_s=2.0) as session:
        session.execute("try:\n    SUBMIT(a=1)\nexcept BaseException as e:\n    S = type(e)")
        code = (
            "class T(S):\n    def __init__(self):\n        pass\n    @property\n"
            "    def fields(self):\n        raise ValueError('boom')\nraise T()"
        )
        with pytest.raises(CodeExecutionError, match="RUNTIME_ERROR"):
            session.execute(code)
        assert session.execute("S.__name__") == "'Submitted'"


def test_a_killed_worker_ends_the_session() -> None:
    with MCPCodeInterpreter(timeout_s=0.5) as session:
        session.execute("x = 1")
        stubborn = "while True:\n    try:\n        while True:\n            pass\n    except BaseException:\n        pass"
        with pytest.raises(CodeInterpreterError, match="state is lost"):
            session.execute(stubborn)
        with pytest.raises(CodeInterpreterError):
            session.execute("x")


async def test_gateway_interpreter_calls_upstream_tools(any_gateway: Gateway) -> None:
    """The session's worker is of the executor MCP_EXECUTOR names (a Pyodide runner there)."""
    session = any_gateway.interpreter()
    try:
        await asyncio.to_thread(session.start)
        assert session.executor == any_gateway.executor.name
        assert session._worker is not None
        worker = type(session._worker).__name__
        assert worker == ("PyodideRunner" if session.executor == "pyodide" else "WorkerProcess")
        out = await asyncio.to_thread(session.execute, "r = tools.testsrv.echo(text='via dspy')\nr")
        assert out == "'via dspy'"
        final = await asyncio.to_thread(session.execute, "SUBMIT(echoed=r)")
        assert isinstance(final, FinalOutput) and final.output == {"echoed": "via dspy"}
    finally:
        await asyncio.to_thread(session.shutdown)
