"""Load `mcp_servers.json` (contract §2) into frozen, validated server entries."""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shlex
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Self, TextIO

import mcp_types
from dotenv import dotenv_values
from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    model_validator,
)

from .errors import ConfigError
from .settings import env_files

if TYPE_CHECKING:
    from fastmcp.client.transports import ClientTransport

__all__ = [
    "GatewayConfig",
    "HttpServer",
    "ServerConfig",
    "SseServer",
    "StdioServer",
    "load_config",
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
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class _FieldProblem(ValueError):
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
            raise _FieldProblem(
                "url", "give either 'command' (stdio) or 'url' (http/sse), not both"
            )
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
            raise _FieldProblem("command", "a stdio server needs a 'command' (and usually 'args')")
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
            raise _FieldProblem("url", f"a {self.transport} server needs a 'url'")
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
    except _FieldProblem:
        return "stdio"


def _kind(data: dict[str, Any]) -> Transport:
    """The transport kind of a raw entry: `transport` (alias `type`); else from `command` /
    `url`, SSE when the URL ends in `/sse`."""
    if "transport" in data and "type" in data:
        raise _FieldProblem("transport", "give either 'transport' or 'type', not both")
    kind = data.get("transport", data.get("type"))
    if kind is not None:
        if not isinstance(kind, str) or kind.lower() not in _TRANSPORT_ALIASES:
            raise _FieldProblem(
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
_KINDS = frozenset(_TRANSPORT_ALIASES.values())


def _spellings(value: str) -> list[str]:
    """`value`, then how JSON (either `ensure_ascii`) and `repr` write it inside quotes."""
    forms = [value]
    for form in (
        json.dumps(value)[1:-1],
        json.dumps(value, ensure_ascii=False)[1:-1],
        repr(value)[1:-1],
    ):
        if form not in forms:
            forms.append(form)
    return forms


class GatewayConfig(BaseModel):
    """The whole config file: server entries by name, in file order."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    servers: dict[str, ServerConfig]
    path: Path | None = None
    # `${VAR}` values that went into the entries, as (value, "${VAR}"): see `redact`.
    secrets: tuple[tuple[str, str], ...] = ()

    def redact(self, text: str) -> str:
        """`text` with every value a `${VAR}` expanded to shown as `${VAR}` again, also as
        JSON and Python spell it inside a string (a value with `"`, `\\` or non-ASCII
        characters is written escaped in a JSON result or a repr)."""
        for value, name in self.secrets:
            for form in _spellings(value):
                if form in text:
                    text = text.replace(form, name)
        return text

    @model_validator(mode="before")
    @classmethod
    def _accept_both_shapes(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            raise _FieldProblem("servers", "the file must hold a JSON object")
        if "servers" in data and "mcpServers" in data:
            raise _FieldProblem("servers", "give either 'servers' or 'mcpServers', not both")
        if "mcpServers" in data:
            data = {**data, "servers": data["mcpServers"]}
            del data["mcpServers"]
        if "servers" not in data:
            raise _FieldProblem("servers", "expected a 'servers' (or 'mcpServers') object")
        return data

    @property
    def enabled(self) -> dict[str, ServerConfig]:
        """The entries with `enabled: true`."""
        return {name: s for name, s in self.servers.items() if s.enabled}


def load_config(
    path: str | os.PathLike[str], *, env: Mapping[str, str] | None = None
) -> GatewayConfig:
    """Read, interpolate and validate a config file.

    Args:
        path: the JSON file.
        env: variables for `${VAR}`; defaults to the process environment over `.env`
            files (next to the config, then in the working directory).

    Raises:
        ConfigError: naming the file, the server and the field that is wrong.
    """
    file = Path(path).expanduser()
    shown = str(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(
            "file not found; create it or pass --config / MCP_SERVERS_CONFIG", file=shown
        ) from None
    except OSError as exc:
        raise ConfigError(f"cannot read file: {exc.strerror}", file=shown) from None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}", file=shown
        ) from None
    variables = dict(env) if env is not None else _default_variables(file)
    used: dict[str, str] = {}
    raw = _interpolate(raw, variables, shown, (), used)
    # Longest first, so a value that holds another is shown whole as its own name.
    secrets = tuple(
        sorted(((v, f"${{{k}}}") for k, v in used.items() if len(v) >= 4), key=lambda p: -len(p[0]))
    )
    try:
        config = GatewayConfig.model_validate(raw)
    except ValidationError as exc:
        problem = _to_config_error(exc, shown)
        redacted = GatewayConfig(servers={}, secrets=secrets).redact(problem.problem)
        raise ConfigError(
            redacted, file=problem.file, server=problem.server, field=problem.field
        ) from None
    base = file.resolve().parent
    servers = {name: server.localised(base) for name, server in config.servers.items()}
    return GatewayConfig(servers=servers, path=file.resolve(), secrets=secrets)


def _default_variables(file: Path) -> dict[str, str]:
    variables: dict[str, str] = {}
    for dotenv in reversed(env_files(file)):  # the first file wins: updated last
        variables.update({k: v for k, v in dotenv_values(dotenv).items() if v is not None})
    variables.update(os.environ)
    return variables


def _interpolate(
    value: Any,
    variables: Mapping[str, str],
    file: str,
    loc: tuple[str, ...],
    used: dict[str, str],
) -> Any:
    if isinstance(value, str):

        def replace(match: re.Match[str]) -> str:
            name, default = match.group(1), match.group(2)
            if default is not None:  # `${VAR:-x}`: x when VAR is unset or empty, as in a shell
                if variables.get(name):
                    used[name] = variables[name]
                return variables.get(name) or default
            if name in variables:
                used[name] = variables[name]
                return variables[name]
            server = loc[1] if len(loc) > 1 else None
            raise ConfigError(
                f"${{{name}}} is not defined; set it in the environment or in .env",
                file=file,
                server=server,
                field=".".join(loc[2:]) or None,
            )

        return _VAR.sub(replace, value)
    if isinstance(value, dict):
        return {k: _interpolate(v, variables, file, (*loc, str(k)), used) for k, v in value.items()}
    if isinstance(value, list):
        return [_interpolate(v, variables, file, loc, used) for v in value]
    return value


def _to_config_error(exc: ValidationError, file: str) -> ConfigError:
    first = exc.errors()[0]
    loc = [str(part) for part in first["loc"]]
    if len(loc) > 2 and loc[0] == "servers" and loc[2] in _KINDS:
        del loc[2]  # the union's tag: which model validated the entry
    server = loc[1] if len(loc) > 1 and loc[0] == "servers" else None
    field = ".".join(loc[2:]) or (loc[0] if len(loc) == 1 else None)
    problem = (first.get("ctx") or {}).get("error")
    if isinstance(problem, _FieldProblem):
        return ConfigError(str(problem), file=file, server=server, field=problem.field)
    message = first["msg"]
    if first["type"] == "extra_forbidden":
        message = "unknown key; allowed keys are " + ", ".join(
            sorted(_ServerEntry.model_fields.keys() | {"type"})
        )
    return ConfigError(message, file=file, server=server, field=field)
