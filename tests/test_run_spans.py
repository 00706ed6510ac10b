"""Runs as OpenTelemetry spans (contract §10): a real gateway over real stdio upstreams, with
the SDK's in-memory exporter as the configured tracer provider."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from opentelemetry.util._once import Once

from mcp_code_mode.approval import ApprovalRequest
from mcp_code_mode.runs.spans import SCOPE
from mcp_code_mode.runs.telemetry import configure_from_env

from .support import ROOT, SECRET, TEST_SERVER, ConfigWriter, server_entry, start_gateway

BOARD = str(ROOT / "tests" / "servers" / "approvals_upstream.py")

# 25 upstream calls: one, a concurrent batch of 21, one that fails, one that needs approval, one.
CODE = """
first = tools.testsrv.echo(text="alpha-argument")
many = call_tools([("testsrv", "structured", {"n": i}) for i in range(21)])
try:
    tools.testsrv.fail(message="it broke on purpose")
except ToolError:
    pass
tools.board.post_message(text="needs-approval-argument")
tools.testsrv.echo(text="omega-argument")
len(many)
"""
PRIVATE = ["alpha-argument", "needs-approval-argument", "omega-argument", "it broke on purpose"]


class _Switched(trace.TracerProvider):
    """The SDK's provider while a test of this module runs, a no-op one otherwise: tracers
    handed out meanwhile (the MCP SDK keeps one for good) ask which each time. A no-op span
    has no trace context, so a client of a later test propagates none."""

    def __init__(self, sdk: TracerProvider) -> None:
        self.sdk = sdk
        self.on = False

    def get_tracer(self, *args: Any, **kwargs: Any) -> trace.Tracer:
        return _SwitchedTracer(self, self.sdk.get_tracer(*args, **kwargs))


class _SwitchedTracer(trace.Tracer):
    def __init__(self, switch: _Switched, tracer: trace.Tracer) -> None:
        self._switch = switch
        self._tracer = tracer

    def _now(self) -> trace.Tracer:
        return self._tracer if self._switch.on else trace.NoOpTracer()

    def start_span(self, *args: Any, **kwargs: Any) -> trace.Span:
        return self._now().start_span(*args, **kwargs)

    @contextlib.contextmanager
    def start_as_current_span(self, *args: Any, **kwargs: Any) -> Iterator[trace.Span]:
        with self._now().start_as_current_span(*args, **kwargs) as span:
            yield span


_EXPORTER = InMemorySpanExporter()
_SDK = TracerProvider()
_SDK.add_span_processor(SimpleSpanProcessor(_EXPORTER))
_PROVIDER = _Switched(_SDK)


@pytest.fixture
def exported() -> Iterator[InMemorySpanExporter]:
    """The process's tracer provider, for this test only: the SDK's, exporting to memory."""
    _EXPORTER.clear()
    _PROVIDER.on = True
    trace.set_tracer_provider(_PROVIDER)
    try:
        yield _EXPORTER
    finally:
        # The API lets a process set its provider once; OpenTelemetry's own test utilities
        # (reset_trace_globals) undo that like this, so the rest of the suite runs without.
        _PROVIDER.on = False
        trace._TRACER_PROVIDER_SET_ONCE = Once()  # type: ignore[attr-defined]
        trace._TRACER_PROVIDER = None  # type: ignore[attr-defined]
        _EXPORTER.clear()


def _servers() -> dict[str, object]:
    testsrv = server_entry(TEST_SERVER, env={"TOKEN": "${MCP_CODE_TEST_SECRET}"})
    return {"testsrv": testsrv, "board": server_entry(BOARD)}


def _ours(spans: tuple[ReadableSpan, ...]) -> list[ReadableSpan]:
    return [s for s in spans if s.instrumentation_scope and s.instrumentation_scope.name == SCOPE]


async def _approve(request: ApprovalRequest) -> bool:
    return True


async def test_a_run_is_a_span_with_a_child_per_upstream_call(
    write_config: ConfigWriter, exported: InMemorySpanExporter, tmp_path: Path
) -> None:
    gateway = await start_gateway(write_config(_servers()), runs="off")
    try:
        reply = await gateway.execute(CODE, approver=_approve, client="pytest 1.0")
    finally:
        await gateway.aclose()
    assert reply.ok, reply.error
    spans = exported.get_finished_spans()
    ours = _ours(spans)
    (run,) = [s for s in ours if s.name == "execute_code"]
    calls = sorted(
        (s for s in ours if s.name.startswith("tools/call ")),
        key=lambda s: s.attributes["mcp_code_mode.call.order"],  # type: ignore[index]
    )
    assert len(calls) == 25
    assert run.context is not None and run.kind is SpanKind.INTERNAL
    for call in calls:
        assert call.parent is not None and call.parent.span_id == run.context.span_id
        assert call.context is not None and call.context.trace_id == run.context.trace_id
        assert call.kind is SpanKind.CLIENT
        attributes = dict(call.attributes or {})
        assert attributes["mcp.method.name"] == "tools/call"
        assert attributes["gen_ai.operation.name"] == "execute_tool"
        assert attributes["network.transport"] == "pipe"
        assert call.name == f"tools/call {attributes['gen_ai.tool.name']}"
    tools = [f"{c.attributes['mcp_code_mode.server.name']}.{c.name[11:]}" for c in calls]  # type: ignore[index]
    assert tools == [
        "testsrv.echo",
        *["testsrv.structured"] * 21,
        "testsrv.fail",
        "board.post_message",
        "testsrv.echo",
    ]
    (failed,) = [c for c in calls if c.status.status_code is StatusCode.ERROR]
    assert failed.name == "tools/call fail" and failed.attributes["error.type"] == "tool_error"  # type: ignore[index]
    # The batch ran concurrently: each call started before the batch's last one ended.
    batch = calls[1:22]
    assert max(c.start_time or 0 for c in batch) < max(c.end_time or 0 for c in batch)
    # The question asked of a person is a span under the call that waited for it.
    (asked,) = [s for s in ours if s.name == "approval post_message"]
    assert asked.parent is not None and calls[23].context is not None
    assert asked.parent.span_id == calls[23].context.span_id
    assert asked.attributes["mcp_code_mode.approval.decision"] == "approved"  # type: ignore[index]
    run_attributes = dict(run.attributes or {})
    assert run_attributes["mcp_code_mode.run.tool_calls"] == 25
    assert run_attributes["mcp_code_mode.run.failed_calls"] == 1
    assert run_attributes["mcp_code_mode.run.ok"] is True
    assert run_attributes["mcp_code_mode.client.name"] == "pytest 1.0"
    assert run.status.status_code is StatusCode.UNSET
    # fastmcp's own client span per call is left out: the call span is the one span.
    assert not [s for s in spans if s not in ours and s.name.startswith("tools/call ")]
    # Neither code nor arguments nor an upstream's error text went into any span.
    shown = json.dumps(
        [[s.name, dict(s.attributes or {}), s.status.description, s.events] for s in spans],
        default=str,
    )
    assert "gen_ai.tool.call.arguments" not in shown and "call_tools(" not in shown
    assert not [text for text in PRIVATE if text in shown]


async def test_with_content_on_spans_hold_code_and_arguments_without_secrets(
    write_config: ConfigWriter, exported: InMemorySpanExporter
) -> None:
    code = 'leak = tools.testsrv.env(name="TOKEN")\ntools.testsrv.echo(text="said " + leak)'
    gateway = await start_gateway(write_config(_servers()), runs="off", otel_content="on")
    try:
        reply = await gateway.execute(code)
    finally:
        await gateway.aclose()
    assert reply.ok, reply.error
    ours = _ours(exported.get_finished_spans())
    (run,) = [s for s in ours if s.name == "execute_code"]
    assert json.loads(str(run.attributes["gen_ai.tool.call.arguments"]))["code"] == code  # type: ignore[index]
    (echo,) = [s for s in ours if s.name == "tools/call echo"]
    arguments = json.loads(str(echo.attributes["gen_ai.tool.call.arguments"]))  # type: ignore[index]
    assert arguments == {"text": "said ${MCP_CODE_TEST_SECRET}"}  # the ${VAR}'s value redacted
    assert SECRET not in json.dumps([dict(s.attributes or {}) for s in ours])


async def test_a_cancelled_run_ends_its_spans_as_cancelled(
    write_config: ConfigWriter, exported: InMemorySpanExporter
) -> None:
    asked = asyncio.Event()

    async def never_answers(request: ApprovalRequest) -> bool:
        asked.set()
        await asyncio.Event().wait()
        return True

    gateway = await start_gateway(write_config(_servers()), runs="off")
    try:
        code = 'tools.board.post_message(text="x")'
        running = asyncio.ensure_future(gateway.execute(code, approver=never_answers))
        await asyncio.wait_for(asked.wait(), 20)  # the call waits for a person
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
    finally:
        await gateway.aclose()
    ours = _ours(exported.get_finished_spans())
    (run,) = [s for s in ours if s.name == "execute_code"]
    (call,) = [s for s in ours if s.name == "tools/call post_message"]
    (question,) = [s for s in ours if s.name == "approval post_message"]
    assert run.attributes["error.type"] == call.attributes["error.type"] == "cancelled"  # type: ignore[index]
    assert run.status.status_code is StatusCode.ERROR
    assert call.parent is not None and run.context is not None and call.context is not None
    assert call.parent.span_id == run.context.span_id
    assert question.parent is not None and question.parent.span_id == call.context.span_id


async def test_without_a_tracer_provider_a_run_has_no_spans(
    write_config: ConfigWriter,
) -> None:
    gateway = await start_gateway(write_config({}), runs="off")
    try:
        assert gateway.telemetry.start("execute_code", "1 + 1", None, "") is None
        assert (await gateway.execute("1 + 1")).ok
    finally:
        await gateway.aclose()


@pytest.mark.parametrize(
    "environ",
    [
        {},  # nothing asks for traces: no exporter
        {"OTEL_SERVICE_NAME": "x"},
        {"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"},
        {"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"},
    ],
)
def test_the_sdk_is_set_up_only_when_otel_variables_ask_for_traces(
    environ: dict[str, str],
) -> None:
    assert configure_from_env(environ) is False
    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def test_a_tracer_provider_set_already_is_kept(exported: InMemorySpanExporter) -> None:
    provider = trace.get_tracer_provider()
    assert configure_from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}) is False
    assert trace.get_tracer_provider() is provider
