"""OpenTelemetry for the gateway (contract §10): runs as spans, the SDK as OTEL_* says.

`RunTelemetry.start` gives each run its `RunSpans` (see `spans`) when a tracer provider is
configured, and None otherwise, without importing OpenTelemetry in a process that has not.
`configure_from_env` sets the SDK up from the standard `OTEL_*` variables when they ask for
traces and nobody has set a tracer provider yet (`opentelemetry-instrument mcp-code-mode
serve` does, as fastmcp's docs suggest; so may an application embedding the gateway): no
variables, no exporter. It uses the SDK's own reader of those variables, the configurator
`opentelemetry-instrument` runs, so OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES,
OTEL_TRACES_SAMPLER, OTEL_BSP_* and the exporters' own variables work as documented.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from ..settings import Settings

if TYPE_CHECKING:
    from .spans import RunSpans

__all__ = ["RunTelemetry", "configure_from_env", "flush"]

logger = logging.getLogger(__name__)

_NETWORK_TRANSPORT = {"stdio": "pipe", "http": "tcp", "sse": "tcp"}  # semconv `network.transport`
_ENDPOINTS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
_PROTOCOLS = ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
_FLUSH_MS = 2000


class _Upstream(Protocol):
    @property
    def transport(self) -> str: ...


class _Config(Protocol):
    """What the telemetry needs of a `GatewayConfig`."""

    @property
    def servers(self) -> Mapping[str, _Upstream]: ...

    def redact(self, text: str) -> str: ...


class RunTelemetry:
    """Starts each run's spans, with what every span of this gateway says."""

    def __init__(
        self,
        *,
        executor: str,
        transports: Mapping[str, str],
        content: bool,
        redact: Callable[[str], str],
    ) -> None:
        self.executor = executor
        self.transports = {
            name: _NETWORK_TRANSPORT.get(kind, kind) for name, kind in transports.items()
        }
        self.content = content  # code, input and arguments in spans (MCP_CODE_OTEL_CONTENT=on)
        self._redact = redact

    @classmethod
    def from_settings(cls, settings: Settings, config: _Config, executor: str) -> RunTelemetry:
        """As MCP_CODE_OTEL_CONTENT says, for `config`'s upstreams."""
        return cls(
            executor=executor,
            transports={name: server.transport for name, server in config.servers.items()},
            content=settings.otel_content == "on",
            redact=config.redact,
        )

    def start(self, kind: str, code: str, input: Any, client: str) -> RunSpans | None:
        """The run's spans, started now; None when no tracer is configured."""
        if "opentelemetry.trace" not in sys.modules:  # nothing can have configured one
            return None
        from .spans import CODE_CHARS, RunSpans, configured_tracer, content_text

        tracer = configured_tracer()
        if tracer is None:
            return None
        text = content_text(self._redact) if self.content else None
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": kind,
            "mcp_code_mode.run.kind": kind,
            "mcp_code_mode.executor": self.executor,
            "mcp_code_mode.code.chars": len(code),
        }
        if client:
            attributes["mcp_code_mode.client.name"] = client
        if text is not None:
            arguments = {"code": code, "input": input}
            attributes["gen_ai.tool.call.arguments"] = text(arguments, CODE_CHARS)
        return RunSpans(
            tracer, kind, attributes=attributes, transports=self.transports, content=text
        )


def configure_from_env(environ: Mapping[str, str] | None = None) -> bool:
    """Set up the OpenTelemetry SDK from the `OTEL_*` variables; True when this did it.

    Only when they ask for traces (an OTLP endpoint, or an OTEL_TRACES_EXPORTER other than
    `none`), OTEL_SDK_DISABLED is not `true`, and no tracer provider is set yet. With an
    endpoint and no exporter or protocol named, spans go over OTLP/HTTP (`http/protobuf`, the
    specification's default; the SDK's own default, gRPC, needs another package). Metrics and
    logs are exported only when their own OTEL_*_EXPORTER asks. A missing package or a bad
    value is logged, never raised: the gateway serves without traces.
    """
    env = os.environ if environ is None else environ
    exporters = env.get("OTEL_TRACES_EXPORTER", "").strip()
    if exporters.lower() == "none" or env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if not exporters and not any(env.get(name) for name in _ENDPOINTS):
        return False
    from opentelemetry import trace

    if not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        return False  # set already (opentelemetry-instrument, an embedding application)
    try:
        from opentelemetry.sdk._configuration import _OTelSDKConfigurator
    except ImportError:
        logger.warning(
            "OTEL_* settings ask for traces, but the OpenTelemetry SDK is not installed "
            "(pip install opentelemetry-sdk opentelemetry-exporter-otlp-proto-http)"
        )
        return False

    class _Configurator(_OTelSDKConfigurator):  # the SDK's way: a distro subclasses it
        pass

    protocol = any(env.get(name) for name in _PROTOCOLS)
    names = [] if exporters else ["otlp" if protocol else "otlp_proto_http"]
    try:
        _Configurator().configure(trace_exporter_names=names)  # type: ignore[no-untyped-call]
    except (ImportError, RuntimeError, ValueError) as exc:  # an exporter not installed, a typo
        logger.warning("OpenTelemetry is not set up: %s", exc)
        return False
    return True


def flush(timeout_ms: int = _FLUSH_MS) -> None:
    """Export the spans still queued (the process may end without its exit handlers)."""
    if "opentelemetry.trace" not in sys.modules:
        return
    from opentelemetry import trace

    force_flush = getattr(trace.get_tracer_provider(), "force_flush", None)
    if callable(force_flush):
        force_flush(timeout_ms)
