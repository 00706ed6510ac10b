"""Approval questions asked of the person behind an MCP client (contract §8).

How a client is asked depends on what it negotiated:
- A client without the elicitation capability cannot be asked (`MCP_CODE_APPROVAL=auto`
  then allows the call, `required` declines it).
- Before MCP 2026-07-28 the server sends `elicitation/create` while the tool runs
  (`ctx.elicit`).
- From 2026-07-28 on there is no server-initiated request (SEP-2322): `execute_code`
  answers `input_required` with the question, the run waits, and the client calls again
  with the answer and the request state. `Elicitation` keeps the waiting runs.

A client that sends a progress token gets progress notifications while the run works
(`progress_sink`, `runs.progress`), and one that asked for log messages gets the run's log
lines (`log_sink`, `runs.log_stream`); a waiting run's go to the request that brings the answer.
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar, cast

import mcp_types
from fastmcp import Context
from fastmcp.server.dependencies import get_access_token
from fastmcp.server.elicitation import AcceptedElicitation
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types import LOG_LEVEL_META_KEY
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, Field, ValidationError

from .answer_routing import question_state
from .approval import NOT_A_YES, Answer, ApprovalRequest, Approver
from .errors import ErrorType
from .gateway import Gateway
from .runs.log_stream import LogSink, RunLogStream
from .runs.progress import ProgressSink, RunProgress
from .sandbox.base import ExecutionResult

__all__ = [
    "Elicitation",
    "Start",
    "client_name",
    "handshake_approver",
    "log_sink",
    "progress_sink",
]

T = TypeVar("T")

_QUESTION_KEY = "approval"
_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approve": {"type": "boolean", "title": "Approve", "description": "Allow these calls"}
    },
    "required": ["approve"],
}


class _Approval(BaseModel):
    """The question's one field, as `_SCHEMA` has it, for `ctx.elicit`: a bare `bool` was
    sent as a field named `value`, and `{"approve": true}` declined (outside attack 146)."""

    approve: bool = Field(title="Approve", description="Allow these calls")


_CLIENT_CHARS = 120  # of the name a client gives itself, in a run's record

_ENDED = ExecutionResult.failure(
    ErrorType.EXECUTOR_ERROR,
    "the run this answer was for has ended (its question timed out, or the gateway "
    "restarted); nothing was run again",
)


Start = Callable[[Approver | None, RunProgress | None, RunLogStream | None], Awaitable[T]]
"""Starts the work (a run, the agent's task) with an approver, and where its progress and
log lines go (None: nowhere)."""


class Elicitation:
    """Runs work (`execute_code`, `run_task`) with an approver that asks the calling
    client's person, however its protocol version asks."""

    def __init__(self, gateway: Gateway, origin: str = "") -> None:
        self.gateway = gateway
        self.origin = origin  # this instance's URL, named in its questions' states
        self._waiting: dict[str, tuple[str, _WaitingRun[Any]]] = {}  # by state: tool, work

    async def execute(
        self, ctx: Context | None, code: str, input: Any, timeout_s: float | None
    ) -> ExecutionResult | mcp_types.InputRequiredResult:
        """The run's result, or (2026-07-28 clients) a question to answer first."""
        client = client_name(ctx)

        def start(
            approver: Approver | None, progress: RunProgress | None, logs: RunLogStream | None
        ) -> Awaitable[ExecutionResult]:
            return self.gateway.execute(
                code,
                input,
                timeout_s,
                approver=approver,
                client=client,
                progress=progress,
                logs=logs,
            )

        return await self.serve(ctx, "execute_code", start)

    async def serve(
        self, ctx: Context | None, tool: str, start: Start[T]
    ) -> T | ExecutionResult | mcp_types.InputRequiredResult:
        """What `start`'s work for a call of `tool` returns; for a 2026-07-28 client, a
        question to answer first when it asks one; a failed `ExecutionResult` when the call
        answers a question of work that has ended, was never asked, or was `tool`'s other."""
        era, sink, logs = _era(ctx), progress_sink(ctx), log_sink(ctx)
        if era != "modern" and _carries_answer(ctx):
            return _ENDED.model_copy(deep=True)  # no question was asked of such a client
        if era != "modern" or ctx is None:
            progress = None if sink is None else RunProgress(sink)
            try:
                stream = None if logs is None else RunLogStream(logs)
                return await start(handshake_approver(ctx), progress, stream)
            finally:
                if progress is not None:
                    await progress.close()
        state = ctx.request_state
        kind, run = self._waiting.pop(state, ("", None)) if state else ("", None)
        if run is not None and kind != tool:
            run, state = None, state or "?"  # another tool's question: never answered here
        if run is None and (state is not None or ctx.input_responses is not None):
            return _ENDED.model_copy(deep=True)  # never new work: its code made calls
        if run is None:
            run = _WaitingRun(start, RunProgress(sink), RunLogStream(logs))
        else:
            run.progress.retarget(sink)
            run.logs.retarget(logs)
            run.answer(_approved(ctx.input_responses))
        try:
            event = await run.next_event()
        except asyncio.CancelledError:  # its client cancelled this call, or went away
            run.cancel()
            raise
        if not isinstance(event, ApprovalRequest):
            return cast(T, event)
        return self._question(tool, run, event)

    def _question(
        self, tool: str, run: _WaitingRun[Any], event: ApprovalRequest
    ) -> mcp_types.InputRequiredResult:
        run.progress.retarget(None)  # this request is answered: its progress token is spent
        run.logs.retarget(None)
        self._forget_finished()
        token = question_state(self.origin)
        self._waiting[token] = tool, run
        question = mcp_types.ElicitRequest(
            method="elicitation/create",
            params=mcp_types.ElicitRequestFormParams(
                message=event.message, requested_schema=_SCHEMA
            ),
        )
        return mcp_types.InputRequiredResult(
            input_requests={_QUESTION_KEY: question}, request_state=token
        )

    def _forget_finished(self) -> None:
        """Runs whose client never came back end by themselves (the question times out)."""
        for token in [t for t, (_, run) in self._waiting.items() if run.finished]:
            del self._waiting[token]


class _WaitingRun(Generic[T]):
    """Work whose approver hands its questions to `next_event()` and waits for `answer()`."""

    def __init__(self, start: Start[T], progress: RunProgress, logs: RunLogStream) -> None:
        # Each question with its own answer: a run may ask several at once (`call_tools`),
        # and one slot let the answer to the question shown settle another (outside
        # attack 82: approving `add_note` ran `delete_note`).
        self._questions: asyncio.Queue[tuple[ApprovalRequest, asyncio.Future[Answer]]] = (
            asyncio.Queue()
        )
        self._shown: asyncio.Future[Answer] | None = None
        self.progress, self.logs = progress, logs
        self._task = asyncio.ensure_future(self._closing(start(self._ask, progress, logs)))

    async def _closing(self, run: Awaitable[T]) -> T:
        try:
            return await run
        finally:
            await self.progress.close()

    @property
    def finished(self) -> bool:
        return self._task.done()

    def cancel(self) -> None:
        """End the work: the request awaiting it was cancelled. The work ran in a task of
        its own, which a cancelled request left running: approved writes went on after the
        client pressed Stop, recorded as a run that ended well (outside attack 146)."""
        self._task.cancel()

    async def _ask(self, request: ApprovalRequest) -> Answer:
        answer: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        await self._questions.put((request, answer))
        return await answer

    def answer(self, approved: Answer) -> None:
        """The answer to the question `next_event()` handed out last, and to no other."""
        shown, self._shown = self._shown, None
        if shown is not None and not shown.done():
            shown.set_result(approved)

    async def next_event(self) -> T | ApprovalRequest:
        """The work's result (its exception raised), or the next question it asks."""
        question = asyncio.ensure_future(self._questions.get())
        try:
            await asyncio.wait({self._task, question}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not question.done():
                question.cancel()
        if question.done() and not question.cancelled():
            request, self._shown = question.result()
            return request
        return self._task.result()


def client_name(ctx: Context | None) -> str:
    """The calling client as its `clientInfo` names it (`name version`), or "" unknown; over
    HTTP, with the identity its bearer token was given: `name version (token: id)`."""
    try:
        params = None if ctx is None else ctx.session.client_params
    except (RuntimeError, AttributeError, ValueError):  # no MCP request behind this call
        return ""
    info = None if params is None else params.client_info
    name = "" if info is None else " ".join(f"{info.name} {info.version or ''}".split())
    if len(name) > _CLIENT_CHARS:  # one line, short: the token's identity is never cut off
        name = name[: _CLIENT_CHARS - 1] + "…"  # (a record clips its client text: attack 128)
    token = get_access_token()
    return f"{name} (token: {token.client_id})".strip() if token is not None else name


def progress_sink(ctx: Context | None) -> ProgressSink | None:
    """Sends `notifications/progress` for the request `ctx` serves; None when its client
    sent no progress token (it gets none)."""
    try:
        request = None if ctx is None else ctx.request_context
    except (RuntimeError, AttributeError, ValueError):  # no MCP request behind this call
        return None
    token = None if request is None else (request.meta or {}).get("progressToken")
    if request is None or not isinstance(token, str | int) or isinstance(token, bool):
        return None
    session, request_id = request.session, request.request_id

    async def send(progress: float, total: float | None, message: str | None) -> None:
        await session.send_progress_notification(
            token, progress, total, message, related_request_id=request_id
        )

    return send


def log_sink(ctx: Context | None) -> LogSink | None:
    """Sends the run's log lines as `notifications/message` (level `info`) for the request
    `ctx` serves; None when its client did not ask for log messages at `info` or below:
    before MCP 2026-07-28, with `logging/setLevel` on its session; from then on, with the
    request's log-level `_meta`."""
    try:
        request = None if ctx is None else ctx.request_context
    except (RuntimeError, AttributeError, ValueError):  # no MCP request behind this call
        return None
    if ctx is None or request is None:
        return None
    if request.protocol_version in MODERN_PROTOCOL_VERSIONS:
        level = (request.meta or {}).get(LOG_LEVEL_META_KEY)
    else:
        level = _session_log_level(ctx)
    if level not in ("debug", "info"):
        return None
    session, request_id = request.session, request.request_id

    async def send(text: str) -> None:  # to this request, from whichever task runs the code
        await session.send_log_message(
            level="info",
            data={"msg": text},
            logger="execute_code",
            related_request_id=request_id,
        )

    return send


def _session_log_level(ctx: Context) -> str | None:
    """The level the client of `ctx` asked for with `logging/setLevel`, if it did. fastmcp
    keeps it per session id in a private mapping; a connection without a session id
    (stateless HTTP) shares one key with every other, so only stdio's is its own."""
    try:
        from fastmcp.server.context import _log_level_session_key

        key = _log_level_session_key(ctx.session)
        if key == "__no_session__" and ctx.transport != "stdio":
            return None
        level = ctx.fastmcp._client_log_levels.get(key)
    except (ImportError, AttributeError, RuntimeError):  # if fastmcp ever moves it
        return None
    return None if level is None else str(level)


# MCP 2026-07-28 deprecates log messages (SEP-2577) but keeps them: a client that asks for
# them gets them, without the server warning on stderr each time it sends one.
warnings.filterwarnings("ignore", "The logging capability is deprecated", MCPDeprecationWarning)


def _era(ctx: Context | None) -> str | None:
    """'modern' (2026-07-28: input_required), 'handshake' (elicitation/create), or None
    when the client declared no elicitation capability."""
    if ctx is None:
        return None
    try:
        params = ctx.session.client_params
        context = ctx.request_context
    except (RuntimeError, AttributeError, ValueError):  # no MCP request behind this call
        return None
    if params is None or params.capabilities.elicitation is None or context is None:
        return None
    return "modern" if context.protocol_version in MODERN_PROTOCOL_VERSIONS else "handshake"


def _carries_answer(ctx: Context | None) -> bool:
    """Whether a call carries a question's state or answers: from a client that says it
    cannot be asked (no elicitation capability), a replayed state would otherwise run the
    code again, unasked, past the gate's cap and drain (outside attack 113)."""
    try:
        return ctx is not None and bool(ctx.request_state or ctx.input_responses is not None)
    except (RuntimeError, AttributeError, ValueError):  # no MCP request, or params not a call's
        return False


def handshake_approver(ctx: Context | None) -> Approver | None:
    """An approver that asks with `elicitation/create` while the tool runs, for clients
    before MCP 2026-07-28 that can be asked; None for every other client."""
    if ctx is None or _era(ctx) != "handshake":
        return None

    async def ask(request: ApprovalRequest) -> Answer:
        try:
            answer = await ctx.elicit(request.message, _Approval)
        except ValidationError:  # an answer not in the question's schema: not a yes
            return NOT_A_YES
        if isinstance(answer, AcceptedElicitation) and answer.data.approve is not True:
            return NOT_A_YES
        return isinstance(answer, AcceptedElicitation)

    return ask


def _approved(responses: Any) -> Answer:
    """Whether the client's answer to our question accepts it (decline, cancel: no; an
    accept without `approve: true`: why not, as a client's plain "Accept" was taken for a
    decline unsaid: a new user's first hour, M)."""
    result = (responses or {}).get(_QUESTION_KEY)
    if not isinstance(result, mcp_types.ElicitResult) or result.action != "accept":
        return False
    return True if (result.content or {}).get("approve") is True else NOT_A_YES
