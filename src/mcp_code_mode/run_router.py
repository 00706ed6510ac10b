"""One run's view of the gateway: every upstream call a guest makes goes through `RunRouter.call`.

It is the one place where a call is admitted, bounded, approved and recorded, whatever the
path that made it (`tools.x.y(...)`, `call_tool`, each call of a `call_tools` batch, their
`await` forms, a dspy interpreter session, `run_task`'s steps, `mcp-code-mode exec`) and
whichever executor ran the code (contract §7, §8). The order is what makes approval hold:

1. the names are checked for size, and clipped copies are what the run keeps;
2. the upstream is waited for and the tool looked up in the catalog (`resolve`): a server
   that never connects or a tool it does not have fails here, and is never sent;
3. within the run's limit on calls in flight, the call goes to its connection (`send`),
   which, right before sending it, has the tool as that connection itself lists it decide
   whether it needs approval (a listing under way after a reconnect or a tools/list_changed
   is waited for; a tool cache's entry never decides), and a person is asked;
4. only an admitted call is sent.

What it does not stop: an upstream that lists a tool as harmless and then does harm. The
decision is as good as the tool's annotations and the config's `approve_tools` globs.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Collection
from typing import TYPE_CHECKING, Any, Protocol

from .approval import RunApprovals
from .call_args import NOT_KEPT, Checked, bounded_args, size_at_least
from .encodable import clean_text, clip, one_line
from .errors import CodeModeError, ToolCallFailed, ToolCallLimitExceeded, UnknownToolError
from .reach import starting_note
from .runs.log_stream import RunLogStream
from .runs.progress import MESSAGE_CHARS, RunProgress, progress_args
from .runs.trace import CallTrace, RunTrace
from .sandbox.base import ToolCallRecord
from .sandbox.local import LOG_READ_BYTES
from .sandbox.protocol import MAX_NAME_CHARS, PROGRESS_MESSAGE_CHARS
from .tool_formatter import load_tokenizer
from .tool_results import JSON, Reply, ResultBudget
from .upstreams.fair_share import call_owner

if TYPE_CHECKING:
    from opentelemetry.trace import Span

    from .config import GatewayConfig
    from .runs.spans import RunOutcome, RunSpans
    from .settings import Settings

__all__ = ["RECORD_NAME_CHARS", "Admission", "RouterHost", "RunRouter"]

RECORD_NAME_CHARS = 200  # of a name, what a run's records (and its errors) keep
_MARGIN = 64 * 1024  # redacted past a cut: a secret the cut splits is still found
_READ_CUT = LOG_READ_BYTES // 4  # characters: a live log line this long may have been cut


Admission = Callable[[bool], Awaitable[None]]
"""Told whether a call needs approval, right before it is sent; raises to refuse it."""


class RouterHost(Protocol):
    """What a run's calls and discovery queries need of the gateway."""

    settings: Settings  # `max_call_bytes` bounds each call's arguments

    async def resolve(self, server: str, tool: str) -> None:
        """Wait for `server` and check that it lists `tool` (ToolCallFailed: it is
        unavailable, or has no such tool)."""
        ...

    async def send(
        self, server: str, tool: str, args: dict[str, Any], *, admit: Admission
    ) -> Reply:
        """Send one call; `admit` decides on it, from the tool as the connection the call
        goes over lists it, right before it goes out. Its unwrapped result, and its text."""
        ...

    async def settle(self, *, index: bool) -> None: ...
    def search_tools(
        self, query: str, limit: int, *, prefer: Collection[str]
    ) -> list[dict[str, Any]]: ...
    def get_tool_docs(self, server: str, tool: str | None, page: int) -> str: ...
    def list_servers(self) -> list[dict[str, Any]]: ...


async def _failing(error: ToolCallFailed) -> Reply:
    raise error


class RunRouter:
    """Counts, bounds, approves and records one run's tool calls (see the module docstring).

    Every piece of server-side work a guest causes goes through here and is charged to its
    run: calls per run (`max_tool_calls`, 0: no limit), calls in flight
    (`max_concurrent_calls`; the rest wait their turn), and nothing outlives the run
    (`close()` cancels what is still waiting or in flight).
    """

    def __init__(
        self,
        host: RouterHost,
        approvals: RunApprovals,
        *,
        max_tool_calls: int,
        max_concurrent_calls: int,
        trace: RunTrace | None = None,
        redact: GatewayConfig | None = None,
    ) -> None:
        self._host, self.owner = host, ""  # set by the gateway: see `ToolRouter.owner`
        # what a client is sent while the run works, and names kept, pass it first
        self._redact = None if redact is None else redact.redact
        self._redact_cut = None if redact is None else redact.redact_cut
        self.trace = trace  # the run's record in the making (None: runs are not recorded)
        self.spans: RunSpans | None = None  # the run's spans (None: no tracer is configured)
        self._progress: RunProgress | None = None  # for the client (None: it did not ask)
        self._logs: RunLogStream | None = None  # the same
        self._approvals = approvals
        self._records: list[ToolCallRecord] = []
        self._limit = max_tool_calls
        self._slots = asyncio.Semaphore(max_concurrent_calls)
        self._checking = asyncio.Lock()  # one offloaded argument check of this run at a time
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closed = False
        self._starting: str | None = None  # a search saw servers still starting

    def observe(
        self,
        spans: RunSpans | None,
        progress: RunProgress | None,
        logs: RunLogStream | None = None,
    ) -> None:
        """Trace the run's calls and approval questions in `spans`, tell `progress` of
        them, and stream the run's log lines to `logs` (each None: not wanted); before the
        run starts."""
        self.spans, self._progress, self._logs = spans, progress, logs
        if spans is not None:
            self._approvals.traced = spans.approval

    def ended(self, reply: RunOutcome) -> None:
        """The run ended with `reply`: its span ends."""
        if self.spans is not None:
            self.spans.end(reply)

    def result_budget(self) -> ResultBudget:
        return ResultBudget(self._host.settings.max_result_bytes)

    def admit(self, count: int) -> None:
        if self._limit and len(self._records) + count > self._limit:
            raise ToolCallLimitExceeded(
                f"the run made more than {self._limit} tool calls (raise MCP_CODE_MAX_TOOL_CALLS)"
            )

    async def call(
        self,
        server: str,
        tool: str,
        args: dict[str, Any],
        *,
        budget: ResultBudget | None = None,
        refused: str | None = None,
    ) -> JSON:
        self.admit(1)
        kept = (self._name(server), self._name(tool))
        record = ToolCallRecord(server=kept[0], tool=kept[1], ms=0.0, ok=False)
        self._records.append(record)
        if self._closed:
            raise ToolCallFailed(*kept, "the run has ended")
        if (too_long := _long_name(server, tool)) is not None:
            raise ToolCallFailed(*kept, too_long)
        checked = await self._checked(args, refused)
        args, refused = checked.args, checked.refused  # an oversized value is kept by nobody
        traced = None if self.trace is None else self.trace.call(*kept, checked.text, checked.size)
        order = len(self._records) - 1
        span = None if self.spans is None else self.spans.call(order, *kept, checked.text)
        del checked  # its whole text, while the call waits for a slot (attack 102: 2x a batch)
        call = (
            _failing(ToolCallFailed(*kept, refused))
            if refused is not None
            else self._approved_call(server, tool, args, record, traced)
        )
        task = asyncio.ensure_future(_made_by(self, call, span))
        self._tasks.add(task)
        try:
            reply = await task
        except ToolCallFailed as exc:  # what a model or a terminal is shown of the names
            self._ended(traced, span, error=exc)
            if (exc.server, exc.tool) == kept:
                raise
            raise ToolCallFailed(*kept, exc.message) from None
        except BaseException as exc:
            self._ended(traced, span, error=exc)
            raise
        finally:
            self._tasks.discard(task)
            del task  # its error's traceback holds this frame: no cycle keeps args (attack 82)
        self._ended(traced, span, reply=reply)
        if budget is not None and not budget.take(await _size(reply, budget.left + 1)):
            record.ok = False  # made, but the guest gets a ToolError in its slot (attack 92)
            raise ToolCallFailed(*kept, _over_budget(budget))
        return reply.value

    async def _checked(self, args: dict[str, Any], refused: str | None) -> Checked:
        """The arguments as they are sent, or why not (the worker's reason, when it kept them)."""
        if refused is not None:
            return Checked(None, NOT_KEPT, 0, refused)
        return await bounded_args(args, self._host.settings.max_call_bytes, self._checking)

    def _ended(
        self,
        traced: CallTrace | None,
        span: Span | None,
        *,
        reply: Reply | None = None,
        error: BaseException | None = None,
    ) -> None:
        """A call ended: its record, its span and the client's progress are told."""
        if self.trace is not None and traced is not None:
            text = None if error is None else f"{type(error).__name__}: {error}"
            if isinstance(error, ToolCallFailed):
                text = error.message
            sent = reply or Reply(None, "")
            self.trace.end(traced, ok=error is None, text=sent.text, value=sent.value, error=text)
        if self.spans is not None and span is not None:
            self.spans.end_call(span, error)
        if self._progress is not None:
            self._progress.call_ended()

    async def _approved_call(
        self,
        server: str,
        tool: str,
        args: dict[str, Any],
        record: ToolCallRecord,
        traced: CallTrace | None,
    ) -> Reply:
        await self._host.resolve(server, tool)

        async def admit(needs_approval: bool) -> None:
            if not needs_approval:
                return
            try:
                await self._approvals.check(server, tool, args)
            finally:
                if traced is not None:
                    traced.approval = self._approvals.decisions.get((server, tool), "undecided")

        async with self._slots:
            started, paused = time.perf_counter(), self._approvals.paused_s
            record.in_flight(started)
            try:
                reply = await self._host.send(server, tool, args, admit=admit)
                record.ok = True
                return reply
            finally:
                # A person's time is not the call's (the run's pauses: at least this one's).
                record.in_flight(None)
                elapsed = time.perf_counter() - started - (self._approvals.paused_s - paused)
                record.ms = round(max(0.0, elapsed) * 1000, 1)

    def notes(self) -> list[str]:
        """Lines the run's logs gain from the gateway (calls that ran unapproved, servers a
        search could not see yet)."""
        return self._approvals.notes() + ([self._starting] if self._starting else [])

    @property
    def paused_s(self) -> float:
        """Seconds the run waited for a person: not counted against its time limit."""
        return self._approvals.paused_s

    def logs_to(self) -> Callable[[list[str]], Awaitable[bool]] | None:
        if self._logs is None or self._redact is None or self._redact_cut is None:
            return None if self._logs is None else self._logs.send
        send, whole, cut = self._logs.send, self._redact, self._redact_cut
        # whole lines before the stream clips them (attack 88), cleaned first (89), a line
        # read cut through a secret without its start (90)
        return lambda lines: send(
            [(cut if len(line) >= _READ_CUT else whole)(clean_text(line)) for line in lines]
        )

    def on_pause(
        self,
        notify: Callable[[], Awaitable[str | None]],
        resume: Callable[[], Awaitable[None]],
    ) -> None:
        self._approvals.before_asking = notify
        self._approvals.after_asking = resume

    def close(self) -> None:
        """The run is over: cancel its calls still waiting or in flight; later calls fail.
        Closed as its task is cancelled, the run's span ends (`ended` will not be called)."""
        self._closed = True
        for task in self._tasks:
            task.cancel()
        self._approvals.close()
        if self.spans is not None and _cancelling():
            self.spans.end(None)

    async def query(self, kind: str, args: dict[str, Any]) -> JSON:
        if kind == "progress":  # guest code's progress(...): for the client, when it asked
            self._report(args)
            return None
        host = self._host
        await host.settle(index=kind != "list_servers")  # discovery answers about every upstream
        if kind == "search_tools":
            limit = args.get("limit")
            if limit is not None and not isinstance(limit, int):
                raise UnknownToolError(f"search_tools: limit must be an int, not {limit!r}")
            used = {record.server for record in self._records if record.ok}
            query = args.get("query", "")
            if not isinstance(query, str | int | float):  # `str()` of a 3M list: 1 s (attack 82)
                raise UnknownToolError(
                    f"search_tools: query must be a str, not {type(query).__name__}"
                )
            hits = host.search_tools(str(query), 5 if limit is None else limit, prefer=used)
            self._starting = starting_note(host.list_servers()) or self._starting
            return hits
        if kind == "get_tool_docs":
            server, tool, page = args.get("server"), args.get("tool"), args.get("page", 1)
            if not isinstance(server, str) or not (tool is None or isinstance(tool, str)):
                raise UnknownToolError("get_tool_docs(server, tool=None) takes names as strings")
            if not isinstance(page, int) or isinstance(page, bool):
                raise UnknownToolError(f"get_tool_docs: page must be an int, not {page!r}")
            await asyncio.to_thread(load_tokenizer)  # once a process, 0.3-0.6 s: off the loop
            return host.get_tool_docs(server, tool, page)
        if kind == "list_servers":
            return host.list_servers()
        raise CodeModeError(f"unknown query {kind!r}")

    def records(self) -> list[ToolCallRecord]:
        return [record.as_of(time.perf_counter()) for record in self._records]

    def _message(self, text: str) -> str:
        """A progress message as sent: cleaned, then redacted (a NUL in a secret hid it),
        past the clip too, without a secret's start where the worker cut it (attack 89)."""
        cut = len(text) >= PROGRESS_MESSAGE_CHARS  # as the worker sent it (attack 92)
        text = clean_text(text[: MESSAGE_CHARS + _MARGIN])
        if self._redact is not None and self._redact_cut is not None:
            text = (self._redact_cut if cut else self._redact)(text)
        return clip(text, MESSAGE_CHARS)

    def _name(self, name: str) -> str:
        """A server or tool name as records show it, redacted (attack 89)."""
        if self._redact is not None:
            name = self._redact(clean_text(name[: RECORD_NAME_CHARS + _MARGIN]))
        return _shown(name)

    def _report(self, args: dict[str, Any]) -> None:
        """Check guest code's `progress(done, total=None, message=None)` and pass it on."""
        done, total, message = progress_args(args)
        if self._progress is not None:
            shown = None if message is None else self._message(message)
            self._progress.report(done, total, shown)


async def _size(reply: Reply, stop: int) -> int:
    """What a result costs in the reply to the worker, which is ASCII JSON: a character
    past ASCII takes up to 3 bytes per UTF-8 byte there (an emoji, 12: attack 86)."""
    if not reply.text:
        return await size_at_least(reply.value, stop)
    text = reply.text
    return len(text) if text.isascii() else 3 * len(text.encode("utf-8", "surrogatepass"))


def _over_budget(budget: ResultBudget) -> str:
    return (
        f"the call was made, but its result is not returned: this batch's results passed "
        f"{budget.limit:,} bytes in all (MCP_CODE_MAX_RESULT_BYTES); make fewer calls at a time"
    )


def _shown(name: str) -> str:
    """A name as records and errors show it: clipped, without escapes or controls."""
    return one_line(clip(name, RECORD_NAME_CHARS))


def _long_name(server: str, tool: str) -> str | None:
    """Why no upstream can have these names, refused before any work is done with them."""
    for what, name in (("server", server), ("tool", tool)):
        if len(name) > MAX_NAME_CHARS:
            return (
                f"the {what} name is longer than the {MAX_NAME_CHARS:,} characters a name "
                "may have; the call was not sent"
            )
    return None


async def _made_by(run: RunRouter, call: Awaitable[Reply], span: Span | None) -> Reply:
    """`call` in its own task: as `run`'s (an upstream's places go round by run, see
    `upstreams.fair_share`), with `span` current (see `RunSpans.active`)."""
    call_owner.set(run)
    if run.spans is None or span is None:
        return await call
    with run.spans.active(span):
        return await call


def _cancelling() -> bool:
    """Whether the current task is being cancelled (a run whose request went away)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0
