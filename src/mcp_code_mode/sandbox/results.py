"""What a run becomes: the policy's refusal, or the worker's `done`, as an `ExecutionResult`.

Shared by every way code runs on the host side (a single run, a session's step, the dspy
adapter), with the grace the host gives a worker's own timer before it kills.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from ..errors import ErrorType, WorkerCrashed
from ..offload import offloaded
from .base import ErrorDetail, ExecutionResult, Limits
from .child.rules import TOO_DEEP
from .policy import check_policy
from .protocol import DoneMessage
from .reply import off_the_loop

__all__ = ["KILL_GRACE_S", "check_code", "from_done", "result_of"]

KILL_GRACE_S = 0.5  # the worker's own timer fires first; the host kills after this


def check_code(code: str, allowed_imports: Sequence[str], limits: Limits) -> ExecutionResult | None:
    """The policy's verdict as a failed result, or None when `code` may run.

    The parser's own limits (`'1+' * 3999`) and text UTF-8 cannot encode are refusals
    too, never exceptions (contract §7).
    """
    try:
        violation = check_policy(
            code,
            allowed_imports=allowed_imports,
            max_chars=limits.max_chars,
            max_lines=limits.max_lines,
        )
    except (RecursionError, MemoryError):
        return ExecutionResult.failure(ErrorType.POLICY_VIOLATION, TOO_DEEP)
    except UnicodeEncodeError as exc:  # a lone surrogate in the source text
        return ExecutionResult.failure(
            ErrorType.POLICY_VIOLATION,
            f"the code holds text that cannot be encoded as UTF-8 ({exc.reason} at "
            f"character {exc.start}); write such characters as escapes, e.g. '\\ud800'",
        )
    if violation is None:
        return None
    return ExecutionResult.failure(ErrorType(violation.kind), violation.message, violation.line)


async def result_of(done: DoneMessage, max_output_chars: int) -> ExecutionResult:
    """`from_done`, on the offload thread when the report is large."""
    if off_the_loop(done):
        return await offloaded(from_done, done, max_output_chars)
    return from_done(done, max_output_chars)


def from_done(done: DoneMessage, max_output_chars: int) -> ExecutionResult:
    """The result a worker reported; a malformed report is the worker's failure, not ours.

    The worker charges stdout, log lines and the result to the run's output budget; a
    report far past it comes from a worker that no longer keeps to it (guest code that
    wrote to the channel itself, outside attack 30) and is not used. The check walks the
    report without recursion and no further than the budget: a forged report of 31
    million list items or 1,000 levels of nesting costs no more than a legal one."""
    budget = 2 * max_output_chars + _REPORT_SLACK
    try:
        fields = (
            done.get("stdout", ""),
            done.get("logs", []),
            done.get("result"),
            done.get("error"),
        )
        if type(fields[0]) is not str or type(fields[1]) is not list:
            raise TypeError("stdout must be a str and logs a list")
        if any(type(line) is not str for line in fields[1]):
            raise TypeError("every log line must be a str")
        if _exceeds(fields, budget):
            raise WorkerCrashed(
                f"the worker's report is past the run's output limit of {max_output_chars:,} "
                f"characters (more than {budget:,}, or nested more than {_MAX_DEPTH} deep): "
                "it is not used"
            )
        error = ErrorDetail.model_validate(done["error"]) if done.get("error") else None
        return ExecutionResult(
            ok=bool(done["ok"]) and error is None,
            result=fields[2],
            stdout=fields[0],
            logs=list(fields[1]),
            error=error,
        )
    except (KeyError, TypeError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
        raise WorkerCrashed(f"the worker sent a malformed result: {exc}") from None


def _exceeds(value: Any, budget: int) -> bool:
    """Whether JSON data holds more than `budget` characters, or nests deeper than
    `_MAX_DEPTH` (what the worker's own JSON encoding makes stays far below): counted item
    by item from a stack of iterators (no recursion), stopping as soon as it is past."""
    used, stack = 0, [iter((value,))]
    while stack:
        item = next(stack[-1], _END)
        if item is _END:
            stack.pop()
            continue
        if isinstance(item, dict):
            stack.append(itertools.chain.from_iterable(item.items()))
        elif isinstance(item, list | tuple):
            stack.append(iter(item))
        elif isinstance(item, str):
            used += len(item)
        used += 2  # a scalar's text, or the brackets and separator around the rest
        if used > budget or len(stack) > _MAX_DEPTH:
            return True
    return False


_END = object()
_MAX_DEPTH = 500
_REPORT_SLACK = 64 * 1024  # what the worker's own accounting may differ by (JSON framing)
