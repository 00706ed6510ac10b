"""Settings from the environment and `.env` (contract §5)."""

from __future__ import annotations

import contextlib
import difflib
import os
from pathlib import Path
from typing import Any, Literal

from dotenv import dotenv_values
from pydantic import AliasChoices, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from .errors import ConfigError

__all__ = [
    "CONFIG_VARIABLE",
    "DEFAULT_ALLOWED_IMPORTS",
    "ExecutorName",
    "Settings",
    "cache_root",
    "config_from_env",
    "env_files",
    "lm_call_limit_s",
    "unknown_settings",
]

ExecutorName = Literal["local", "pyodide"]
"""MCP_EXECUTOR's values: the keys of `sandbox.launchers.LAUNCHERS`."""

DEFAULT_ALLOWED_IMPORTS: tuple[str, ...] = (
    "json",
    "math",
    "re",
    "datetime",
    "collections",
    "itertools",
    "functools",
    "statistics",
    "random",
    "string",
    "textwrap",
    "decimal",
    "fractions",
    "typing",
    "dataclasses",
    "enum",
    "uuid",
    "hashlib",
    "base64",
    "asyncio",
)


def cache_root(base: str | None = None) -> Path:
    """`<base>/mcp-code-mode`; base: MCP_CODE_CACHE_DIR, else XDG_CACHE_HOME, else ~/.cache.

    Made if need be, and this user's alone (0700): its runs, logs and caches hold code,
    arguments, results and what upstreams print (runs and logs were readable by every
    local user; attack 136). A folder that cannot be made is left to its users to report.
    """
    base = base or os.environ.get("MCP_CODE_CACHE_DIR") or os.environ.get("XDG_CACHE_HOME")
    root = Path(base or Path.home() / ".cache").expanduser() / "mcp-code-mode"
    with contextlib.suppress(OSError):
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        if root.stat().st_uid == os.geteuid() and root.stat().st_mode & 0o077:
            root.chmod(0o700)
    return root


def env_files(config_path: str | Path) -> list[Path]:
    """The `.env` files settings and `${VAR}`s are read from, first wins: the one beside the
    config file, then the working directory's (those that exist, each once)."""
    candidates = [Path(config_path).expanduser().resolve().parent / ".env", Path.cwd() / ".env"]
    found: list[Path] = []
    for path in candidates:
        if path.is_file() and all(not path.samefile(other) for other in found):
            found.append(path)
    return found


def config_from_env() -> str:
    """The config file when none is given on the command line: MCP_SERVERS_CONFIG from the
    environment, else from the working directory's `.env`, else `mcp_servers.json`. (The
    `.env` beside a config cannot name the config: it is found through it.)"""
    named = os.environ.get(CONFIG_VARIABLE) or dotenv_values(Path.cwd() / ".env").get(
        CONFIG_VARIABLE
    )
    return named or "mcp_servers.json"


CONFIG_VARIABLE = "MCP_SERVERS_CONFIG"


def _env(name: str) -> AliasChoices:
    # The environment name, and the field name so tests and callers can pass keywords.
    return AliasChoices(name, name.lower())


class Settings(BaseSettings):
    """Every knob of the gateway; read once at start and frozen."""

    # A variable set to "" (e.g. `MCP_CODE_MAX_TOOL_CALLS=` in .env) keeps its default.
    model_config = SettingsConfigDict(
        env_file=".env",
        extra="ignore",
        frozen=True,
        populate_by_name=True,
        env_ignore_empty=True,
        allow_inf_nan=False,  # `inf` as a time limit: a drain that never ended (attack 146)
    )

    executor: ExecutorName = Field("local", validation_alias=_env("MCP_EXECUTOR"))
    timeout_s: float = Field(30.0, gt=0, validation_alias=_env("MCP_CODE_TIMEOUT_S"))
    max_timeout_s: float = Field(300.0, gt=0, validation_alias=_env("MCP_CODE_MAX_TIMEOUT_S"))
    memory_mb: int = Field(256, gt=0, validation_alias=_env("MCP_CODE_MEMORY_MB"))
    startup_timeout_s: float = Field(
        60.0, gt=0, validation_alias=_env("MCP_CODE_STARTUP_TIMEOUT_S")
    )
    max_concurrent_starts: int | None = Field(
        None, gt=0, validation_alias=_env("MCP_CODE_MAX_CONCURRENT_STARTS")
    )  # upstreams starting at once; None: four times the CPU count, at least 8
    max_tool_calls: int = Field(1000, ge=0, validation_alias=_env("MCP_CODE_MAX_TOOL_CALLS"))
    max_concurrent_calls: int = Field(
        16, gt=0, validation_alias=_env("MCP_CODE_MAX_CONCURRENT_CALLS")
    )
    max_upstream_calls: int = Field(
        16, gt=0, validation_alias=_env("MCP_CODE_MAX_UPSTREAM_CALLS")
    )  # in flight to one upstream, all runs together; waiting runs take turns
    max_call_bytes: int = Field(1_000_000, gt=0, validation_alias=_env("MCP_CODE_MAX_CALL_BYTES"))
    max_result_bytes: int = Field(
        10_000_000, gt=0, validation_alias=_env("MCP_CODE_MAX_RESULT_BYTES")
    )  # of one upstream reply; a bigger one fails its call (TOOL_ERROR)
    approval: Literal["auto", "required", "off"] = Field(
        "auto", validation_alias=_env("MCP_CODE_APPROVAL")
    )
    approval_timeout_s: float = Field(
        120.0, gt=0, validation_alias=_env("MCP_CODE_APPROVAL_TIMEOUT_S")
    )
    max_output_chars: int = Field(100_000, gt=0, validation_alias=_env("MCP_CODE_MAX_OUTPUT_CHARS"))
    pool_size: int = Field(2, ge=0, validation_alias=_env("MCP_CODE_POOL_SIZE"))
    max_chars: int = Field(8000, gt=0, validation_alias=_env("MCP_CODE_MAX_CHARS"))
    max_lines: int = Field(400, gt=0, validation_alias=_env("MCP_CODE_MAX_LINES"))
    extra_imports: str = Field("", validation_alias=_env("MCP_CODE_ALLOWED_IMPORTS"))
    wheelhouse: str | None = Field(None, validation_alias=_env("MCP_CODE_WHEELHOUSE"))
    cache_dir: str | None = Field(None, validation_alias=_env("MCP_CODE_CACHE_DIR"))
    servers_config: str = Field("mcp_servers.json", validation_alias=_env("MCP_SERVERS_CONFIG"))
    runs: Literal["on", "off"] = Field("on", validation_alias=_env("MCP_CODE_RUNS"))
    runs_db: str | None = Field(None, validation_alias=_env("MCP_CODE_RUNS_DB"))
    runs_keep: int = Field(10_000, ge=0, validation_alias=_env("MCP_CODE_RUNS_KEEP"))
    runs_arguments: Literal["off", "clipped", "full"] = Field(
        "clipped", validation_alias=_env("MCP_CODE_RUNS_ARGUMENTS")
    )
    # Code, input and call arguments in OpenTelemetry spans (redacted, clipped); off: never.
    otel_content: Literal["off", "on"] = Field(
        "off", validation_alias=_env("MCP_CODE_OTEL_CONTENT")
    )
    # Serving over HTTP (contract §9); the lists are comma-separated, empty = loopback names only.
    http_token: SecretStr | None = Field(None, validation_alias=_env("MCP_CODE_HTTP_TOKEN"))
    http_allowed_hosts: str = Field("", validation_alias=_env("MCP_CODE_HTTP_ALLOWED_HOSTS"))
    http_allowed_origins: str = Field("", validation_alias=_env("MCP_CODE_HTTP_ALLOWED_ORIGINS"))
    http_stateless: bool = Field(False, validation_alias=_env("MCP_CODE_HTTP_STATELESS"))
    # A secret the instances share and clients never see (32+ characters): question states
    # are sealed under it, so an approval answer reaching another instance is handed on.
    http_state_key: SecretStr | None = Field(
        None, min_length=32, validation_alias=_env("MCP_CODE_HTTP_STATE_KEY")
    )
    # This instance's /mcp URL as the others reach it ("": the address `serve` bound), named
    # in the questions it asks so an answer reaching another instance comes back here.
    http_instance_url: str = Field(
        "", pattern=r"^(https?://\S+)?$", validation_alias=_env("MCP_CODE_HTTP_INSTANCE_URL")
    )
    # Requests carrying work one instance holds at once (each up to 4 MB); beyond: 503.
    http_max_requests: int = Field(32, ge=1, validation_alias=_env("MCP_CODE_HTTP_MAX_REQUESTS"))
    # What the bodies of all requests in flight may take as parsed objects; beyond: 503.
    http_max_held_mb: int = Field(1024, ge=1, validation_alias=_env("MCP_CODE_HTTP_MAX_HELD_MB"))
    dspy_lm: str | None = Field(None, validation_alias=_env("DSPY_LM"))
    dspy_api_base: str | None = Field(None, validation_alias=_env("DSPY_API_BASE"))
    dspy_max_steps: int = Field(8, gt=0, validation_alias=_env("DSPY_MAX_STEPS"))
    dspy_temperature: float = Field(0.0, ge=0, validation_alias=_env("DSPY_TEMPERATURE"))
    dspy_max_tokens: int = Field(4000, gt=0, validation_alias=_env("DSPY_MAX_TOKENS"))
    # The agent against local models: how replies are formatted and read, how long one model
    # call may take and how often it is retried, and how much of the prompt the tool stubs take.
    dspy_adapter: Literal["chat", "json"] = Field("chat", validation_alias=_env("DSPY_ADAPTER"))
    dspy_timeout_s: float = Field(120.0, gt=0, validation_alias=_env("DSPY_TIMEOUT_S"))
    dspy_num_retries: int = Field(2, ge=0, validation_alias=_env("DSPY_NUM_RETRIES"))
    dspy_tool_context_tokens: int = Field(
        3000, gt=0, validation_alias=_env("DSPY_TOOL_CONTEXT_TOKENS")
    )
    dspy_trajectory_tokens: int = Field(4000, gt=0, validation_alias=_env("DSPY_TRAJECTORY_TOKENS"))

    @classmethod
    def load(cls, config_path: str | Path | None = None) -> Settings:
        """Settings from the environment, then the `.env` beside the config file (`config_path`,
        else MCP_SERVERS_CONFIG), then the working directory's `.env`: the first that sets a
        value wins. A desktop client starts the server from `/` with `--config`, so the `.env`
        beside the config is where its settings are. A bad value is a ConfigError naming it."""
        try:
            path = str(config_path) if config_path else config_from_env()
            return cls(_env_file=tuple(reversed(env_files(path))), servers_config=path)
        except ValidationError as exc:
            problems = [
                f"{'.'.join(map(str, e['loc']))}={_shown_input(e)}: {e['msg']}"
                for e in exc.errors()
            ]
            message = "invalid setting (environment or .env): " + "; ".join(problems)
            raise ConfigError(message) from None

    @field_validator(
        "dspy_lm",
        "dspy_api_base",
        "wheelhouse",
        "cache_dir",
        "http_token",
        "http_state_key",
        "runs_db",
        mode="before",
    )
    @classmethod
    def _blank_is_unset(cls, value: object) -> object:
        return None if value == "" else value

    @property
    def allowed_imports(self) -> tuple[str, ...]:
        """The default import allowlist plus the comma-separated extras."""
        extras = [m.strip() for m in self.extra_imports.split(",") if m.strip()]
        return tuple(dict.fromkeys([*DEFAULT_ALLOWED_IMPORTS, *extras]))

    def clamp_timeout(self, requested_s: float | None) -> float:
        """The run timeout for a client's request, capped at `max_timeout_s`."""
        if requested_s is None or not requested_s > 0:  # None, 0, negative, NaN
            return min(self.timeout_s, self.max_timeout_s)
        return min(requested_s, self.max_timeout_s)


_SECRET_SETTINGS = ("MCP_CODE_HTTP_TOKEN", "MCP_CODE_HTTP_STATE_KEY")


def unknown_settings(config_path: str | Path) -> list[tuple[str, str, str | None]]:
    """(name, where, the closest setting) of each `MCP_CODE_*` variable in the environment or
    a `.env` file that is no setting (outside attack 136: `MCP_CODE_TIMEOUT=5` was ignored
    without a word); a `DSPY_*` one only when it is close to ours (dspy reads others)."""
    known = [str(info.validation_alias.choices[0]) for info in Settings.model_fields.values()]  # type: ignore[union-attr]
    found = dict.fromkeys(os.environ, "the environment")
    for path in env_files(config_path):
        for name in dotenv_values(path):
            found.setdefault(name, str(path))
    unknown = []
    for name, where in sorted(found.items()):
        upper = name.upper()  # names are read in any case (`MCP_CODE_Timeout_S` is one)
        if upper in known or not upper.startswith(("MCP_CODE_", "DSPY_")):
            continue
        ours = upper.startswith("MCP_CODE_")
        close = difflib.get_close_matches(upper, known, n=1, cutoff=0.6 if ours else 0.8)
        if ours or close:
            unknown.append((name, where, close[0] if close else None))
    return unknown


def _shown_input(error: Any) -> str:
    """A refused setting's value as its error shows it: a secret's never."""
    return (
        "***"
        if any(str(part) in _SECRET_SETTINGS for part in error["loc"])
        else repr(error["input"])
    )


_RETRY_SLACK_S = 30.0  # litellm's backoff between an LM call's attempts
_ONE_TRY_SLACK_S = 1.0  # past a lone attempt's own timeout, for the client to give up


def lm_call_limit_s(timeout_s: float, retries: int) -> float:
    """One model call in all: each attempt's DSPY_TIMEOUT_S, and time to back off between
    (a moment past one attempt: 5 s with no retry was cut at 35 s, attack 147)."""
    return timeout_s * (retries + 1) + (_RETRY_SLACK_S if retries else _ONE_TRY_SLACK_S)
