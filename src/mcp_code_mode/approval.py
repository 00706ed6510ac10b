"""Approval of writes (contract §8): one question per run and tool, asked of a person.

A run's `RunApprovals` asks its `Approver` (MCP elicitation, a terminal prompt) the first
time the run calls a tool that needs approval; concurrent calls to that tool wait for the
one answer, later calls reuse it; the answer is kept for the run only. The time spent
waiting is not the run's: it is added to `paused_s`, and the executor stops the
run's clocks meanwhile. A declined, cancelled or unanswered question fails the call before the
upstream is ever called.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Literal

from .encodable import clean_text, clip, encodable_text
from .errors import ToolCallFailed

__all__ = [
    "NOT_A_YES",
    "Answer",
    "ApprovalMode",
    "ApprovalRequest",
    "Approver",
    "Decided",
    "RunApprovals",
    "TracedQuestion",
]

logger = logging.getLogger(__name__)

ApprovalMode = Literal["auto", "required", "off"]

_ARGS_CHARS = 400
_NOTED = 5  # tools named in the note on calls that ran unapproved; then how many more


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """What a person is asked: the server, the tool, the first call's arguments (clipped)."""

    server: str
    tool: str
    arguments: str

    @property
    def message(self) -> str:
        return (
            f"Approve {self.server}.{self.tool} for this run? The code calls it with "
            f"{self.arguments}. Approving covers the rest of this run's calls to "
            f"{self.server}.{self.tool}."
        )


Answer = bool | str
"""A person's answer: yes or no, or a declining answer's reason (`NOT_A_YES`)."""

NOT_A_YES = "it was declined: the answer accepted the question without approve set to true"

Approver = Callable[[ApprovalRequest], Awaitable[Answer | None]]
"""Asks a person; True approves, False declines, None: cannot ask (no such client)."""

Decided = Callable[[str], None]
"""Told how a question ended (`approved`, `declined`, ...)."""
TracedQuestion = Callable[[str, str], AbstractContextManager[Decided]]
"""Wraps the time a question about (server, tool) takes, e.g. in a span (`RunSpans.approval`)."""


class RunApprovals:
    """The approvals of one run."""

    def __init__(
        self,
        *,
        mode: ApprovalMode,
        approver: Approver | None,
        timeout_s: float,
        redact: Callable[[str], str] = lambda text: text,
    ) -> None:
        self._mode = mode
        self._approver = approver
        self._timeout_s = timeout_s
        self._redact = redact
        self._answers: dict[tuple[str, str], asyncio.Future[str | None]] = {}
        # One question at a time, each timed from when it is asked: a second one's time
        # ran out while it waited for the first to be answered (review 151).
        self._one_at_a_time = asyncio.Lock()
        self.paused_s = 0.0  # spent waiting for a person: not counted against the run
        self.unasked: list[str] = []  # `server.tool`s that `auto` let through, nobody asked
        self.decisions: dict[tuple[str, str], str] = {}  # how each question ended, for records
        # Awaited before a person is asked (the executor stops the worker's clock and
        # parks the run); what it returns declines the question instead.
        self.before_asking: Callable[[], Awaitable[str | None]] | None = None
        self.after_asking: Callable[[], Awaitable[None]] | None = None  # the answer is in
        self.traced: TracedQuestion = _untraced  # each question, as it is asked and answered

    async def check(self, server: str, tool: str, args: dict[str, Any]) -> None:
        """Return when the call may go ahead.

        Raises:
            ToolCallFailed: the question was declined, cancelled or not answered in time,
                or MCP_CODE_APPROVAL=required and nobody can be asked.
        """
        key = (server, tool)
        if self._mode == "off":
            self.decisions[key] = "not asked (MCP_CODE_APPROVAL=off)"
            return
        answer = self._answers.get(key)
        if answer is None:
            answer = self._answers[key] = asyncio.ensure_future(self._ask(server, tool, args))
        refusal = await asyncio.shield(answer)
        if refusal is not None:
            raise ToolCallFailed(
                server,
                tool,
                f"the call needs approval and {refusal}; the upstream was not called "
                "(MCP_CODE_APPROVAL decides when to ask)",
            )

    async def _ask(self, server: str, tool: str, args: dict[str, Any]) -> str | None:
        """None when approved, else why not; `decisions` says how it was decided."""
        with self.traced(server, tool) as decided:
            refusal = await self._question(server, tool, args)
            unasked = f"{clean_text(server)}.{clean_text(tool)}" in self.unasked
            how = "not asked (auto)" if unasked else ("approved" if refusal is None else refusal)
            self.decisions[(server, tool)] = how
            decided(how)
        return refusal

    async def _question(self, server: str, tool: str, args: dict[str, Any]) -> str | None:
        # Names and arguments as a person reads them: an upstream cannot restyle the question.
        request = ApprovalRequest(clean_text(server), clean_text(tool), self._preview(args))
        async with self._one_at_a_time:
            return await self._asked(request)

    async def _asked(self, request: ApprovalRequest) -> str | None:
        started = time.monotonic()
        before = self.before_asking if self._approver is not None else None
        if before is not None and (refusal := await before()) is not None:
            return refusal
        answer: bool | str | None = None
        try:
            async with asyncio.timeout(self._timeout_s):
                answer = None if self._approver is None else await self._approver(request)
        except TimeoutError:
            answer = f"it was declined: nobody answered within {self._timeout_s:g}s"
        except Exception as exc:  # the client answered with an error, say: not a yes
            answer = f"it was declined: the question could not be asked ({type(exc).__name__})"
        finally:  # (cancelled: the run is ending, and gives its place back as it ends)
            self.paused_s += time.monotonic() - started
        if before is not None and self.after_asking is not None:
            await self.after_asking()  # the run's clock again, before its calls are made
        if isinstance(answer, str):
            return answer
        if answer is None:  # nobody can be asked
            if self._mode == "auto":
                self._let_through(request)
                return None
            return "it was declined: the client cannot ask a person (MCP_CODE_APPROVAL=required)"
        return None if answer else "it was declined"

    def close(self) -> None:
        """The run is over: a question still open is withdrawn (its approver is cancelled)."""
        for answer in self._answers.values():
            answer.cancel()

    def _let_through(self, request: ApprovalRequest) -> None:
        """Leave a trace of a call that needed approval and ran without it: in the run's
        logs (see `notes`) and the server's log."""
        self.unasked.append(f"{request.server}.{request.tool}")
        logger.warning(
            "approval: %s.%s ran without a person's approval: the client cannot ask and "
            "MCP_CODE_APPROVAL=auto allows it (first call: %s)",
            request.server,
            request.tool,
            request.arguments,
        )

    def notes(self) -> list[str]:
        """Lines for the run's logs about its calls that ran unapproved."""
        names = list(self.unasked)
        if not names:
            return []
        more = f" and {len(names) - _NOTED} more" if len(names) > _NOTED else ""
        shown = ", ".join(clip(name, 200) for name in names[:_NOTED]) + more
        need = "needs" if len(names) == 1 else "need"
        return [
            f"approval: {shown} {need} approval and ran without it (the client cannot ask "
            "a person; MCP_CODE_APPROVAL=required would refuse it)"
        ]

    def _preview(self, args: dict[str, Any]) -> str:
        try:
            text = json.dumps(args, ensure_ascii=False, default=repr)
        except (TypeError, ValueError, RecursionError):
            text = "(arguments that cannot be shown)"
        return clean_text(clip(encodable_text(self._redact(text)), _ARGS_CHARS))


@contextlib.contextmanager
def _untraced(server: str, tool: str) -> Iterator[Decided]:
    yield lambda decision: None
