"""Load `mcp_servers.json` (contract §2) into frozen, validated server entries."""

from __future__ import annotations

import fnmatch
import json
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO

import mcp_types
from dotenv import dotenv_values
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .errors import ConfigError

if TYPE_CHECKING:
    from fastmcp.client.transports import ClientTransport

__all__ = ["GatewayConfig", "ServerConfig", "load_config"]

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


class ServerConfig(BaseModel):
    """One upstream MCP server: stdio (`command`) or HTTP/SSE (`url`)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    command: str | None = None
    args: tuple[str, ...] = ()
    url: str | None = None
    transport: Transport | None = Field(None, validation_alias="type")
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
        if "transport" in data and "type" in data:
            raise _FieldProblem("transport", "give either 'transport' or 'type', not both")
        kind = data.pop("transport", data.pop("type", None))
        if kind is not None:
            if not isinstance(kind, str) or kind.lower() not in _TRANSPORT_ALIASES:
                raise _FieldProblem(
                    "transport",
                    f"unknown transport {kind!r}; use one of stdio, http, streamable-http, sse",
                )
            data["type"] = _TRANSPORT_ALIASES[kind.lower()]
        return data

    @model_validator(mode="after")
    def _resolve_transport(self) -> ServerConfig:
        if self.command is not None and self.url is not None:
            raise _FieldProblem(
                "url", "give either 'command' (stdio) or 'url' (http/sse), not both"
            )
        kind = self.transport
        if kind is None:
            if self.url is not None:
                kind = "sse" if self.url.rstrip("/").endswith("/sse") else "http"
            else:
                kind = "stdio"
            object.__setattr__(self, "transport", kind)
        if kind == "stdio" and not self.command:
            raise _FieldProblem("command", "a stdio server needs a 'command' (and usually 'args')")
        if kind in ("http", "sse") and not self.url:
            raise _FieldProblem("url", f"a {kind} server needs a 'url'")
        return self

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

    def to_transport(self, *, stderr: TextIO | None = None) -> ClientTransport:
        """A fresh fastmcp transport for this entry (one per connection attempt).

        `stderr` (a real file) takes a stdio server's stderr instead of the terminal.
        """
        # fastmcp's client stack is imported when a connection is made, not with the config:
        # a run that reaches no upstream never pays for it.
        from fastmcp.client.transports import SSETransport, StdioTransport, StreamableHttpTransport

        if self.transport == "stdio":
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
        assert self.url is not None
        headers = dict(self.headers) or None
        if self.transport == "sse":
            return SSETransport(self.url, headers=headers)
        return StreamableHttpTransport(self.url, headers=headers)


class GatewayConfig(BaseModel):
    """The whole config file: server entries by name, in file order."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    servers: dict[str, ServerConfig]
    path: Path | None = None
    # `${VAR}` values that went into the entries, as (value, "${VAR}"): see `redact`.
    secrets: tuple[tuple[str, str], ...] = ()

    def redact(self, text: str) -> str:
        """`text` with every value a `${VAR}` expanded to shown as `${VAR}` again."""
        for value, name in self.secrets:
            if value in text:
                text = text.replace(value, name)
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
    servers = {name: _localise(server, base) for name, server in config.servers.items()}
    return GatewayConfig(servers=servers, path=file.resolve(), secrets=secrets)


def _default_variables(file: Path) -> dict[str, str]:
    variables: dict[str, str] = {}
    for dotenv in (Path.cwd() / ".env", file.resolve().parent / ".env"):
        if dotenv.is_file():
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
    server = loc[1] if len(loc) > 1 and loc[0] == "servers" else None
    field = ".".join(loc[2:]) or (loc[0] if len(loc) == 1 else None)
    problem = (first.get("ctx") or {}).get("error")
    if isinstance(problem, _FieldProblem):
        return ConfigError(str(problem), file=file, server=server, field=problem.field)
    message = first["msg"]
    if first["type"] == "extra_forbidden":
        message = "unknown key; allowed keys are " + ", ".join(
            sorted(ServerConfig.model_fields.keys() - {"transport"} | {"transport", "type"})
        )
    return ConfigError(message, file=file, server=server, field=field)


def _localise(server: ServerConfig, base: Path) -> ServerConfig:
    """Resolve `python` to this interpreter and the stdio `cwd` against the config folder."""
    if server.transport != "stdio":
        return server
    command = sys.executable if server.command in ("python", "python3") else server.command
    cwd = base / server.cwd if server.cwd else base
    return server.model_copy(update={"command": command, "cwd": str(cwd)})
