"""Helpers shared by the tests: config entries for real stdio upstreams, started gateways."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp_code_mode.config import load_config
from mcp_code_mode.gateway import Gateway
from mcp_code_mode.runs import RunRecord, RunStore
from mcp_code_mode.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
TEST_SERVER = str(ROOT / "tests" / "servers" / "upstream.py")
NOTES_SERVER = str(ROOT / "examples" / "servers" / "notes_server.py")
DATA_SERVER = str(ROOT / "examples" / "servers" / "data_server.py")
QUIET = {"FASTMCP_LOG_LEVEL": "WARNING"}
SECRET = "sk-test-secret-value-4242"

ConfigWriter = Callable[..., Path]


def server_entry(script: str, **extra: Any) -> dict[str, Any]:
    return {"command": "python", "args": [script], "env": dict(QUIET), **extra}


def standard_servers() -> dict[str, Any]:
    return {
        "testsrv": server_entry(TEST_SERVER, description="Test upstream with every result shape"),
        "notes": server_entry(NOTES_SERVER, description="Notes store"),
        "my-data": server_entry(DATA_SERVER, description="Customers and orders"),
        "time": {
            "command": "python",
            "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"],
            "description": "Current time",
        },
    }


def make_settings(**overrides: Any) -> Settings:
    base: dict[str, Any] = {"pool_size": 1, "timeout_s": 20.0}
    return Settings(_env_file=None, **{**base, **overrides})  # type: ignore[call-arg]


async def start_gateway(config_path: Path, **overrides: Any) -> Gateway:
    gateway = Gateway(make_settings(**overrides), load_config(config_path))
    await gateway.start()
    return gateway


def live_processes() -> dict[int, tuple[int, int, bytes]]:
    """pid -> (parent pid, session id, cmdline) of every live (non-zombie) process."""
    table = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            table[int(entry.name)] = (int(fields[1]), int(fields[3]), cmdline)
    return table


def the_one_run(path: Path) -> RunRecord:
    """The only run the store at `path` holds, read back whole."""
    store = RunStore.open(path)
    try:
        (summary,) = store.list_runs()
        run = store.get(summary.id)
    finally:
        store.close()
    assert run is not None
    return run
