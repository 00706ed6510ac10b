"""The DSPy agent: natural-language task → code → run → observe → answer.

A code-act loop written with dspy signatures over our own executor (not the deprecated
`dspy.CodeAct`, which copies tool source into its sandbox so MCP tools cannot work there).
Each step's code runs through `Gateway.execute`, the same path as the `execute_code` tool,
so the policy and every limit apply. The agent is a plain `dspy.Module`: compile it with
any DSPy optimizer.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no cost-map fetch offline

import dspy
from dotenv import load_dotenv

from .approval import Approver
from .errors import CodeModeError
from .gateway import Gateway
from .sandbox.base import ExecutionResult
from .settings import Settings

__all__ = [
    "Answer",
    "CodeExecutionAgent",
    "LMNotConfigured",
    "Step",
    "WriteCode",
    "agent_for",
    "make_lm",
    "run_task",
    "tool_context_for",
]

TOOL_CONTEXT_TOKENS = 3000

CodeRunner = Callable[[str], Awaitable[ExecutionResult]]
StepCallback = Callable[[int, "Step"], Awaitable[None]]

_FENCE = re.compile(r"^\s*```(?:python|py)?\s*\n(.*?)\n?```\s*$", re.DOTALL)
_RESULT_CHARS = 2000


class LMNotConfigured(CodeModeError):
    """The agent needs an LM: set DSPY_LM (and a key or DSPY_API_BASE) in .env."""


class WriteCode(dspy.Signature):
    """Write the next Python snippet that makes progress on the task.

    The code runs in a sandbox. `tools.<server>.<tool>(**kwargs)` calls an MCP tool and returns
    its parsed result; `call_tools([(server, tool, args), ...])` runs calls concurrently;
    `search_tools(query)` and `get_tool_docs(server, tool)` find more tools; `log(...)` records
    notes. The value of the last expression is returned to you. Filter, join and aggregate in
    code and return only what the answer needs. Each snippet starts from a fresh namespace:
    variables of earlier steps are gone, so recompute what you need. If a step failed, read
    its error and fix the code. Set `finished` to true, with empty code, once the trajectory holds
    everything the answer needs.
    """

    task: str = dspy.InputField()
    tool_context: str = dspy.InputField(desc="Python stubs of the available tools")
    trajectory: str = dspy.InputField(desc="earlier steps: code and its result or error")
    code: str = dspy.OutputField(desc="Python code to run next, without markdown fences")
    finished: bool = dspy.OutputField(desc="true when no more code needs to run")


class Answer(dspy.Signature):
    """Answer the task from what the code that was run returned."""

    task: str = dspy.InputField()
    trajectory: str = dspy.InputField(desc="the code that was run and its results")
    answer: str = dspy.OutputField()


@dataclass(slots=True)
class Step:
    """One executed snippet (contract §3 `run_task.steps`)."""

    code: str
    ok: bool
    result: Any
    error: dict[str, Any] | None
    stdout: str = ""
    logs: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "ok": self.ok, "result": self.result, "error": self.error}

    def render(self, number: int) -> str:
        lines = [f"## Step {number}", "```python", self.code, "```"]
        if self.stdout:
            lines.append("stdout: " + _clip(self.stdout))
        if self.logs:
            lines.append("logs: " + _clip("\n".join(self.logs)))
        if self.ok:
            lines.append("result: " + _clip(json.dumps(self.result, ensure_ascii=False)))
        else:
            error = self.error or {}
            where = f" at line {error['line']}" if error.get("line") else ""
            lines.append(f"error {error.get('type')}{where}: {_clip(str(error.get('message')))}")
        return "\n".join(lines)


def _clip(text: str, limit: int = _RESULT_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + f"… [{len(text) - limit} more chars]"


class _SharedRunner:
    """The code runner and the event loop it belongs to; shared, never copied.

    dspy optimizers deep-copy modules; the gateway behind the runner (processes, sockets,
    upstream sessions) must stay one.
    """

    def __init__(self, run_code: CodeRunner) -> None:
        self.run_code = run_code
        try:
            self.loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self.loop = None

    def __deepcopy__(self, memo: dict[int, Any]) -> _SharedRunner:
        return self


def strip_fences(code: str) -> str:
    """The code inside a markdown fence, or the text itself."""
    match = _FENCE.match(code)
    return (match.group(1) if match else code).strip()


class CodeExecutionAgent(dspy.Module):
    """Writes code for a task, runs it, reads results and errors, and answers.

    Args:
        run_code: runs one snippet, e.g. `gateway.execute` (policy and limits apply).
        tool_context: the stubs the model writes code against
            (`ToolSchemaFormatter.format_for_llm`).
        max_steps: snippets to run at most before giving up.
    """

    def __init__(self, run_code: CodeRunner, *, tool_context: str = "", max_steps: int = 8) -> None:
        super().__init__()
        self.runner = _SharedRunner(run_code)
        self.tool_context = tool_context
        self.max_steps = max_steps
        self.write_code = dspy.ChainOfThought(WriteCode)
        self.answer = dspy.Predict(Answer)

    async def aforward(self, task: str, on_step: StepCallback | None = None) -> dspy.Prediction:
        steps: list[Step] = []
        tool_calls: list[dict[str, Any]] = []
        finished = False
        with dspy.track_usage() as usage:
            for number in range(1, self.max_steps + 1):
                proposal = await self.write_code.acall(
                    task=task, tool_context=self.tool_context, trajectory=_trajectory(steps)
                )
                code = strip_fences(str(proposal.code or ""))
                if not code:
                    finished = True
                    break
                result = await self.runner.run_code(code)
                step = Step(
                    code=code,
                    ok=result.ok,
                    result=result.result,
                    error=result.error.model_dump(mode="json") if result.error else None,
                    stdout=result.stdout,
                    logs=list(result.logs),
                )
                steps.append(step)
                tool_calls += [c.model_dump(mode="json") for c in result.tool_calls]
                if on_step is not None:
                    await on_step(number, step)
                if proposal.finished and step.ok:
                    finished = True
                    break
            final = await self.answer.acall(task=task, trajectory=_trajectory(steps))
        answer = str(final.answer)
        if not finished:
            answer = f"Gave up after {self.max_steps} steps without finishing. {answer}"
        last_ok = next((s.code for s in reversed(steps) if s.ok), steps[-1].code if steps else "")
        return dspy.Prediction(
            answer=answer,
            code=last_ok,
            steps=[s.to_json() for s in steps],
            tool_calls=tool_calls,
            tokens=_tokens(usage),
            finished=finished,
        )

    def forward(self, task: str) -> dspy.Prediction:
        """Synchronous entry for optimizers and evaluation, from any thread but the loop's own.

        With an agent made inside a running loop (e.g. over a started Gateway), the run is
        scheduled on that loop and this thread waits for it: call optimizers through
        `asyncio.to_thread(...)`. Without a loop, the run gets a loop of its own.
        """
        loop = self.runner.loop
        if loop is None:
            return asyncio.run(self.aforward(task))
        return asyncio.run_coroutine_threadsafe(self.aforward(task), loop).result()


def _trajectory(steps: list[Step]) -> str:
    if not steps:
        return "(nothing run yet)"
    return "\n\n".join(step.render(i) for i, step in enumerate(steps, 1))


def _tokens(usage: Any) -> dict[str, int]:
    prompt = completion = 0
    for entry in usage.get_total_tokens().values():
        prompt += int(entry.get("prompt_tokens") or 0)
        completion += int(entry.get("completion_tokens") or 0)
    return {"prompt": prompt, "completion": completion}


def tool_context_for(
    gateway: Gateway, task: str, *, budget_tokens: int = TOOL_CONTEXT_TOKENS
) -> str:
    """The catalog as stubs for this task: whole when it fits, else summaries plus top hits."""
    catalog = gateway.catalog
    ranked = [catalog.get(hit.server, hit.tool).source for hit in catalog.search(task, 40)]
    return catalog.formatter.format_for_llm(
        [entry.source for entry in catalog.entries],
        descriptions=catalog.descriptions,
        budget_tokens=budget_tokens,
        ranked=ranked,
    )


def agent_for(
    gateway: Gateway, task: str, *, approver: Approver | None = None
) -> CodeExecutionAgent:
    """An agent whose code runs through `gateway.execute`, with the stubs for `task`;
    `approver` asks a person about calls that need approval (contract §8)."""
    return CodeExecutionAgent(
        functools.partial(gateway.execute, approver=approver),
        tool_context=tool_context_for(gateway, task),
        max_steps=gateway.settings.dspy_max_steps,
    )


async def run_task(
    gateway: Gateway,
    lm: dspy.LM,
    task: str,
    on_step: StepCallback | None = None,
    *,
    approver: Approver | None = None,
) -> dict[str, Any]:
    """Run the agent on one task; the contract §3 `run_task` object."""
    agent = agent_for(gateway, task, approver=approver)
    with dspy.context(lm=lm):
        prediction = await agent.acall(task=task, on_step=on_step)
    return {
        "answer": prediction.answer,
        "code": prediction.code,
        "steps": prediction.steps,
        "tool_calls": prediction.tool_calls,
        "tokens": prediction.tokens,
    }


def make_lm(settings: Settings) -> dspy.LM:
    """The LM named by DSPY_LM; raises LMNotConfigured when it is unset."""
    if not settings.dspy_lm:
        raise LMNotConfigured(
            "no LM configured: set DSPY_LM (a LiteLLM model string such as openai/gpt-4o-mini) "
            "and its key or DSPY_API_BASE in .env (see .env.example)"
        )
    # Provider keys (OPENAI_API_KEY, ...) may live in .env; LiteLLM reads the environment.
    # Workers and upstreams never see them: both start from explicit minimal environments.
    load_dotenv(".env", override=False)
    return dspy.LM(
        settings.dspy_lm,
        api_base=settings.dspy_api_base,
        temperature=settings.dspy_temperature,
        max_tokens=settings.dspy_max_tokens,
        cache=False,
    )
