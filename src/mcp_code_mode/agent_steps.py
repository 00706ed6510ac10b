"""The agent's steps: what ran (or why a reply did not), as the model and the caller see it."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from .sandbox.child.outcome import TIMEOUT_ADVICE
from .sandbox.reply import wire_bytes, wire_limit

_TIMEOUT_ADVICE = "; do less in one step (fewer or smaller calls; call_tools makes several at once)"

__all__ = [
    "TASK_CHARS",
    "TRAJECTORY_CHARS",
    "Step",
    "clip",
    "quoted",
    "reply_steps",
    "task_refused",
    "task_reply",
    "trajectory",
]

_RESULT_CHARS = 2000
_CODE_CHARS = 8000  # as much as may run (MCP_CODE_MAX_CHARS); a refused reply may be longer
TRAJECTORY_CHARS = 16_000  # about 4,000 tokens: what earlier steps may take of a prompt
_MARKER = re.compile(r"\[\[(?=[ \t]*##)")  # dspy's field marks: `[[ ## task ## ]]`
TASK_CHARS = 32_000  # of a task, about 8,000 tokens: a longer one is refused


@dataclass(slots=True)
class Step:
    """One step (contract §3 `run_task.steps`): a snippet that ran, or a model reply that
    could not be run (`code` empty or repeated, `error` saying why)."""

    code: str
    ok: bool
    result: Any
    error: dict[str, Any] | None
    stdout: str = ""
    logs: list[str] = field(default_factory=list)
    produced: bool = False  # ran and returned, printed or called something

    def to_json(self) -> dict[str, Any]:
        """The step for `run_task`'s reply: code as long as may run, at most (a refused
        100,000-character reply was echoed whole in each step that repeated it)."""
        code = clip(self.code, _CODE_CHARS)
        return {"code": code, "ok": self.ok, "result": self.result, "error": self.error}

    def render(self, number: int) -> str:
        """The step as the next prompt shows it, `quoted`: what it printed, logged or
        returned cannot open a prompt field (a note's text began a second `task`: 147)."""
        return quoted(self._rendered(number))

    def _rendered(self, number: int) -> str:
        code = clip(self.code, _CODE_CHARS) if self.code else "(no code)"
        lines = [f"## Step {number}", "```python", code, "```"]
        if self.stdout:
            lines.append("stdout: " + clip(self.stdout))
        if self.logs:
            lines.append("logs: " + clip("\n".join(self.logs)))
        if self.ok:
            lines.append("result: " + clip(json.dumps(self.result, ensure_ascii=False)))
        else:
            error = self.error or {}
            where = f" at line {error['line']}" if error.get("line") else ""
            lines.append(f"error {error.get('type')}{where}: {clip(str(error.get('message')))}")
        return "\n".join(lines)

    def summary(self, number: int) -> str:
        """Two lines for a step shortened to fit the prompt: its code's first line, and how
        it went."""
        first = clip(self.code.strip().split("\n", 1)[0], 120) if self.code.strip() else "-"
        first = quoted(first)  # the code's first line may hold a field mark too (review 151)
        if self.ok:
            size = len(json.dumps(self.result, ensure_ascii=False))
            return f"## Step {number} (shortened)\n`{first}`: ran ok, a result of {size} chars"
        kind = (self.error or {}).get("type")
        return f"## Step {number} (shortened)\n`{first}`: failed with {kind}"

    @staticmethod
    def run_error(error: dict[str, Any] | None) -> dict[str, Any] | None:
        """A run's error as a step holds it: a time limit's advice is the agent's, whose
        callers have no `timeout_s` to raise (it told the model and them to pass one)."""
        if error is None or error.get("type") != "TIMEOUT":
            return error
        # Anywhere in it: a session's run adds what was lost after the advice (attack 147).
        message = str(error.get("message", "")).replace(TIMEOUT_ADVICE, "")
        return {**error, "message": message + _TIMEOUT_ADVICE}

    @classmethod
    def refused(cls, code: str, kind: str, message: str) -> Step:
        """A model reply that was not run, and why (shown to the model as the step's error)."""
        return cls(code=code, ok=False, result=None, error={"type": kind, "message": message})


def clip(text: str, limit: int = _RESULT_CHARS) -> str:
    """`text` cut to `limit` characters, saying how many more there were."""
    return text if len(text) <= limit else text[:limit] + f"… [{len(text) - limit} more chars]"


def quoted(text: str) -> str:
    """`text` with every `[[ ## name ## ]]` in it broken up (`[ [ ## name ## ]]`): text from
    upstreams and guest code, shown in a prompt, cannot open a field of its own there."""
    return _MARKER.sub("[ [", text)


def task_reply(prediction: Any, max_output_chars: int) -> dict[str, Any]:
    """`run_task`'s reply (contract §3) from the agent's prediction: the steps' results
    within `max_output_chars` (`reply_steps`), then, oldest first, clipped until the whole
    reply fits what MCP may send (`wire_limit`): each step passed alone, three steps of
    40,000 emoji together made 2 MB a client could not read (review 150)."""
    reply = {
        "answer": prediction.answer,
        "code": prediction.code,
        "steps": reply_steps(prediction.steps, max_output_chars),
        "tool_calls": prediction.tool_calls,
        "tokens": prediction.tokens,
        "finished": prediction.finished,
        "error": prediction.error,
    }
    limit = wire_limit(max_output_chars)
    for step in reply["steps"]:
        if wire_bytes(reply) <= limit:
            break
        text = json.dumps(step["result"], ensure_ascii=False, default=str)
        step["result"] = clip(text, _RESULT_CHARS) if len(text) > _RESULT_CHARS else step["result"]
        step["code"] = clip(step["code"], _RESULT_CHARS)
    if wire_bytes(reply) > limit:  # a model that wrote past DSPY_MAX_TOKENS (review 151)
        reply["answer"] = clip(reply["answer"], _RESULT_CHARS)
    return reply


def task_refused(task: str) -> dict[str, Any] | None:
    """`run_task`'s reply to a task too long to send: it goes whole into every model call,
    and a 2.9 MB task made 14 MB of requests to a paid model (outside attack 147)."""
    if len(task) <= TASK_CHARS:
        return None
    message = (
        f"the task is {len(task):,} characters; at most {TASK_CHARS:,} are sent to the model "
        "(with every step): shorten it, or leave the data where the code can read it"
    )
    error = {"type": "TASK_TOO_LONG", "message": message}
    return {
        "answer": "",
        "code": "",
        "steps": [],
        "tool_calls": [],
        "tokens": {"prompt": 0, "completion": 0},
        "finished": False,
        "error": error,
    }


def reply_steps(steps: list[dict[str, Any]], budget_chars: int) -> list[dict[str, Any]]:
    """The steps for `run_task`'s reply, their results within `budget_chars` in all
    (MCP_CODE_MAX_OUTPUT_CHARS, as one run's reply) besides the latest's: the oldest
    results over `_RESULT_CHARS` are clipped first, as JSON text, as far as needed. Eight
    steps that each looked at a table made one message past the 1 MB a client reads: the
    caller got nothing (attack 147)."""
    shown = [dict(step) for step in steps]  # as `Step.to_json` gives them
    sizes = [len(json.dumps(s["result"], ensure_ascii=False, default=str)) for s in shown]
    total = sum(sizes)
    for i, step in enumerate(shown[:-1]):  # the latest is one run's reply: bounded as one
        if total <= budget_chars:
            break
        if sizes[i] > _RESULT_CHARS:
            text = json.dumps(step["result"], ensure_ascii=False, default=str)
            step["result"] = clip(text, min(_RESULT_CHARS, budget_chars))
            total -= sizes[i] - len(step["result"])
    return shown


def trajectory(steps: list[Step], budget_chars: int = TRAJECTORY_CHARS) -> str:
    """The steps so far, rendered for the next prompt: the oldest shortened to one line
    each, as far as needed to fit `budget_chars` (the latest step is always whole)."""
    if not steps:
        return "(nothing run yet)"
    rendered = [step.render(i) for i, step in enumerate(steps, 1)]
    total = sum(map(len, rendered)) + 2 * len(rendered)
    for i, step in enumerate(steps[:-1]):
        if total <= budget_chars:
            break
        short = step.summary(i + 1)
        total -= len(rendered[i]) - len(short)
        rendered[i] = short
    return "\n\n".join(rendered)
