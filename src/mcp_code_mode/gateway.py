"""The composition root: config, upstreams, catalog and executor behind one object; the MCP
server, the CLI and the agent are thin adapters over a `Gateway`."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

import mcp_types

from .approval import Approver, RunApprovals
from .call_args import ERROR_CHARS, explain
from .catalog import Catalog
from .config import GatewayConfig, load_config
from .encodable import clean_text
from .errors import ErrorType, ToolCallFailed, UnknownToolError
from .memory import IdleRelease, release_free_memory
from .offload import offloaded
from .reach import servers_reached
from .run_router import Admission, RunRouter
from .runs import Recorder, RunKind, RunTrace
from .runs.log_stream import RunLogStream
from .runs.progress import RunProgress
from .runs.telemetry import RunTelemetry, flush
from .sandbox.base import ExecutionResult, Executor, GuestIndex, Session
from .sandbox.executor import SandboxExecutor
from .sandbox.reply import bounded, code_time, waited_before
from .settings import Settings, cache_root
from .tool_formatter import count_tokens
from .tool_results import JSON, Reply, parse_input, result_text, text_chars, unwrap_result
from .upstreams import Connect, MCPServerManager, ToolCache

if TYPE_CHECKING:
    from .sandbox.interpreter import MCPCodeInterpreter

__all__ = ["DISCOVERY_WAIT_S", "ERROR_CHARS", "MAX_QUERY_CHARS", "Gateway"]

logger = logging.getLogger(__name__)

MAX_QUERY_CHARS = 1000  # of a search query, the part that is used (contract §7)
_BIG_LISTING = 1000  # tools in one listing, from which the memory it freed is given back
DISCOVERY_WAIT_S = 5.0  # discovery waits this long at most for upstreams still starting
_CANCELLED, _STOPPED = "the client cancelled", "a signal to the gateway stopped"  # (148)
_BIG_RESULT_CHARS = 100_000  # a result with more text is parsed off the event loop


class Gateway:
    """Upstream servers, their catalog and a sandbox executor, started and stopped together:
    `async with Gateway.from_settings(settings) as gw:`."""

    def __init__(
        self,
        settings: Settings,
        config: GatewayConfig,
        *,
        executor: Executor | None = None,
        connect: Connect = "wait",
        tool_cache: ToolCache | None = None,
    ) -> None:
        """
        Args:
            connect: when the upstreams connect. `"wait"`: all before `start()` returns.
                `"background"`: `start()` returns once the sandbox is warm, the catalog
                served from the tool cache meanwhile; anything that needs an upstream
                waits for it alone. `"on_demand"`: each upstream starts when code (or a
                discovery call) first needs it.
            tool_cache: where tool lists are remembered between runs (default: under the
                cache directory). Only `"background"` and `"on_demand"` read it.
        """
        self.settings, self.config = settings, config
        self.stopping = False  # a drain began: long work (run_task) ends between its steps
        self.tool_cache = tool_cache or ToolCache(cache_root(settings.cache_dir) / "tools")
        known = {} if connect == "wait" else self.tool_cache.known_tools(config.enabled)
        self.manager = MCPServerManager(
            config,
            default_timeout_s=settings.timeout_s,
            startup_timeout_s=settings.startup_timeout_s,
            max_concurrent_starts=settings.max_concurrent_starts,
            max_result_bytes=settings.max_result_bytes,
            max_upstream_calls=settings.max_upstream_calls,
            known_tools=known,
            on_tools_listed=self._remember_tools,
            log_dir=cache_root(settings.cache_dir) / "logs",  # each upstream's stderr
        )
        self.connect: Connect = connect
        self.executor: Executor = executor or SandboxExecutor.from_settings(settings)
        self._catalog: Catalog | None = None
        self._catalog_version = -1
        self._trimmed: Catalog | None = None  # the last catalog whose build released memory
        self._index: tuple[object, GuestIndex] | None = None  # (what it was made from, it)
        self._freed = IdleRelease()  # after bursts of big results, once no run is left
        self.recorder = Recorder.from_settings(settings, redact=config.redact, count=count_tokens)
        self.telemetry = RunTelemetry.from_settings(settings, config, self.executor.name)

    @classmethod
    def from_settings(cls, settings: Settings, config_path: str | Path | None = None) -> Gateway:
        """Load the config named by `config_path` or `MCP_SERVERS_CONFIG`; raises ConfigError."""
        return cls(settings, load_config(config_path or settings.servers_config))

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def start(self) -> None:
        """Start the upstreams (as `connect` says) and warm the executor; all or nothing."""
        try:
            async with asyncio.TaskGroup() as group:  # one failure cancels the other start
                group.create_task(self.manager.start(connect=self.connect))
                group.create_task(self.executor.start())
        except BaseExceptionGroup as failed:
            await self.aclose()
            raise failed.exceptions[0] from None
        except BaseException:
            await self.aclose()
            raise
        if self.connect == "wait":  # the index embeds in a thread: waited here, not in a search
            await asyncio.wrap_future(self.catalog.ready())

    async def connect_upstreams(self) -> None:
        """Start connecting every upstream not started yet, in the background: a gateway
        made `on_demand` that serves from now on (see `executor_server.serve`)."""
        await self.manager.start(connect="background")

    async def settle(
        self,
        servers: Collection[str] | None = None,
        *,
        wait_s: float | None = DISCOVERY_WAIT_S,
        index: bool = True,
    ) -> None:
        """Wait until the named upstreams (default: all) have tried to connect, starting any
        that have not, and (with `index`) the search index is built; what discovery answers
        from. `list_servers` needs no index.

        An upstream still starting after `wait_s` (None: no limit) is left to start: the
        answer then says so, rather than wait out its start-up timeout.
        """
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(wait_s):
                await self.manager.settle(servers)
        if servers is None and index:
            catalog = self.catalog
            await asyncio.wrap_future(catalog.ready())
            if catalog is not self._trimmed:  # a new index: what building it freed goes back
                self._trimmed = catalog
                release_free_memory()

    def _needs_approval(self, server: str, tool: mcp_types.Tool) -> bool:
        return self.config.servers[server].needs_approval(tool)

    def _remember_tools(self, server: str, tools: list[mcp_types.Tool]) -> None:
        self.tool_cache.store_tools(server, self.config.servers[server], tools)
        if len(tools) >= _BIG_LISTING:  # its parse and dump freed a few hundred MB
            release_free_memory()

    async def aclose(self, *, exit_grace_s: float | None = None) -> None:
        """Stop the executor and every upstream, even when cancelled (`exit_grace_s`: see
        `UpstreamManager.aclose`)."""
        closing = asyncio.gather(
            asyncio.to_thread(self.recorder.close),  # what is queued is written
            asyncio.to_thread(flush),  # and exported: a signal stop skips the exit handlers
            self.executor.aclose(),
            self.manager.aclose(exit_grace_s=exit_grace_s),
            return_exceptions=True,
        )
        self._freed.cancel()
        await asyncio.shield(closing)
        for outcome in closing.result():
            if isinstance(outcome, BaseException):
                raise outcome

    @property
    def catalog(self) -> Catalog:
        """The catalog of the tools that are up, rebuilt when an upstream's tool list changes."""
        if self._catalog is None or self._catalog_version != self.manager.tools_version:
            descriptions = {n: s.description for n, s in self.config.servers.items()}
            self._catalog_version = self.manager.tools_version
            servers = self.config.servers
            self._catalog = Catalog(
                self.manager.tools(),
                descriptions,
                servers=list(servers),
                needs_approval=self._needs_approval,
                previous=self._catalog,  # unchanged upstreams keep their index parts
            )
        return self._catalog

    async def execute(
        self,
        code: str,
        input: JSON = None,
        timeout_s: float | None = None,
        *,
        approver: Approver | None = None,
        session: Session | None = None,
        client: str = "",
        kind: RunKind = "execute_code",
        progress: RunProgress | None = None,
        logs: RunLogStream | None = None,
    ) -> ExecutionResult:
        """Run guest code (contract §3 `execute_code`); always answers with a result object.

        The reply is made encodable and bounded here, once, for every executor (§7).
        `approver` asks a person about calls that need approval (§8); without one the
        client is one that cannot ask. In a `session` (`executor.open_session()`) the
        code runs after its earlier snippets, with their variables. The run is recorded
        (contract §10) as `kind`, made by `client`, traced, and told to `progress`; its log
        lines stream to `logs` as they are made.
        """
        started = time.perf_counter()
        trace = self.recorder.trace(kind, code, input, client)
        router = self.router(approver, trace)
        router.owner = client.rpartition(" (token: ")[2] or client  # a token: who it is
        router.observe(self.telemetry.start(kind, code, input, client), progress, logs)
        try:
            limit_s = self.settings.clamp_timeout(timeout_s)
            result, waited = await self._run(code, input, limit_s, session, router)
        except Exception as exc:  # a host-side failure is a result value, never a crash
            logger.exception("execute_code failed on the host side")
            why = f"the gateway could not run the code: {type(exc).__name__}: {exc}"
            result, waited = _failure(router, started, why), []
        except asyncio.CancelledError:  # by its client, or as it went away: kept (attack 138)
            by = _STOPPED if self.stopping else _CANCELLED
            cut = _failure(router, started, f"{by} the run before it ended")
            self.recorder.finish(trace, lambda: cut.model_dump(mode="json"))
            raise
        finally:
            router.close()  # work still in flight for this run is cancelled
        if result.error is not None:  # it may quote an upstream's names: shown to a model
            result.error.message = clean_text(result.error.message)
        redact = self.config if self.config.secrets else None
        notes = router.notes() + waited  # first in logs: an output cut keeps them (137)
        reply = await bounded(result, self.settings.max_output_chars, redact, notes)
        self.recorder.finish(trace, lambda: reply.model_dump(mode="json"))
        router.ended(reply)  # the run's span
        return reply

    async def _run(
        self, code: str, input: JSON, limit_s: float, session: Session | None, router: RunRouter
    ) -> tuple[ExecutionResult, list[str]]:
        """Run `code` once the upstreams it can reach (by name, or any when it is dynamic)
        have tried to connect: the guest's index has their own tool lists, not the cache's.
        With the notes its logs gain from the wait."""
        reached, began = self._servers_reached(code), time.perf_counter()
        with contextlib.suppress(TimeoutError):  # a hung upstream fails the call, in the run
            async with asyncio.timeout(code_time(limit_s)):
                await self.manager.settle(reached)
        waited_s = time.perf_counter() - began
        run = session.run if session is not None else self.executor.run
        parsed = parse_input(input)
        left_s, index = code_time(limit_s, waited_s), self._guest_index()
        result = await run(code, input=parsed, timeout_s=left_s, index=index, router=router)
        return result, waited_before(result, waited_s, limit_s, lambda: self._starting(reached))

    def search_tools(
        self,
        query: str,
        limit: int = 5,
        *,
        server: str | None = None,
        prefer: Collection[str] = (),
    ) -> list[dict[str, Any]]:
        """Ranked hits; only the first `MAX_QUERY_CHARS` characters of `query` are used.

        `prefer`: servers the caller already uses (a run's own calls); they rank a little higher.
        """
        query = query[:MAX_QUERY_CHARS]
        hits = self.catalog.search(query, limit, server=server, prefer=prefer)
        return self.config.redact_rows([hit.to_json() for hit in hits], "description")

    def get_tool_docs(self, server: str, tool: str | None = None, page: int = 1) -> str:
        """Stub docs within a fixed budget, `page` by page for a big server; raises
        UnknownToolError naming the closest names."""
        reason = self.manager.unavailable_reason(server)
        if reason is not None:
            raise UnknownToolError(reason)
        return self.config.redact(self.catalog.docs(server, tool, page=page))

    def list_servers(self) -> list[dict[str, Any]]:
        rows = [status.to_json() for status in self.manager.statuses()]
        return self.config.redact_rows(rows, "description", "error")

    def interpreter(self) -> MCPCodeInterpreter:
        """A dspy `CodeInterpreter` session whose code calls this gateway's tools (see
        `MCPCodeInterpreter.over`); call it from inside the gateway's event loop."""
        from .sandbox.interpreter import MCPCodeInterpreter  # imports dspy: only when asked

        return MCPCodeInterpreter.over(self.router(), self._guest_index(), self.settings)

    def sandbox_info(self) -> dict[str, Any]:
        """The executor and its active isolation layers."""
        layers = self.executor.layers()
        on, off = [k for k, v in layers.items() if v], [k for k, v in layers.items() if not v]
        return {"executor": self.executor.name, "layers": on, "inactive": off}

    def router(self, approver: Approver | None = None, trace: RunTrace | None = None) -> RunRouter:
        """A new run's router: its calls are bounded, approved and recorded there (§7, §8,
        §10: into `trace`)."""
        approvals = RunApprovals(
            mode=self.settings.approval,
            approver=approver,
            timeout_s=self.settings.approval_timeout_s,
            redact=self.config.redact,
        )
        return RunRouter(
            self,
            approvals,
            max_tool_calls=self.settings.max_tool_calls,
            max_concurrent_calls=self.settings.max_concurrent_calls,
            trace=trace,
            redact=self.config if self.config.secrets else None,
        )

    async def call_tool(self, server: str, tool: str, args: dict[str, Any]) -> JSON:
        """One upstream call, by original names, as a run that cannot ask for approval."""
        with contextlib.closing(self.router()) as router:
            return await router.call(server, tool, args)

    async def resolve(self, server: str, tool: str) -> None:
        """Wait until `server` has tried to connect (starting it if need be) and check that
        it lists `tool`, so a call fails early and clearly (ToolCallFailed; see `RunRouter`)."""
        await self.manager.settle([server])
        reason = self.manager.unavailable_reason(server)
        if reason is not None:
            raise ToolCallFailed(server, tool, reason)
        try:
            self.catalog.get(server, tool)
        except UnknownToolError as exc:
            raise ToolCallFailed(server, tool, str(exc)) from None

    async def send(
        self, server: str, tool: str, args: dict[str, Any], *, admit: Admission
    ) -> Reply:
        """Send a call, its arguments as they go (`call_args.bounded_args`). `admit` is
        told whether the tool needs approval, as the connection the call goes over lists
        it, right before it is sent; it raises to refuse the call."""

        async def decide(listed: mcp_types.Tool | None) -> None:
            if listed is None:
                raise ToolCallFailed(
                    server, tool, f"server {server!r} does not list it; the call was not sent"
                )
            await admit(self.config.servers[server].needs_approval(listed))

        try:
            result = await self.manager.call_tool(server, tool, args, admit=decide, encoded=True)
        except ToolCallFailed as exc:  # an upstream's error text, kept by nobody past the run
            raise await explain(exc, lambda: self.catalog.get(server, tool).schema, args) from None
        if (size := text_chars(result)) > _BIG_RESULT_CHARS:  # its parse would stall runs
            self._freed.moved(size, lambda: self.executor.active > 0)
            return Reply(await offloaded(unwrap_result, result), result_text(result))
        return Reply(unwrap_result(result), result_text(result))

    def _servers_reached(self, code: str) -> list[str] | None:
        """The enabled servers `code` names (None: any); see `reach`. Code over the size
        limit reaches none: the policy refuses it, and reading it would cost the loop."""
        if len(code) > self.settings.max_chars:
            return []
        reached = servers_reached(code, list(self.config.servers))
        return None if reached is None else [s for s in reached if s in self.config.enabled]

    def _starting(self, servers: list[str] | None) -> list[str]:
        late = [r.name for r in self.manager.statuses() if r.status == "starting"]
        return late if servers is None else [name for name in late if name in servers]

    def _guest_index(self) -> GuestIndex:
        """The guest index, made again only when the catalog or a server's status changed.

        While every configured server is in the catalog (no server that never answered, none
        disabled), this costs the same whatever the number of servers and tools.
        """
        catalog = self.catalog
        missing = len(self.config.servers) > len(catalog.servers)
        rows = self.manager.statuses() if missing else []
        listed = set(catalog.servers)
        down = [r for r in rows if r.status != "ok" and r.name not in listed]
        source = (self.manager.tools_version, [(r.name, r.status, r.error) for r in down])
        if self._index is not None and self._index[0] == source:
            return self._index[1]
        index = catalog.guest_index()
        for row in down:
            error = row.error or f"server {row.name!r} is {row.status}"
            index.setdefault(
                catalog.server_ids[row.name], {"name": row.name, "tools": {}, "error": error}
            )
        self._index = (source, GuestIndex.of(index))
        return self._index[1]


def _failure(router: RunRouter, started: float, why: str) -> ExecutionResult:
    took, kind = round((time.perf_counter() - started) * 1000, 1), ErrorType.EXECUTOR_ERROR
    return ExecutionResult.failure(kind, why, tool_calls=router.records(), duration_ms=took)
