"""`RunSpans`: one run as OpenTelemetry spans (contract §10), through the API only.

A run is an INTERNAL span named for its kind (`execute_code`, or `run_task` for an agent's
step) under the span of the MCP request that started it (fastmcp's `tools/call execute_code`).
Each upstream call is a CLIENT span `tools/call {tool}` under the run's, with the attributes
of OpenTelemetry's MCP and GenAI semantic conventions: `mcp.method.name`, `gen_ai.tool.name`,
`gen_ai.operation.name` (`execute_tool`), `network.transport` (`pipe` for stdio, `tcp`), and
`error.type` (`tool_error`, `cancelled`) with an ERROR status when it fails. fastmcp's own
client span for the call is suppressed (`suppress_fastmcp_telemetry`, made for callers that
own the MCP span hierarchy): the call span is the MCP client span, the trace context the
upstream is sent in `_meta` (the MCP SDK's own `MCP send ...` span sits under it). A question
asked of a person is an INTERNAL span `approval {tool}` under the call that waited for it.

Code, input, arguments and error messages (an upstream's error can quote its arguments) stay
out of spans unless `content` (MCP_CODE_OTEL_CONTENT=on); then they are redacted and clipped,
as the conventions' opt-in `gen_ai.tool.call.arguments` and the status description.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

from .. import __version__
from ..encodable import clip
from ..errors import ToolCallFailed

__all__ = [
    "ARGUMENTS_CHARS",
    "CODE_CHARS",
    "SCOPE",
    "RunOutcome",
    "RunSpans",
    "configured_tracer",
    "content_text",
]

SCOPE = "mcp_code_mode"  # the instrumentation scope of every span made here
CODE_CHARS = 20_000  # of a run's code and input, what a span keeps (content on)
ARGUMENTS_CHARS = 2_000  # of a call's arguments or an error message (content on)
_PREFIX = "mcp_code_mode."


class RunOutcome(Protocol):
    """What a run's span needs of its reply (an `ExecutionResult`)."""

    @property
    def ok(self) -> bool: ...

    @property
    def error(self) -> Any: ...  # `ErrorDetail | None`: `.type`, `.message`, `.line`


class RunSpans:
    """The spans of one run (see the module docstring); `end` it once."""

    def __init__(
        self,
        tracer: Tracer,
        kind: str,
        *,
        attributes: Mapping[str, Any],
        transports: Mapping[str, str],
        content: Callable[[Any, int], str] | None,
    ) -> None:
        """Start the run's span, named `kind`, under the current span."""
        from fastmcp.telemetry import suppress_fastmcp_telemetry  # fastmcp is loaded by now

        self._tracer = tracer
        self._span = tracer.start_span(kind, kind=SpanKind.INTERNAL, attributes=attributes)
        self._parent = trace.set_span_in_context(self._span)
        self._transports = transports
        self._content = content  # value, limit -> redacted, clipped text; None: content off
        self._suppress = suppress_fastmcp_telemetry
        self._calls = self._failed = 0
        self._ended = False

    def call(self, order: int, server: str, tool: str, arguments: Any) -> Span:
        """A new upstream call's span, started now under the run's."""
        attributes: dict[str, Any] = {
            "mcp.method.name": "tools/call",
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool,
            _PREFIX + "server.name": server,
            _PREFIX + "call.order": order,
        }
        transport = self._transports.get(server)
        if transport is not None:
            attributes["network.transport"] = transport
        if self._content is not None:
            attributes["gen_ai.tool.call.arguments"] = self._content(arguments, ARGUMENTS_CHARS)
        self._calls += 1
        return self._tracer.start_span(
            f"tools/call {tool}", self._parent, SpanKind.CLIENT, attributes
        )

    @contextlib.contextmanager
    def active(self, span: Span) -> Iterator[None]:
        """While a call is made: `span` is the current span (an approval's parent, and the
        trace context the upstream receives), and fastmcp opens no span of its own."""
        # `end_call` sets the status: use_span would put the exception's text in it.
        with self._suppress(), trace.use_span(span, False, False, False):
            yield

    def end_call(self, span: Span, error: BaseException | None = None) -> None:
        """The call ended: ok, or failed with `error`."""
        if error is not None:
            self._failed += 1
            cancelled = isinstance(error, asyncio.CancelledError)
            kind = "tool_error" if isinstance(error, ToolCallFailed) else type(error).__qualname__
            span.set_attribute("error.type", "cancelled" if cancelled else kind)
            message = error.message if isinstance(error, ToolCallFailed) else str(error)
            span.set_status(Status(StatusCode.ERROR, self._described(message) or kind))
        span.end()

    @contextlib.contextmanager
    def approval(self, server: str, tool: str) -> Iterator[Callable[[str], None]]:
        """A span for the time a person is asked about `server.tool`, under the current span
        (the call that asked); the callable yielded records how the question was decided."""
        attributes = {"gen_ai.tool.name": tool, _PREFIX + "server.name": server}
        span = self._tracer.start_span(f"approval {tool}", attributes=attributes)
        try:
            yield lambda decision: span.set_attribute(_PREFIX + "approval.decision", decision)
        except asyncio.CancelledError:  # the run ended while the person was being asked
            span.set_attribute("error.type", "cancelled")
            raise
        finally:
            span.end()

    def end(self, outcome: RunOutcome | None) -> None:
        """The run ended with `outcome` (None: it was cancelled); later calls do nothing."""
        if self._ended:
            return
        self._ended = True
        span = self._span
        span.set_attribute(_PREFIX + "run.tool_calls", self._calls)
        span.set_attribute(_PREFIX + "run.failed_calls", self._failed)
        span.set_attribute(_PREFIX + "run.ok", outcome is not None and outcome.ok)
        error = None if outcome is None else outcome.error
        if outcome is None:
            span.set_attribute("error.type", "cancelled")
            span.set_status(Status(StatusCode.ERROR, "cancelled"))
        elif error is not None:
            kind = str(getattr(error.type, "value", error.type))
            span.set_attribute("error.type", kind)
            if error.line is not None:
                span.set_attribute(_PREFIX + "error.line", int(error.line))
            span.set_status(Status(StatusCode.ERROR, self._described(error.message) or kind))
        span.end()

    def _described(self, message: str) -> str | None:
        return None if self._content is None else self._content(message, ARGUMENTS_CHARS)


def configured_tracer() -> Tracer | None:
    """The tracer of this package's spans; None when no tracer provider is configured (the
    API's proxy or a no-op one): then a run costs this check."""
    provider = trace.get_tracer_provider()
    if isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
        return None
    return provider.get_tracer(SCOPE, __version__)


def content_text(redact: Callable[[str], str]) -> Callable[[Any, int], str]:
    """How a value goes into a span when content is on: as JSON (a str as itself), secrets
    redacted, clipped to the limit given."""

    def text(value: Any, limit: int) -> str:
        if not isinstance(value, str):
            try:
                value = json.dumps(value, ensure_ascii=False, default=repr)
            except (TypeError, ValueError, RecursionError):
                value = repr(value)
        return clip(redact(value), limit)  # redacted whole: a clipped secret still matches

    return text
