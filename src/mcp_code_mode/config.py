"""Load `mcp_servers.json` (contract §2) into frozen, validated server entries.

The file's two shapes (`servers` or `mcpServers`), `${VAR}` expansion (from the
environment over `.env` files) and the redaction of what it expanded live here; one entry
and its transport kinds are `server_config`'s.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

from dotenv import dotenv_values
from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from .encodable import CLIP_MARK
from .errors import ConfigError
from .server_config import ENTRY_KEYS, TRANSPORTS, FieldProblem, ServerConfig
from .settings import env_files

__all__ = ["CREDENTIAL_WORDS", "GatewayConfig", "load_config"]

_PERCENT = re.compile("%[0-9A-F]{2}")
CREDENTIAL_WORDS = "key|token|secret|password|passwd|pwd|sig|auth"
"""Words in the name of a URL parameter whose value is a credential (`?api_key=`, `token=`)."""
# `${VAR}`, `${VAR:-default}`, and VS Code's and Cursor's `${env:VAR}` (passed on as written,
# it sent `Bearer ${env:TOKEN}` to the upstream: a new user's first hour, attack 149).
_VAR = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_PROMPTED = re.compile(r"\$\{(input|command|config):[^}]*\}")  # VS Code asks or runs these


def _spellings(value: str) -> list[str]:
    """`value`, then how JSON (either `ensure_ascii`) and `repr` write it inside quotes, and
    how a URL does (an HTTP library's log of a query string: outside attack 123)."""
    forms = [value]
    for form in (
        json.dumps(value)[1:-1],
        json.dumps(value, ensure_ascii=False)[1:-1],
        repr(value)[1:-1],
        quote(value, safe=""),
        quote_plus(value, safe=""),
        quote(value),  # `/` kept, as in a path
        _PERCENT.sub(lambda hex: hex.group().lower(), quote(value, safe="")),  # `%2f`
    ):
        if form not in forms:
            forms.append(form)
    return forms


def _secret_start(text: str, end: str, form: str) -> int:
    """How many of `text`'s last characters (4 or more) are the start of `form`; 0 when
    none. Only where `form` holds `end` (the text's last 4) is the text compared: a run of
    `-` before a PEM's start matched its first 4 everywhere (attack 91)."""
    at = form.rfind(end, 0, min(len(form) - 1, len(text)))
    for _ in range(_CHECKS):
        if at == -1:
            return 0
        if text.endswith(form[: at + 4]):
            return at + 4
        at = form.rfind(end, 0, at + 3)
    return at + 4 if at != -1 else 0  # a secret of one repeated character: cut anyway


_CHECKS = 256


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
        characters is written escaped in a JSON result or a repr); the longest spelling
        first where two overlap. One pass of one pattern: building the spellings on each
        call made redacting 100,000 log lines take 3 s with 9 secrets (outside attack 88)."""
        if not self.secrets:
            return text
        pattern, names = self._redaction
        return pattern.sub(lambda found: names[found.group()], text)

    def redact_rows(self, rows: list[dict[str, Any]], *keys: str) -> list[dict[str, Any]]:
        """`rows` with the text under `keys` `redact`ed: upstream text the gateway shows (a
        tool's description, a server's) may hold a key the config gave it (outside attack
        123). Names stay as they are: code calls tools by them, and a short value (a
        `${USER}` of `root`) may be part of one."""
        if not self.secrets:
            return rows
        return [
            {k: self.redact(v) if k in keys and isinstance(v, str) else v for k, v in row.items()}
            for row in rows
        ]

    def redact_cut(self, text: str) -> str:
        """`redact(text)` for text known to have been cut short before it came, at its end
        or before a clip's mark (a progress message or a log line the length of a cut, an
        error the worker clipped): a secret's first 4 or more characters there go too.
        Nothing is kept between calls (a set of every secret's prefixes took 403 MB for a
        20 KB secret: attack 90)."""
        cut = CLIP_MARK.search(text)  # "… [N more characters cut]": the cut is before it
        if cut is not None:
            return self.redact_cut(text[: cut.start()]) + cut.group()
        text = self.redact(text)
        probe, longest = self._cut_probe
        if not self.secrets or probe.search(text, max(0, len(text) - longest)) is None:
            return text  # no secret's first 4 characters near the end (one C search)
        keep, end = len(text), text[-4:]
        for form in self._redaction[1]:
            keep = min(keep, len(text) - _secret_start(text, end, form))
        return text[:keep]

    @functools.cached_property
    def _cut_probe(self) -> tuple[re.Pattern[str], int]:
        """One pattern of every secret spelling's first 4 characters, and the longest."""
        forms = self._redaction[1] or {"": ""}
        starts = sorted({form[:4] for form in forms})
        return re.compile("|".join(map(re.escape, starts))), max(map(len, forms))

    @functools.cached_property
    def _redaction(self) -> tuple[re.Pattern[str], dict[str, str]]:
        """One pattern of every secret's spellings, longest first, and the name of each."""
        names: dict[str, str] = {}
        for value, name in self.secrets:
            for form in _spellings(value):
                names.setdefault(form, name)
        ordered = sorted(names, key=len, reverse=True)
        return re.compile("|".join(map(re.escape, ordered))), names

    @model_validator(mode="before")
    @classmethod
    def _accept_both_shapes(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            raise FieldProblem("servers", "the file must hold a JSON object")
        if "servers" in data and "mcpServers" in data:
            raise FieldProblem("servers", "give either 'servers' or 'mcpServers', not both")
        if "mcpServers" in data:
            data = {**data, "servers": data["mcpServers"]}
            del data["mcpServers"]
        if "servers" not in data:
            raise FieldProblem("servers", "expected a 'servers' (or 'mcpServers') object")
        return data

    @property
    def enabled(self) -> dict[str, ServerConfig]:
        """The entries with `enabled: true`."""
        return {name: s for name, s in self.servers.items() if s.enabled}


class _DuplicateKey(ValueError):
    """A JSON object of the config names a key twice (JSON keeps the last, silently)."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise _DuplicateKey(json.dumps(key)[:200])
        found[key] = value
    return found


def _parsed(text: str, shown: str) -> Any:
    """The file's JSON, or a `ConfigError` that says where and why it is not."""
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}", file=shown
        ) from None
    except RecursionError:
        raise ConfigError("invalid JSON: nested too deep", file=shown) from None
    except _DuplicateKey as exc:  # `"approve_tools": ["*"], "approve_tools": []` meant off
        raise ConfigError(f"the key {exc} is given twice in one object", file=shown) from None


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
        text = file.read_text(encoding="utf-8-sig")  # a BOM (Notepad) is not JSON (149)
    except FileNotFoundError:  # where it looked: a client's cwd is not the user's (149)
        raise ConfigError(
            f"file not found (looked for {file.absolute()}); create it or pass --config / "
            "MCP_SERVERS_CONFIG",
            file=shown,
        ) from None
    except OSError as exc:
        raise ConfigError(f"cannot read file: {exc.strerror}", file=shown) from None
    raw = _parsed(text, shown)
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
                f"${{{name}}} is not defined; set it in the environment or in .env, write "
                f'${{{name}:-}} for an empty default, or set "enabled": false on the server',
                file=file,
                server=server,
                field=".".join(loc[2:]) or None,
            )

        prompted = _PROMPTED.search(value)
        if prompted:
            raise ConfigError(
                f"{prompted.group(0)} is VS Code's, asked of its user: put the value in .env "
                "or the environment and write ${NAME} here",
                file=file,
                server=loc[1] if len(loc) > 1 else None,
                field=".".join(loc[2:]) or None,
            )
        return _VAR.sub(replace, value)
    if isinstance(value, dict):
        if len(loc) == 2 and value.get("enabled") is False:  # a server left off: its `${VAR}`s
            return value  # need no value (one unset for it stopped every server: M)
        return {k: _interpolate(v, variables, file, (*loc, str(k)), used) for k, v in value.items()}
    if isinstance(value, list):
        return [_interpolate(v, variables, file, loc, used) for v in value]
    return value


def _to_config_error(exc: ValidationError, file: str) -> ConfigError:
    first = exc.errors()[0]
    loc = [str(part) for part in first["loc"]]
    if len(loc) > 2 and loc[0] == "servers" and loc[2] in TRANSPORTS:
        del loc[2]  # the union's tag: which model validated the entry
    server = loc[1] if len(loc) > 1 and loc[0] == "servers" else None
    field = ".".join(loc[2:]) or (loc[0] if len(loc) == 1 else None)
    problem = (first.get("ctx") or {}).get("error")
    if isinstance(problem, FieldProblem):
        return ConfigError(str(problem), file=file, server=server, field=problem.field)
    message = first["msg"]
    if first["type"] == "extra_forbidden":
        message = "unknown key; allowed keys are " + ", ".join(sorted(ENTRY_KEYS))
    return ConfigError(message, file=file, server=server, field=field)
