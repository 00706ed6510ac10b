"""`mcp-code-mode check`: a config tried without serving it, and where each setting came from.

Loads the config, starts every upstream, lists its tools, and says what it found: every
setting's value with the place it was read from (the environment, which `.env`, the
command line, or the default), the sandbox's layers, and one line per server. Exit status
0 when every enabled server answered, 1 when one did not.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dotenv import dotenv_values
from pydantic import SecretStr

from .config import CREDENTIAL_WORDS, load_config
from .encodable import clean_text, one_line
from .gateway import Gateway
from .runs import RunStoreError, open_backend, shown_location, store_location
from .settings import CONFIG_VARIABLE, Settings, cache_root, env_files, unknown_settings
from .upstreams.gate import default_concurrent_starts

# A URL parameter whose value is a credential: `?key=`, `api_key=`, `token=`, `password=` ...
_SECRET_PARAMETER = re.compile(rf"(?i)([?&;][^=&#;]*(?:{CREDENTIAL_WORDS})[^=&#;]*=)[^&#;]*")

__all__ = ["check", "setting_sources"]


def _read(values: Mapping[str, str | None], variable: str) -> str | None:
    """`variable`'s value in `values` under any case of its name (the last one wins)."""
    found = [value for name, value in values.items() if name.upper() == variable]
    return found[-1] if found else None


def setting_sources(settings: Settings) -> list[tuple[str, str, str]]:
    """(variable, value, where it was read) of every setting: the environment, a `.env`
    file, the command line, or the default; secrets are shown as `***`."""
    files = [(path, dotenv_values(path)) for path in env_files(settings.servers_config)]
    # The config file is never named by the `.env` beside it (see `config_from_env`).
    cwd_env = [(p, v) for p, v in files if p == Path.cwd() / ".env"]
    defaults = Settings.model_construct()
    found = []
    for name, info in Settings.model_fields.items():
        value = getattr(settings, name)
        variable = str(info.validation_alias.choices[0])  # type: ignore[union-attr]
        if _read(os.environ, variable):  # in any case, as the settings read it
            where = "the environment"
        else:
            sources = cwd_env if variable == CONFIG_VARIABLE else files
            named = (
                str(p)
                for p, values in sources
                if _read(values, variable)
                and (variable != CONFIG_VARIABLE or _read(values, variable) == str(value))
            )
            unset = "default" if value == getattr(defaults, name) else "the command line"
            where = next(named, unset)
        shown = _shown(value) if value is not None else _unset(name, settings)
        found.append((variable, shown, where))
    return found


def _unset(name: str, settings: Settings) -> str:
    """An unset setting as `check` prints it: what the gateway uses instead, where it
    works one out (it printed `None` for the cache folder and the run store's place)."""
    if name == "max_concurrent_starts":
        return f"{default_concurrent_starts()} (unset: four times the CPU count, at least 8)"
    if name == "cache_dir":
        return f"{cache_root()} (unset: XDG_CACHE_HOME or ~/.cache)"
    if name == "runs_db":
        where = shown_location(store_location(None, settings.cache_dir))
        return f"{where} (unset: runs.sqlite3 in the cache folder)"
    return "(unset)"


def _shown(value: object) -> str:
    """A setting's value as `check` prints it: a secret as ***, and in a URL its user part
    and the values of parameters that name a key, token or password (a run store's or an
    LM endpoint's credentials, which `runs` and `exec` hide: attacks 129 and 130)."""
    if isinstance(value, SecretStr):
        return "***"
    text = str(value)
    if "://" not in text:
        return text
    scheme, _, rest = text.partition("://")
    head, slash, tail = rest.partition("/")
    if "@" in head:
        head = "***@" + head.rpartition("@")[2]
    return scheme + "://" + head + slash + _SECRET_PARAMETER.sub(r"\1***", tail)


async def check(settings: Settings, *, as_json: bool) -> int:
    """Try the config and print what was found; 0 when every enabled server answered."""
    import json

    config = load_config(settings.servers_config)
    async with Gateway(settings, config) as gateway:
        await gateway.settle(wait_s=None)
        rows = gateway.list_servers()
        sandbox = gateway.sandbox_info()
    report: dict[str, Any] = {
        "config": str(config.path),
        "env_files": [str(p) for p in env_files(settings.servers_config)],
        "settings": [{"name": n, "value": v, "from": w} for n, v, w in setting_sources(settings)],
        "unknown_settings": [
            {"name": n, "from": w, "closest": c}
            for n, w, c in unknown_settings(settings.servers_config)
        ],
        "plain_words": _plain_words(config.secrets),
        "sandbox": sandbox,
        "servers": rows,
        "runs": await asyncio.to_thread(_run_store, settings),
    }
    if as_json:
        print(json.dumps(report, ensure_ascii=False))
    else:
        _print(report)
    down = [row for row in rows if row["status"] not in ("ok", "disabled")]
    return 1 if down or report["runs"]["status"] == "error" else 0


def _plain_words(secrets: tuple[tuple[str, str], ...]) -> list[str]:
    """The `${VAR}`s whose values are plain words or numbers: every one is a secret, shown
    as `${VAR}` wherever it appears, so `customer` in `customer_id` was too (a new user's
    first hour, M: a mode, a region or a user name put in `.env`)."""
    return [name for value, name in secrets if _PLAIN.fullmatch(value)]


# a word, a number, a region such as us-east-1: not what a generated key looks like
_PLAIN = re.compile(r"[A-Za-z]{4,15}|[0-9.]{4,15}|[a-z]{2,}(?:-[a-z]{2,}){1,2}(?:-[0-9]{1,2})?")


def _run_store(settings: Settings) -> dict[str, Any]:
    """Where runs are kept (contract §10) and whether that store opens: one it cannot open
    left runs unrecorded while `check` said nothing (outside attack 129)."""
    if settings.runs == "off":
        return {"status": "off", "location": None, "error": None}
    location = store_location(settings.runs_db, settings.cache_dir)
    backend = open_backend(location)
    try:
        backend.open()
    except RunStoreError as exc:  # its message shows a URL's password as ***
        return {"status": "error", "location": shown_location(location), "error": str(exc)}
    finally:
        backend.close()
    return {"status": "ok", "location": shown_location(location), "error": None}


def _print(report: dict[str, Any]) -> None:
    files = ", ".join(report["env_files"]) or "none"
    print(f"config: {report['config']}")
    print(f"settings: the environment, then .env files: {files}")
    for row in report["settings"]:
        where = "" if row["from"] == "default" else f"  (from {row['from']})"
        print(f"  {row['name']}={row['value']}{where}")
    for row in report["unknown_settings"]:
        closest = f"; did you mean {row['closest']}?" if row["closest"] else ""
        name, where = one_line(row["name"]), one_line(row["from"])  # a `.env` wrote them
        print(f"  not a setting, ignored: {name} (from {where}){closest}")
    for name in report["plain_words"]:
        print(
            f"note: {name} is a plain word or number; as every ${{VAR}}, it is shown as {name}"
            " wherever it appears (results, names, text): a value that is not a secret can be"
            " written in the config itself"
        )
    sandbox = report["sandbox"]
    print(f"sandbox {sandbox['executor']}: {', '.join(sandbox['layers'])}")
    if sandbox["inactive"]:
        print(f"  not available here: {', '.join(sandbox['inactive'])}")
    for row in report["servers"]:
        count = f"{row['tool_count']} tools" if row["status"] == "ok" else ""
        line = f"{row['name']}: {row['status']} {count}".rstrip()
        if row.get("error"):
            line += f": {clean_text(str(row['error']))}"
        print(line, file=sys.stdout)
    if not report["servers"]:
        print(f"no servers in {Path(report['config']).name}")
    runs = report["runs"]
    if runs["error"]:  # the store's error names its location: once is enough (attack 136)
        print(f"runs: {runs['status']}: {clean_text(runs['error'])}")
    else:
        print(f"runs: {runs['status']}" + (f" {runs['location']}" if runs["location"] else ""))
