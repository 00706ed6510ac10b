"""`Conversation`: one run's exchange with its worker, from the `run` message to `done`.

The worker's tool calls and queries are answered through the run's `ToolRouter` (a batch's
calls in lanes, a malformed request ends the worker), a person's approval time is held off
the run's deadline (`Hold`), and, when the router has somewhere to send them, the run's log
lines are handed on as the worker writes them (every `LOG_POLL_S`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Awaitable, Callable
from typing import Any

from ..errors import CodeModeError, ErrorType, WorkerCrashed
from .backend import Worker
from .base import ToolRouter
from .protocol import (
    CallRequest,
    ChildMessage,
    DoneMessage,
    Outcome,
    QueryRequest,
    ReplyMessage,
    RunMessage,
)
from .run_slots import Place

__all__ = ["LOG_POLL_S", "Conversation", "Hold"]

LOG_POLL_S = 0.25  # how often a run's new log lines are looked for, when someone wants them
_LANES = 64  # calls of one batch started at a time (the router bounds those in flight)
_last_lines: set[asyncio.Future[bool]] = set()  # of runs that ended without `done`, in flight

LogSink = Callable[[list[str]], Awaitable[bool]]
"""Takes a run's new log lines; says whether it wants more."""


class Hold:
    """Stops and restarts a run's deadline while a person is asked (§8: not the run's time),
    and parks its `place` among runs at once meanwhile (`run_slots`)."""

    def __init__(self, clock: asyncio.Timeout, place: Place | None = None) -> None:
        self._clock = clock
        self._place = place
        self._remaining: float | None = None
        self._asking = 0  # questions out: a batch may ask about several tools at once

    def stop(self) -> str | None:
        """Stop the clock; why the question is declined instead (see `Place.park`)."""
        if self._asking == 0:
            refusal = None if self._place is None else self._place.park()
            if refusal is not None:
                return refusal
            deadline = self._clock.when()
            if deadline is not None:
                self._remaining = max(0.0, deadline - asyncio.get_running_loop().time())
                self._clock.reschedule(None)
        self._asking += 1
        return None

    async def resume(self) -> None:
        """An answer is in; with the last of them, the run's place and clock again."""
        self._asking = max(0, self._asking - 1)
        if self._asking:
            return
        if self._place is not None:
            await self._place.unpark()  # a free place, or none: it never waits for one
        if self._remaining is not None:
            self._clock.reschedule(asyncio.get_running_loop().time() + self._remaining)
            self._remaining = None


class Conversation:
    """Serves one run's requests until the worker reports `done`."""

    def __init__(
        self,
        worker: Worker,
        router: ToolRouter,
        *,
        hold: Hold | None = None,
    ) -> None:
        self.worker = worker
        self.router = router
        self.requests = 0
        self._hold = hold
        router.on_pause(self._pause_worker, self._resume)
        self._tasks: set[asyncio.Task[None]] = set()
        self._logs_seen = 0  # of the run's log lines, those handed on while it ran
        self._held: list[Call] = []  # a batch's calls from its earlier pieces
        self._batch: object = None  # the number of the batch they are from

    async def run(self, message: RunMessage) -> DoneMessage:
        """Send `message`, answer the worker's requests, return its `done`.

        The guest index goes along only when the worker does not have that version yet.
        """
        try:
            await self.worker.send(_for_worker(message, self.worker.index_version))
        except ConnectionError:  # it died while idle (e.g. with its zygote): nothing ran
            raise WorkerCrashed("the worker process was gone before the run started") from None
        if "index" in message:
            self.worker.index_version = message["index_version"]
        sink = self.router.logs_to()
        streaming = None if sink is None else asyncio.create_task(self._stream_logs(sink))
        try:
            while True:
                request = await self.worker.receive()
                if request is None:
                    raise WorkerCrashed(
                        "the worker process died before finishing the run "
                        "(killed by the OS: a crash, or its CPU-time or memory limit)"
                    )
                if request["op"] == "done":
                    if streaming is not None and sink is not None:
                        streaming.cancel()
                        await self._forward_logs(sink, request["logs"])  # ahead of the result
                    return request
                self._answer_soon(request)
        finally:
            for task in list(self._tasks):
                task.cancel()
            if streaming is not None and not streaming.done():  # no `done`: a crash, a kill
                streaming.cancel()
                assert sink is not None
                self._send_last_logs(sink)

    def _answer_soon(self, request: ChildMessage) -> None:
        """Start answering a `call` or `query`; anything else mid-run ends the run."""
        if request["op"] not in ("call", "query"):
            raise WorkerCrashed(f"worker sent {request['op']!r} in the middle of a run")
        if any(not task.done() for task in self._tasks):
            # Guest calls are synchronous: a worker waits for each reply. One that sends
            # more has escaped its guest code; it may not make the server do unbounded work.
            raise WorkerCrashed("the worker sent a request before its previous one was answered")
        self.requests += 1
        task = asyncio.create_task(self._answer(request))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _send_last_logs(self, sink: LogSink) -> None:
        """The lines a worker that ended without `done` wrote since the last poll; not
        awaited: the run is ending, perhaps cancelled."""
        lines = self._new_logs(self.worker.produced()[1])
        if lines:
            sending = asyncio.ensure_future(sink(lines))
            _last_lines.add(sending)
            sending.add_done_callback(_last_lines.discard)

    async def _stream_logs(self, sink: LogSink) -> None:
        """Hand the run's new log lines to `sink` every `LOG_POLL_S`, as the worker wrote
        them to its mirror (a worker without one, under Pyodide, has none to give: its
        lines go when it is done), until `sink` wants no more."""
        offset, wanted = 0, True
        while wanted:
            await asyncio.sleep(LOG_POLL_S)
            lines, offset = self.worker.logs_since(offset)
            while lines and wanted:  # the worker may have written more than one read
                self._logs_seen += len(lines)
                wanted = await sink(lines)
                lines, offset = self.worker.logs_since(offset)

    async def _forward_logs(self, sink: LogSink, lines: list[str]) -> None:
        new = self._new_logs(lines)
        if new:
            await sink(new)

    def _new_logs(self, lines: list[str]) -> list[str]:
        """Of the run's log lines so far, those not handed on yet."""
        new, self._logs_seen = lines[self._logs_seen :], max(self._logs_seen, len(lines))
        return new

    async def _resume(self) -> None:
        if self._hold is not None:
            await self._hold.resume()

    async def _pause_worker(self) -> str | None:
        """The run is about to wait for a person: both clocks stop until the reply, and it
        gives its place back; or why the question is declined instead (`Hold.stop`)."""
        refusal = None if self._hold is None else self._hold.stop()
        if refusal is not None:
            return refusal
        with contextlib.suppress(ConnectionError, RuntimeError):
            await self.worker.send({"op": "pause"})
        return None

    async def _answer(self, request: CallRequest | QueryRequest) -> None:
        malformed = (LookupError, TypeError, ValueError, ArithmeticError, RecursionError)
        try:
            request_id = int(request["id"])
            count = len(request["calls"]) if request["op"] == "call" else 1
        except malformed:  # `int(1e400)` is an OverflowError: the conversation loop reports it
            self.worker.kill()
            return
        try:
            if request["op"] == "call":
                calls = self._whole_batch(request, count)
                if calls is None:  # a piece of a batch: held until its last
                    await self._reply(request_id, [])
                    return
                pending = _pending(self.router, request, calls)
            else:
                pending = _pending(self.router, request, [])
        except CodeModeError as exc:  # the batch goes past the run's limit: none is made
            # one outcome, fatal: the worker ends the run at the first (a failure per call
            # of 360,000 made a 10 MB reply, attack 84)
            results = [_failed(exc)]
        except malformed:  # a malformed request: the conversation loop reports the crash
            self.worker.kill()
            return
        else:
            results = await self._outcomes(pending)
        await self._reply(request_id, results)

    def _whole_batch(self, request: CallRequest, count: int) -> list[Call] | None:
        """The calls to make now: those held from the batch's earlier pieces, then the
        request's; None when the request is a piece, held (protocol.CallRequest).

        Raises:
            CodeModeError: past the run's call limit (nothing is held after it: guest
                code that caught the limit had held calls made with its next, attack 89).
            ValueError, TypeError: a malformed piece.
        """
        held, self._held, batch = self._held, [], request.get("batch")
        if batch is None or batch != self._batch:  # another batch's: dropped (attack 90)
            held, self._batch = [], None
            if batch is not None and request.get("more") is not True:
                raise ValueError("the last piece of a batch whose others are gone")
        total = request.get("total", 0)
        if type(total) is not int:
            raise TypeError("a batch's total must be an int")
        # before a batch's calls are read (360,000 took seconds of the event loop to
        # convert only to be refused: attack 84), a pieced batch in all at its first piece
        self.router.admit(max(len(held) + count, total))
        calls = held + _converted(request["calls"])
        if request.get("more") is not True:
            return calls
        if not request["calls"]:
            raise ValueError("an empty piece of a batch")
        self._held, self._batch = calls, batch
        return None

    async def _reply(self, request_id: int, results: list[Outcome]) -> None:
        reply: ReplyMessage = {"op": "reply", "id": request_id, "results": results}
        # The worker stopped its clock at `pause` and restarts it at this reply; the host's
        # runs again from the answer (`_resume`), so the rest of a batch is timed.
        # A worker that is gone cannot take the reply; the conversation loop reports it.
        with contextlib.suppress(ConnectionError, RuntimeError):
            await self.worker.send(reply)

    async def _outcomes(self, pending: list[Callable[[], Awaitable[Any]]]) -> list[Outcome]:
        """Outcomes in order, at most `_LANES` started at a time (a batch may hold 10**5).

        Once one call ends the run (TOOL_CALL_LIMIT), the rest are not started.
        """
        if len(pending) == 1:  # the common case, without a task of its own
            return [await self._outcome(pending[0])]
        outcomes: list[Outcome | None] = [None] * len(pending)
        queue = iter(enumerate(pending))
        fatal: list[Outcome] = []

        async def lane() -> None:
            for index, start in queue:
                outcome = fatal[0] if fatal else await self._outcome(start)
                if outcome.get("fatal") and not fatal:
                    fatal.append(outcome)
                outcomes[index] = outcome

        await asyncio.gather(*(lane() for _ in range(min(_LANES, len(pending)))))
        return [o for o in outcomes if o is not None]

    @staticmethod
    async def _outcome(start: Pending) -> Outcome:
        try:
            return {"ok": True, "value": await start()}
        except CodeModeError as exc:
            return _failed(exc)
        except Exception as exc:  # a gateway bug must reach the guest as a failed call, not hang it
            return {"ok": False, "error": f"internal gateway error: {type(exc).__name__}: {exc}"}


def _for_worker(message: RunMessage, index_version: int | None) -> RunMessage:
    """`message` without its index when the worker has that version of it already."""
    if index_version != message["index_version"] or "index" not in message:
        return message
    slim = message.copy()
    del slim["index"]
    return slim


Pending = Callable[[], Awaitable[Any]]


def _pending(
    router: ToolRouter, request: CallRequest | QueryRequest, calls: list[Call]
) -> list[Pending]:
    """The request's work: its `calls` (converted: a worker's request is untrusted), whose
    results share one budget (`ToolRouter.result_budget`), or its query."""
    if request["op"] == "call":
        budget = router.result_budget() if len(calls) > 1 else None
        return [
            functools.partial(router.call, *call[:3], budget=budget, refused=call[3])
            for call in calls
        ]
    return [functools.partial(router.query, str(request["kind"]), dict(request["args"]))]


Call = tuple[str, str, dict[str, Any], str | None]  # server, tool, arguments, why refused


def _converted(calls: list[Any]) -> list[Call]:
    return [(str(c["server"]), str(c["tool"]), dict(c["args"]), _refusal(c)) for c in calls]


def _refusal(call: Any) -> str | None:
    why = call.get("refused")
    return None if why is None else str(why)[:_REFUSAL_CHARS]


_REFUSAL_CHARS = 1000  # of why a worker did not send a call's arguments


def _failed(exc: CodeModeError) -> Outcome:
    if exc.error_type is ErrorType.TOOL_CALL_LIMIT:
        return {"ok": False, "fatal": exc.error_type.value, "error": str(exc)}
    return {"ok": False, "error": getattr(exc, "message", None) or str(exc)}
