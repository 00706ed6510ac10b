"""Server entries of the config file (contract §2): one frozen model per transport kind.

`ServerConfig` validates one entry as a `StdioServer`, `HttpServer` or `SseServer`, picked
once from `transport` (alias `type`) or from `command` / `url`; each kind says how to reach
its server (`to_transport()`), what identifies it for the tool cache (`identity()`), and
where a person finds it (`where()`). `config.load_config` reads the file they are in.
"""

from __future__ import annotations

import fnmatch
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Self, TextIO

import mcp_types
from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, model_validator

if TYPE_CHECKING:
    from fastmcp.client.transports import ClientTransport

__all__ = [
    "ENTRY_KEYS",
    "TRANSPORTS",
    "FieldProblem",
    "HttpServer",
    "ServerConfig",
    "SseServer",
    "StdioServer",
]

Transport = Literal["stdio", "http", "sse"]
_TRANSPORT_ALIASES: dict[str, Transport] = {
    "stdio": "stdio",
    "http": "http",
    "streamable-http": "http",
    "streamable_http": "http",
    "streamablehttp": "http",
    "sse": "sse",
}
TRANSPORTS = frozenset(_TRANSPORT_ALIASES.values())
"""The transport kinds, as `ServerConfig`'s union tags them."""


class FieldProblem(ValueError):
    """A cross-field check failed; carries the field to name in the ConfigError."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(message)


class _ServerEntry(BaseModel):
    """What every server entry may hold (contract §2); a subclass per transport kind adds
    how it connects. `ServerConfig` picks the subclass once, at validation: nothing else
    switches on the transport kind."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    command: str | None = None
    args: tuple[str, ...] = ()
    url: str | None = None
    transport: Transport
    description: str = ""
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    timeout_s: float | None = Field(None, gt=0)
    enabled: bool = True
    allow_tools: tuple[str, ...] = ()
    deny_tools: tuple[str, ...] = ()
    approve_tools: tuple[str, ...] | None = None  # None: the key is absent (annotations decide)

    @model_validator(mode="before")
    @classmethod
    def _normalise(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        kind = _kind(data)
        data.pop("type", None)
        data["transport"] = kind
        if data.get("command") is not None and data.get("url") is not None:
            raise FieldProblem("url", "give either 'command' (stdio) or 'url' (http/sse), not both")
        return data

    def needs_approval(self, tool: mcp_types.Tool) -> bool:
        """Whether a call to `tool` needs a person's approval (contract §8).

        The entry's `approve_tools` globs when it has the key; otherwise the tool's own
        annotations: `destructiveHint: true` and not `readOnlyHint: true`.
        """
        if self.approve_tools is not None:
            return any(fnmatch.fnmatchcase(tool.name, p) for p in self.approve_tools)
        hints = tool.annotations
        return bool(hints and hints.destructive_hint is True and hints.read_only_hint is not True)

    def exposes(self, tool: str) -> bool:
        """Whether `allow_tools` / `deny_tools` let this tool through."""
        if self.allow_tools and not any(fnmatch.fnmatchcase(tool, p) for p in self.allow_tools):
            return False
        return not any(fnmatch.fnmatchcase(tool, p) for p in self.deny_tools)

    def identity(self) -> dict[str, Any]:
        """What starts this server and where it is: its tool-cache key is a hash of it."""
        raise NotImplementedError

    def where(self) -> str:
        """`command: ...` or `url: ...`: what a person needs to find it."""
        raise NotImplementedError

    def to_transport(
        self,
        *,
        stderr: TextIO | None = None,
        http_client_factory: Callable[..., Any] | None = None,
    ) -> ClientTransport:
        """A fresh fastmcp transport for this entry (one per connection attempt).

        `stderr` (a real file) takes a stdio server's stderr instead of the terminal;
        `http_client_factory` makes a streamable HTTP server's httpx clients. A kind
        ignores what it has no use for.
        """
        raise NotImplementedError

    def localised(self, base: Path) -> Self:
        """This entry with paths resolved against the config file's folder `base`."""
        return self


class StdioServer(_ServerEntry):
    """A server started as a child process, spoken to over its stdin and stdout."""

    transport: Literal["stdio"] = "stdio"
    has_stderr: ClassVar[bool] = True

    @model_validator(mode="after")
    def _needs_command(self) -> StdioServer:
        if not self.command:
            raise FieldProblem("command", "a stdio server needs a 'command' (and usually 'args')")
        return self

    def identity(self) -> dict[str, Any]:
        return {
            "transport": self.transport,
            "command": self.command,
            "args": list(self.args),
            "env": self.env,
            "cwd": self.cwd,
        }

    def where(self) -> str:
        return "command: " + shlex.join([self.command or "", *self.args])

    def to_transport(
        self,
        *,
        stderr: TextIO | None = None,
        http_client_factory: Callable[..., Any] | None = None,
    ) -> ClientTransport:
        # fastmcp's client stack is imported when a connection is made, not with the config:
        # a run that reaches no upstream never pays for it.
        from fastmcp.client.transports import StdioTransport

        assert self.command is not None  # checked by the validator
        return StdioTransport(
            command=self.command,
            args=list(self.args),
            # mcp's stdio_client merges this over its minimal default environment.
            env={"PYTHONUNBUFFERED": "1", **self.env},
            cwd=self.cwd,
            keep_alive=False,
            log_file=stderr,
        )

    def localised(self, base: Path) -> Self:
        """`python` becomes this interpreter; `cwd` is resolved against `base`."""
        command = sys.executable if self.command in ("python", "python3") else self.command
        cwd = base / self.cwd if self.cwd else base
        return self.model_copy(update={"command": command, "cwd": str(cwd)})


class _UrlServer(_ServerEntry):
    has_stderr: ClassVar[bool] = False

    @model_validator(mode="after")
    def _needs_url(self) -> _UrlServer:
        if not self.url:
            raise FieldProblem("url", f"a {self.transport} server needs a 'url'")
        return self

    def identity(self) -> dict[str, Any]:
        return {"transport": self.transport, "url": self.url, "headers": self.headers}

    def where(self) -> str:
        return f"url: {self.url}"


class HttpServer(_UrlServer):
    """A server reached over streamable HTTP."""

    transport: Literal["http"] = "http"

    def to_transport(
        self,
        *,
        stderr: TextIO | None = None,
        http_client_factory: Callable[..., Any] | None = None,
    ) -> ClientTransport:
        from fastmcp.client.transports import StreamableHttpTransport

        assert self.url is not None
        return StreamableHttpTransport(
            self.url,
            headers=dict(self.headers) or None,
            httpx_client_factory=http_client_factory,
        )


class SseServer(_UrlServer):
    """A server reached over the older HTTP+SSE transport."""

    transport: Literal["sse"] = "sse"

    def to_transport(
        self,
        *,
        stderr: TextIO | None = None,
        http_client_factory: Callable[..., Any] | None = None,
    ) -> ClientTransport:
        from fastmcp.client.transports import SSETransport

        assert self.url is not None
        return SSETransport(self.url, headers=dict(self.headers) or None)


def _tag(data: Any) -> str:
    """Which model validates an entry. A kind that is wrong goes to `StdioServer`, whose
    validator then names the problem (a discriminator cannot say what is wrong)."""
    if not isinstance(data, dict):
        return str(getattr(data, "transport", "stdio"))
    try:
        return _kind(data)
    except FieldProblem:
        return "stdio"


def _kind(data: dict[str, Any]) -> Transport:
    """The transport kind of a raw entry: `transport` (alias `type`); else from `command` /
    `url`, SSE when the URL ends in `/sse`."""
    if "transport" in data and "type" in data:
        raise FieldProblem("transport", "give either 'transport' or 'type', not both")
    kind = data.get("transport", data.get("type"))
    if kind is not None:
        if not isinstance(kind, str) or kind.lower() not in _TRANSPORT_ALIASES:
            raise FieldProblem(
                "transport",
                f"unknown transport {kind!r}; use one of stdio, http, streamable-http, sse",
            )
        return _TRANSPORT_ALIASES[kind.lower()]
    url = data.get("url")
    if isinstance(url, str) and data.get("command") is None:
        return "sse" if url.rstrip("/").endswith("/sse") else "http"
    return "stdio"


ServerConfig = Annotated[
    Annotated[StdioServer, Tag("stdio")]
    | Annotated[HttpServer, Tag("http")]
    | Annotated[SseServer, Tag("sse")],
    Discriminator(_tag),
]
"""One server entry: a `StdioServer`, `HttpServer` or `SseServer`."""

ENTRY_KEYS = frozenset(_ServerEntry.model_fields) | {"type"}
"""The keys a server entry may hold."""
