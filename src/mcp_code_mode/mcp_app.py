"""The FastMCP app: `execute_code`, `search_tools`, `get_tool_docs`, `list_servers`.

`build_server(gateway)` returns a FastMCP app whose tools are thin adapters over a
started `Gateway`. The tools/list it serves stays small whatever the upstream
catalog holds: no per-tool schemas, servers by name and short description only.

Its own module because importing fastmcp's server takes most of a second: `serve`
(in `executor_server`) imports it while the sandbox starts.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import mcp_types
from fastmcp import Context, FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.exceptions import ValidationError as ArgumentsInvalid
from fastmcp.tools.base import ToolResult
from fastmcp.tools.function_tool import FunctionTool
from pydantic import ValidationError

from . import __version__
from .answer_routing import state_security
from .approval import Approver
from .elicitation import Elicitation
from .encodable import make_encodable
from .errors import CodeModeError, ErrorType
from .gateway import Gateway
from .reach import starting_note
from .runs.progress import RunProgress
from .runs.telemetry import configure_from_env
from .sandbox.base import ExecutionResult
from .sandbox.child import guest_api
from .sandbox.reply import fitted
from .tool_formatter import load_tokenizer, one_line

if TYPE_CHECKING:
    from . import agent

__all__ = ["build_server", "instructions"]

_MAX_LISTED_SERVERS = 12
_SERVERS_LINE_CHARS = 200  # tools/list tokens are paid on every turn: keep this line bounded
_EXECUTE_CODE_DOC = (
    "Run Python against upstream MCP tools; filter in code, return what matters (last "
    f"expression = result). Has {guest_api.execute_code_summary()}, input, ToolError."
)


class _LeanTool(FunctionTool):
    """A FunctionTool without fastmcp's title and `_meta`: tools/list tokens cost every turn."""

    def to_mcp_tool(self, **overrides: Any) -> mcp_types.Tool:
        tool = super().to_mcp_tool(**overrides)
        schema = _lean_schema(tool.input_schema)
        return tool.model_copy(update={"title": None, "meta": None, "input_schema": schema})

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        """Arguments of the wrong type get a plain message naming the argument; for
        `execute_code`, as a §3 result object (contract §7), not pydantic's text."""
        try:
            return await super().run(arguments)
        except ArgumentsInvalid as exc:
            cause = exc.__cause__
            problems = (
                "; ".join(
                    f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}"
                    for e in cause.errors()
                )
                if isinstance(cause, ValidationError)
                else str(exc)
            )
            message = f"invalid arguments for {self.name}: {problems}"
            if self.name == "execute_code":
                failure = ExecutionResult.failure(ErrorType.EXECUTOR_ERROR, message)
                return _json_result(failure.to_json(), is_error=True)
            raise ToolError(message) from None


def _lean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop what a client does not need to call the tool (titles, additionalProperties)."""
    properties = {
        name: _lean_property(prop) for name, prop in (schema.get("properties") or {}).items()
    }
    lean = {k: v for k, v in schema.items() if k not in ("additionalProperties", "title")}
    return {**lean, "properties": properties}


def _json_result(value: Any, *, is_error: bool = False) -> ToolResult:
    """One text block with `json.dumps(value)` (a string as itself); objects also as
    structured content. Text that UTF-8 cannot encode is sent as U+FFFD (contract §7)."""
    value = make_encodable(value)
    body = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = mcp_types.TextContent(type="text", text=body)
    structured = value if isinstance(value, dict) else None
    return ToolResult(content=[text], structured_content=structured, is_error=is_error)


def _servers_line(gateway: Gateway) -> str:
    """`Servers: a (desc), b (desc).`: descriptions share a fixed character budget."""
    rows = gateway.list_servers()
    listed = rows[:_MAX_LISTED_SERVERS]
    shown = []
    for row in listed:
        room = _SERVERS_LINE_CHARS // len(listed) - len(row["name"]) - 3
        description = _clip_words(one_line(row["description"]), room)
        shown.append(f"{row['name']} ({description})" if description else row["name"])
    more = len(rows) - len(shown)
    return "Servers: " + ", ".join(shown) + (f", +{more} more (list_servers())" if more else ".")


def _clip_words(text: str, limit: int) -> str:
    """The longest run of whole words of `text` within `limit` characters."""
    if len(text) <= limit:
        return text
    return text[: max(limit, 0) + 1].rsplit(" ", 1)[0].rstrip(" ,;:.-") if limit > 0 else ""


def instructions(gateway: Gateway) -> str:
    """The server's `instructions`: what it is, the servers, the active isolation layers."""
    info = gateway.sandbox_info()
    return (
        "mcp-code-mode: call the upstream MCP tools by running Python with execute_code. "
        "Discover tools with search_tools / get_tool_docs. "
        + _servers_line(gateway)
        + f" Sandbox: {info['executor']} executor; active layers: {', '.join(info['layers'])}."
    )


def _new_server(gateway: Gateway) -> FastMCP:
    """The app, its questions' states sealed alike by every instance sharing the key."""
    settings = gateway.settings
    key = settings.http_state_key
    secret = None if key is None else key.get_secret_value()
    security = state_security(secret, settings.approval_timeout_s)
    return FastMCP(
        "mcp-code-mode",
        instructions=instructions(gateway),
        version=__version__,
        request_state_security=security,
    )


def build_server(gateway: Gateway, *, lm: Any = None, origin: str = "") -> FastMCP:
    """A FastMCP app over a started gateway (the caller owns the gateway's lifecycle).

    `run_task` is registered only with an LM (`agent.make_lm(settings)` or any dspy LM).
    `origin` is the instance's URL over HTTP, named in the questions it asks (§8, §9).
    The OpenTelemetry SDK is set up here when the OTEL_* variables ask for traces.
    """
    configure_from_env()  # before the app exists: fastmcp's request spans go there too
    server = _new_server(gateway)
    asking = Elicitation(gateway, origin)

    async def execute_code(
        code: str,
        input: Any = None,
        timeout_s: float | None = None,
        ctx: Context | None = None,
    ) -> ToolResult | mcp_types.InputRequiredResult:
        # Approval: a 2026-07-28 client gets `input_required` and calls again (§8).
        result = await asking.execute(ctx, code, input, timeout_s)
        if isinstance(result, mcp_types.InputRequiredResult):
            return result
        if ctx is None or ctx.transport != "stdio":  # HTTP escapes non-ASCII: it may grow
            result = await fitted(result, gateway.settings.max_output_chars)
        return _json_result(result.to_json(), is_error=not result.ok)

    # Discovery answers about every upstream: it waits for those still connecting.
    async def search_tools(query: str, limit: int = 5, ctx: Context | None = None) -> ToolResult:
        await gateway.settle()
        result = _json_result(_or_tool_error(lambda: gateway.search_tools(query, limit)))
        note = starting_note(gateway.list_servers())
        if note is not None and ctx is not None:  # a log message: the reply is one JSON
            await ctx.warning(note, logger_name="mcp-code-mode")  # block (contract §3; 140)
        return result

    async def get_tool_docs(server: str, tool: str | None = None, page: int = 1) -> ToolResult:
        await gateway.settle([server])
        await asyncio.to_thread(load_tokenizer)  # once a process, 0.3-0.6 s: off the loop
        return _json_result(_or_tool_error(lambda: gateway.get_tool_docs(server, tool, page)))

    async def list_servers() -> ToolResult:
        await gateway.settle(index=False)
        return _json_result(gateway.list_servers())

    _add(server, execute_code, _EXECUTE_CODE_DOC + "\n" + _servers_line(gateway))
    _add(server, search_tools, "Search upstream tools; returns call signatures.")
    _add(server, get_tool_docs, "Python stub docs of an upstream tool or server (paged).")
    _add(server, list_servers, "Upstream servers and their status.")
    if lm is not None:
        _add_run_task(server, asking, lm)
    return server


def _add_run_task(server: FastMCP, asking: Elicitation, lm: Any) -> None:
    """Register `run_task`: the code agent, over the gateway, thinking with `lm`; its runs'
    approval questions go to the client as `execute_code`'s do (contract §8)."""
    from . import agent  # dspy is imported only when the agent is in use

    gateway = asking.gateway

    async def run_task(task: str, ctx: Context) -> ToolResult | mcp_types.InputRequiredResult:
        total = gateway.settings.dspy_max_steps

        def start(
            approver: Approver | None, progress: RunProgress | None, _logs: object
        ) -> Awaitable[dict[str, Any]]:
            async def on_step(number: int, step: agent.Step) -> None:
                state = "ok" if step.ok else (step.error or {}).get("type", "error")
                if progress is not None:
                    progress.report(number, total, f"step {number}: {state}")

            return agent.run_task(gateway, lm, task, on_step, approver=approver)

        try:
            result = await asking.serve(ctx, "run_task", start)
        except Exception as exc:  # LM/provider failures reach the client as a clear tool error
            raise ToolError(f"run_task failed: {type(exc).__name__}: {exc}") from None
        if isinstance(result, ExecutionResult):  # an answer to work that has ended
            raise ToolError(f"run_task failed: {result.error.message if result.error else ''}")
        if isinstance(result, mcp_types.InputRequiredResult):
            return result
        return _json_result(result)

    _add(server, run_task, "Have the code agent solve a task in natural language.")


def _add(server: FastMCP, fn: Callable[..., Any], description: str) -> None:
    server.add_tool(_LeanTool.from_function(fn, description=description, output_schema=None))


def _lean_property(prop: dict[str, Any]) -> dict[str, Any]:
    # `X | None = None` is published as `{"type": [X, "null"]}`, shorter than its anyOf.
    lean = {k: v for k, v in prop.items() if k != "title" and not (k == "default" and v is None)}
    options = lean.get("anyOf")
    if isinstance(options, list) and len(options) == 2 and {"type": "null"} in options:
        other = next(o for o in options if o != {"type": "null"})
        if isinstance(other.get("type"), str):
            lean.pop("anyOf")
            lean.update(other, type=[other["type"], "null"])
    return lean


def _or_tool_error(produce: Callable[[], Any]) -> Any:
    try:
        return produce()
    except CodeModeError as exc:
        raise ToolError(str(exc)) from None
