"""The DSPy agent: natural-language task → code → run → observe → answer.

A code-act loop written with dspy signatures over our own executor (not the deprecated
`dspy.CodeAct`, which copies tool source into its sandbox so MCP tools cannot work there).
Each step's code runs through `Gateway.execute`, the same path as the `execute_code` tool,
so the policy and every limit apply. The agent is a plain `dspy.Module`: compile it with
any DSPy optimizer.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import dspy
from dspy.utils.exceptions import AdapterParseError

from .agent_lm import (
    LMNotConfigured,
    adapter_for,
    lm_call_limit_s,
    lm_error,
    lm_timed_out,
    make_lm,
    tokens_used,
    warm_up,
)
from .agent_replies import strip_fences
from .agent_steps import TRAJECTORY_CHARS, Step, clip, quoted, task_refused, task_reply, trajectory
from .approval import Approver
from .encodable import clean_text, encodable_text
from .gateway import Gateway
from .sandbox.base import ExecutionResult
from .sandbox.child import guest_api

__all__ = [
    "Answer",
    "CodeExecutionAgent",
    "LMNotConfigured",
    "Step",
    "WriteCode",
    "agent_for",
    "make_lm",
    "run_task",
    "strip_fences",
    "tool_context_for",
]

CodeRunner = Callable[[str], Awaitable[ExecutionResult]]
SessionOpener = Callable[[], contextlib.AbstractAsyncContextManager[CodeRunner]]
StepCallback = Callable[[int, Step], Awaitable[None]]

STOP_AFTER = 3  # failed model replies in a row (unusable, LM errors, no or repeated code)
_REFUSALS = {"UNUSABLE_REPLY", "LM_ERROR", "NO_CODE", "REPEATED_CODE"}
_UNUSABLE = "the reply had no ```python block and no [[ ## code ## ]] section; it began: "


_WRITE_CODE = f"""Write the next Python snippet that makes progress on the task.

The code runs in a sandbox. `tools.<server>.<tool>(**kwargs)` calls an MCP tool and returns
its parsed result. Also defined, no import needed: {guest_api.prompt_lines()}
The value of the last expression is returned to you. Filter, join and aggregate in code and
return only what the answer needs. Variables you define stay defined for your next snippets
of this task. If a step failed, read its error and fix the code; never send the same code
twice. Set `finished` to true, with empty code, once the trajectory holds everything the
answer needs.
"""


class WriteCode(dspy.Signature):
    __doc__ = _WRITE_CODE  # the guest API's lines come from its one declaration

    task: str = dspy.InputField()
    tool_context: str = dspy.InputField(desc="Python stubs of the available tools")
    trajectory: str = dspy.InputField(desc="earlier steps: code and its result or error")
    code: str = dspy.OutputField(desc="Python code to run next, in a ```python fence")
    finished: bool = dspy.OutputField(desc="true when no more code needs to run")


FRESH_NAMESPACE = (
    "Variables you define stay defined for your next snippets of this task.",
    "Each snippet starts from a fresh namespace: variables of earlier steps are gone, so "
    "recompute what you need.",
)
"""The sentence of `WriteCode`'s instructions, and what it says where runs keep no state."""


EXAMPLE = dspy.Example(
    task="What is the total of the paid orders of shop A?",
    tool_context="def shop_a.list_orders(status: str) -> list:  # orders as dicts",
    trajectory="(nothing run yet)",
    reasoning="List the paid orders and add up their amounts in code.",
    code="```python\npaid = tools.shop_a.list_orders(status='paid')\n"
    "round(sum(o['amount'] for o in paid), 2)\n```",
    finished=False,
)
"""The worked example the model is shown of a reply (short: small models copy its form)."""


class Answer(dspy.Signature):
    """Answer the task from what the code that was run returned."""

    task: str = dspy.InputField()
    trajectory: str = dspy.InputField(desc="the code that was run and its results")
    answer: str = dspy.OutputField()


class _SharedRunner:
    """The code runner and the event loop it belongs to; shared, never copied.

    dspy optimizers deep-copy modules; the gateway behind the runner (processes, sockets,
    upstream sessions) must stay one.
    """

    def __init__(self, run_code: CodeRunner, sessions: SessionOpener | None) -> None:
        self.run_code = run_code
        self.sessions = sessions
        try:
            self.loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self.loop = None

    def __deepcopy__(self, memo: dict[int, Any]) -> _SharedRunner:
        return self

    def session(self) -> contextlib.AbstractAsyncContextManager[CodeRunner]:
        """A runner for one task's steps: one session when there are sessions."""
        if self.sessions is None:
            return contextlib.nullcontext(self.run_code)
        return self.sessions()


class CodeExecutionAgent(dspy.Module):
    """Writes code for a task, runs it, reads results and errors, and answers.

    No model reply ends a run with an exception: a reply that cannot be read, an LM error
    or timeout, empty or repeated code each become a failed step the model sees next time
    (bounded by `max_steps`; a run ends early after `STOP_AFTER` such steps in a row). The
    run is `finished` only when the model says so after a step that ran and produced
    something; an answer is written only from steps that ran.

    Args:
        run_code: runs one snippet, e.g. `gateway.execute` (policy and limits apply).
        tool_context: the stubs the model writes code against
            (`ToolSchemaFormatter.format_for_llm`).
        max_steps: model replies (snippets or refusals) at most before giving up.
        sessions: opens a runner whose snippets share variables, one per task (the steps
            of a task then build on each other); None: every snippet starts afresh.
        trajectory_chars: what earlier steps may take of a prompt; the oldest are shortened
            to fit (a small model's context window).
        lm_timeout_s: how long one model call may take in all, its retries included
            (None: as long as the LM's own per-read timeout lets it; an endpoint sending a
            byte a second held a task forever: outside attack 129).
    """

    def __init__(
        self,
        run_code: CodeRunner,
        *,
        tool_context: str = "",
        max_steps: int = 8,
        sessions: SessionOpener | None = None,
        trajectory_chars: int = TRAJECTORY_CHARS,
        lm_timeout_s: float | None = None,
    ) -> None:
        super().__init__()
        self.trajectory_chars, self.lm_timeout_s = trajectory_chars, lm_timeout_s
        self.stopping: Callable[[], bool] = bool  # whether to end before the next step
        self.runner = _SharedRunner(run_code, sessions)
        self.tool_context = tool_context
        self.max_steps = max_steps
        persistent, fresh = FRESH_NAMESPACE
        instructions = WriteCode.instructions
        if sessions is None:
            instructions = instructions.replace(persistent, fresh)
        self.write_code = dspy.ChainOfThought(WriteCode.with_instructions(instructions))
        self.write_code.predict.demos = [EXAMPLE]  # an optimizer's demos replace it
        self.answer = dspy.Predict(Answer)

    async def aforward(self, task: str, on_step: StepCallback | None = None) -> dspy.Prediction:
        loop = _Loop(self, task, on_step)
        with dspy.track_usage() as usage:
            async with self.runner.session() as run_code:
                await loop.run(run_code)
            answer = await loop.answer()
        last_ok = next((s.code for s in reversed(loop.steps) if s.ok), "")
        return dspy.Prediction(
            answer=answer,
            code=last_ok,
            steps=[s.to_json() for s in loop.steps],
            tool_calls=loop.tool_calls,
            tokens=tokens_used(usage),
            finished=loop.finished,
            error=loop.error,
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


class _Loop:
    """One task's steps: write code, run it, feed back what happened; then the answer."""

    def __init__(self, agent: CodeExecutionAgent, task: str, on_step: StepCallback | None):
        self.agent, self.task, self.on_step = agent, task, on_step
        self.steps: list[Step] = []
        self.tool_calls: list[dict[str, Any]] = []
        self.finished = False
        self.error: dict[str, str] | None = None
        self._refused = 0  # model replies in a row that could not be run

    async def run(self, run_code: CodeRunner) -> None:
        for number in range(1, self.agent.max_steps + 1):
            if self.agent.stopping():  # steps went on past SIGTERM's drain: reply lost (147)
                self.error = {"type": "STOPPED", "message": "the gateway is stopping"}
                return
            proposal = await self._propose()
            if isinstance(proposal, Step):
                await self._add(number, proposal)
            else:
                code, finished = proposal
                if not code and finished and self._produced():
                    self.finished = True
                    return
                step = self._refusal(code) or await self._ran(code, run_code)
                await self._add(number, step)
                if finished and step.ok and self._produced():
                    self.finished = True
                    return
            if self._refused >= STOP_AFTER:
                self.error = _error(self.steps[-1], "the model's last replies could not be run")
                return
        self.error = {
            "type": "STEP_LIMIT",
            "message": f"gave up after {self.agent.max_steps} steps without finishing",
        }

    async def _propose(self) -> tuple[str, bool] | Step:
        """The model's next code and `finished`, or a failed step saying why there is none."""
        try:
            async with asyncio.timeout(self.agent.lm_timeout_s):
                proposal = await self.agent.write_code.acall(
                    task=self.task,
                    tool_context=self.agent.tool_context,
                    trajectory=trajectory(self.steps, self.agent.trajectory_chars),
                )
        except AdapterParseError as exc:
            reply = clean_text(str(getattr(exc, "lm_response", "") or ""))
            return Step.refused("", "UNUSABLE_REPLY", _UNUSABLE + clip(reply, 300))
        except Exception as exc:  # the step's boundary: LM, network, timeout, context window
            return Step.refused("", "LM_ERROR", self._lm_error(exc, 1000))
        code = encodable_text(strip_fences(str(proposal.code or "")))  # no lone surrogate (129)
        return code, proposal.finished is True

    def _lm_error(self, exc: Exception, limit: int) -> str:
        if isinstance(exc, TimeoutError) and self.agent.lm_timeout_s is not None:
            return lm_timed_out(self.agent.lm_timeout_s)
        return lm_error(exc, dspy.settings.lm, limit)

    def _refusal(self, code: str) -> Step | None:
        """Why `code` is not run: empty without being finished, or sent before."""
        if not code:
            why = "no code and nothing has run successfully yet"
            if self._produced():
                why = "no code, and `finished` was not true"
            return Step.refused("", "NO_CODE", f"{why}: send a ```python block")
        for number, step in enumerate(self.steps, 1):
            if step.code == code:
                return Step.refused(
                    code, "REPEATED_CODE", f"the same code as step {number}: change it or finish"
                )
        return None

    async def _ran(self, code: str, run_code: CodeRunner) -> Step:
        result = await run_code(code)
        self.tool_calls += [c.model_dump(mode="json") for c in result.tool_calls]
        produced = result.result is not None or bool(result.stdout or result.tool_calls)
        return Step(
            code=code,
            ok=result.ok,
            result=result.result,
            error=Step.run_error(result.error.model_dump(mode="json") if result.error else None),
            stdout=result.stdout,
            logs=list(result.logs),
            produced=result.ok and produced,
        )

    async def _add(self, number: int, step: Step) -> None:
        self.steps.append(step)
        refused = step.error is not None and step.error.get("type") in _REFUSALS
        self._refused = self._refused + 1 if refused else 0
        if self.on_step is not None:
            await self.on_step(number, step)

    def _produced(self) -> bool:
        return any(step.produced for step in self.steps)

    async def answer(self) -> str:
        """The answer, written only from steps that ran; said plainly when nothing did."""
        if not self._produced():
            why = (self.error or {}).get("message") or "no step ran successfully"
            return f"The task was not done: {why}. No code that ran produced a result."
        try:
            steps = trajectory(self.steps, self.agent.trajectory_chars)
            async with asyncio.timeout(self.agent.lm_timeout_s):
                final = await self.agent.answer.acall(task=self.task, trajectory=steps)
            answer = encodable_text(str(final.answer))
        except Exception as exc:  # the answer's boundary: the steps' results are still returned
            reason = self._lm_error(exc, 300)
            answer = f"(the answer could not be written: {reason}; see the steps' results)"
        if not self.finished:
            answer = f"Not finished: {(self.error or {}).get('message')}. {answer}"
        return answer


def _error(step: Step, message: str) -> dict[str, str]:
    kind = str((step.error or {}).get("type") or "LM_ERROR")
    return {"type": kind, "message": f"{message} ({(step.error or {}).get('message')})"}


def tool_context_for(gateway: Gateway, task: str, *, budget_tokens: int | None = None) -> str:
    """The catalog as stubs for this task: whole when it fits, else summaries plus top hits;
    within DSPY_TOOL_CONTEXT_TOKENS unless `budget_tokens` says otherwise."""
    catalog = gateway.catalog
    ranked = [catalog.get(hit.server, hit.tool).source for hit in catalog.search(task, 40)]
    return quoted(  # an upstream's description cannot open a prompt field (review 150)
        catalog.formatter.format_for_llm(
            [entry.source for entry in catalog.entries],
            descriptions=catalog.descriptions,
            budget_tokens=budget_tokens or gateway.settings.dspy_tool_context_tokens,
            ranked=ranked,
        )
    )


def agent_for(
    gateway: Gateway, task: str, *, approver: Approver | None = None
) -> CodeExecutionAgent:
    """An agent whose code runs through `gateway.execute`, with the stubs for `task`;
    `approver` asks a person about calls that need approval (contract §8). A task's steps
    share one session (their variables) where the executor keeps state between runs."""

    @contextlib.asynccontextmanager
    async def session() -> AsyncIterator[CodeRunner]:
        opened = gateway.executor.open_session()
        try:
            yield functools.partial(
                gateway.execute, approver=approver, session=opened, kind="run_task"
            )
        finally:
            if opened is not None:
                opened.close()

    probe = gateway.executor.open_session()  # None: this executor's runs keep no state
    if probe is not None:
        probe.close()
    settings = gateway.settings
    agent = CodeExecutionAgent(
        functools.partial(gateway.execute, approver=approver, kind="run_task"),
        tool_context=tool_context_for(gateway, task),
        max_steps=settings.dspy_max_steps,
        sessions=session if probe is not None else None,
        trajectory_chars=4 * settings.dspy_trajectory_tokens,  # ~4 chars a token
        lm_timeout_s=lm_call_limit_s(settings.dspy_timeout_s, settings.dspy_num_retries),
    )
    agent.stopping = lambda: gateway.stopping
    return agent


async def run_task(
    gateway: Gateway,
    lm: dspy.LM,
    task: str,
    on_step: StepCallback | None = None,
    *,
    approver: Approver | None = None,
) -> dict[str, Any]:
    """Run the agent on one task; the contract §3 `run_task` object (never an exception
    for what the model replied: see `CodeExecutionAgent`)."""
    if (refused := task_refused(task)) is not None:
        return refused
    agent = agent_for(gateway, task, approver=approver)
    await asyncio.to_thread(warm_up, lm)  # or waits for the server's warm-up to end
    # No history: dspy kept every call's whole text, ~11 MB a task (outside attack 129).
    with dspy.context(lm=lm, adapter=adapter_for(gateway.settings), disable_history=True):
        prediction = await agent.acall(task=task, on_step=on_step)
    return task_reply(prediction, gateway.settings.max_output_chars)
