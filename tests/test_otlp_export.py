"""Spans reach an OTLP collector (contract §10): the gateway process, started with the standard
OTEL_EXPORTER_OTLP_ENDPOINT pointing at a small OTLP/HTTP receiver on 127.0.0.1, exports a
run's span with its 25 upstream calls' spans nested under it."""

from __future__ import annotations

import asyncio
import http.server
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from .support import QUIET, ROOT, TEST_SERVER, ConfigWriter, server_entry

BOARD = str(ROOT / "tests" / "servers" / "approvals_upstream.py")
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

Span = dict[str, Any]  # name, scope, ids, attributes of one received span


class _Collector(http.server.ThreadingHTTPServer):
    """Receives OTLP/HTTP protobuf exports on POST /v1/traces; keeps every span."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Receiver)
        self.spans: list[Span] = []
        self.paths: list[str] = []

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Receiver(http.server.BaseHTTPRequestHandler):
    server: _Collector

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.server.paths.append(self.path)
        request = ExportTraceServiceRequest.FromString(body)
        for resource in request.resource_spans:
            for scoped in resource.scope_spans:
                for span in scoped.spans:
                    self.server.spans.append(
                        {
                            "name": span.name,
                            "scope": scoped.scope.name,
                            "trace": span.trace_id.hex(),
                            "id": span.span_id.hex(),
                            "parent": span.parent_span_id.hex(),
                            "attributes": {a.key: _value(a.value) for a in span.attributes},
                        }
                    )
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind else None


@pytest.fixture
def collector() -> Iterator[_Collector]:
    server = _Collector()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


async def test_spans_reach_an_otlp_collector_nested_under_the_run(
    write_config: ConfigWriter, collector: _Collector, tmp_path: Path
) -> None:
    testsrv = server_entry(TEST_SERVER)
    config = write_config({"testsrv": testsrv, "board": server_entry(BOARD)})
    transport = StdioTransport(
        command=sys.executable,
        args=["-m", "mcp_code_mode.executor_server", "--config", str(config)],
        env={
            **QUIET,
            "MCP_CODE_POOL_SIZE": "1",
            "MCP_CODE_CACHE_DIR": str(tmp_path / "cache"),
            "OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint,
            "OTEL_SERVICE_NAME": "mcp-code-mode-test",
            "OTEL_BSP_SCHEDULE_DELAY": "50",
        },
        cwd=str(tmp_path),
        keep_alive=False,
    )
    async with Client(transport, init_timeout=60) as client:
        result = await client.call_tool_mcp("execute_code", {"code": CODE})
    assert result.is_error is False
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not _runs(collector.spans):
        await asyncio.sleep(0.05)
    (run,) = _runs(collector.spans)
    assert set(collector.paths) == {"/v1/traces"}
    calls = [s for s in collector.spans if s["parent"] == run["id"] and s["name"] != "approval"]
    assert len(calls) == 25
    assert all(s["trace"] == run["trace"] and s["scope"] == "mcp_code_mode" for s in calls)
    assert sorted(s["attributes"]["mcp_code_mode.call.order"] for s in calls) == list(range(25))
    assert {s["name"] for s in calls} == {
        "tools/call echo",
        "tools/call structured",
        "tools/call fail",
        "tools/call post_message",
    }
    # The run's span is under fastmcp's span of the MCP request that started it.
    (request,) = [s for s in collector.spans if s["id"] == run["parent"]]
    assert request["name"] == "tools/call execute_code" and request["scope"] == "fastmcp"
    (posted,) = [s for s in calls if s["name"] == "tools/call post_message"]
    under = [s for s in collector.spans if s["parent"] == posted["id"]]
    (question,) = [s for s in under if s["scope"] == "mcp_code_mode"]
    assert question["name"] == "approval post_message"
    assert question["attributes"]["mcp_code_mode.approval.decision"] == "not asked (auto)"
    assert "alpha-argument" not in repr(collector.spans)


def _runs(spans: list[Span]) -> list[Span]:
    return [s for s in spans if s["name"] == "execute_code" and s["scope"] == "mcp_code_mode"]
