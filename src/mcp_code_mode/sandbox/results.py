"""What a run becomes: the policy's refusal, or the worker's `done`, as an `ExecutionResult`.

Shared by every way code runs on the host side (a single run, a session's step, the dspy
adapter), with the grace the host gives a worker's own timer before it kills.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from ..errors import ErrorType, WorkerCrashed
from .base import ErrorDetail, ExecutionResult, Limits
from .policy import check_policy
from .protocol import DoneMessage

__all__ = ["KILL_GRACE_S", "check_code", "from_done"]

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
        return ExecutionResult.failure(
            ErrorType.POLICY_VIOLATION,
            "the code is nested too deeply to be checked (split long expressions "
            "and deep nesting into statements)",
        )
    except UnicodeEncodeError as exc:  # a lone surrogate in the source text
        return ExecutionResult.failure(
            ErrorType.POLICY_VIOLATION,
            f"the code holds text that cannot be encoded as UTF-8 ({exc.reason} at "
            f"character {exc.start}); write such characters as escapes, e.g. '\\ud800'",
        )
    if violation is None:
        return None
    return ExecutionResult.failure(ErrorType(violation.kind), violation.message, violation.line)


def from_done(done: DoneMessage, max_output_chars: int) -> ExecutionResult:
    """The result a worker reported; a malformed report is the worker's failure, not ours.

    The worker charges stdout, log lines and the result to the run's output budget; a
    report far past it comes from a worker that no longer keeps to it (guest code that
    wrote to the channel itself, outside attack 30) and is not used."""
    try:
        error = ErrorDetail.model_validate(done["error"]) if done.get("error") else None
        result = ExecutionResult(
            ok=bool(done["ok"]) and error is None,
            result=done.get("result"),
            stdout=str(done.get("stdout", "")),
            logs=[str(x) for x in done.get("logs", [])],
            error=error,
        )
        reported = len(result.stdout) + sum(map(len, result.logs))
        reported += len(json.dumps(result.result, ensure_ascii=False, default=str))
    except (KeyError, TypeError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
        raise WorkerCrashed(f"the worker sent a malformed result: {exc}") from None
    if reported > 2 * max_output_chars + _REPORT_SLACK:
        raise WorkerCrashed(
            f"the worker reported {reported:,} characters of output, past the run's limit of "
            f"{max_output_chars:,}: the report is not used"
        )
    return result


_REPORT_SLACK = 64 * 1024  # what the worker's own accounting may differ by (JSON framing)
