"""Fixtures: config files pointing at real stdio upstreams, and a shared started gateway."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from mcp_code_mode.gateway import Gateway

from .support import SECRET, ConfigWriter, standard_servers, start_gateway

# A "server secret" the guest must never see: set before any gateway or worker starts.
os.environ["MCP_CODE_TEST_SECRET"] = SECRET
# The suite's runs are recorded (contract §10) in a store of its own, not the user's history.
_RUNS = tempfile.mkdtemp(prefix="mcp-code-test-runs-")
os.environ["MCP_CODE_RUNS_DB"] = os.path.join(_RUNS, "runs.db")
atexit.register(shutil.rmtree, _RUNS, ignore_errors=True)


# The files whose tests run longest (whole benchmark runs): first, so that with
# pytest-xdist (`-n`, see pyproject) the other worker takes the rest meanwhile instead of
# waiting for them at the end.
_LONG_FIRST = ("tests/test_bench.py", "tests/test_bench_scale.py", "tests/test_cli.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        path = item.nodeid.split("::")[0]
        return _LONG_FIRST.index(path) if path in _LONG_FIRST else len(_LONG_FIRST)

    items.sort(key=rank)  # stable: the rest keep their order


@pytest.fixture
def write_config(tmp_path: Path) -> ConfigWriter:
    def write(
        servers: dict[str, Any], *, shape: str = "servers", name: str = "mcp_servers.json"
    ) -> Path:
        path = tmp_path / name
        path.write_text(json.dumps({shape: servers}), encoding="utf-8")
        return path

    return write


@pytest.fixture
def stats_socket() -> Iterator[Path]:
    """Where HAProxy's stats socket goes: a short path (HAProxy takes at most 97 characters,
    and a test's tmp_path under another user's TMPDIR is longer)."""
    with tempfile.TemporaryDirectory(prefix="haproxy-") as folder:
        yield Path(folder) / "stats.sock"


def pyodide_ready() -> bool:
    from mcp_code_mode.sandbox.pyodide_setup import deno_binary, pyodide_dir

    return deno_binary() is not None and (pyodide_dir() / "pyodide.mjs").is_file()


def require_pyodide() -> None:
    """Skip without Deno + Pyodide locally; in CI (CI=true) their absence is a failure."""
    if not pyodide_ready():
        if os.environ.get("CI"):
            pytest.fail("CI must run the Pyodide tests: run `mcp-code-mode setup pyodide`")
        pytest.skip("Pyodide is not set up (mcp-code-mode setup pyodide)")


@pytest_asyncio.fixture(scope="session")
async def pyodide_gateway(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Gateway]:
    """The standard upstreams behind MCP_EXECUTOR=pyodide."""
    require_pyodide()
    path = tmp_path_factory.mktemp("cfg-pyodide") / "mcp_servers.json"
    path.write_text(json.dumps({"servers": standard_servers()}), encoding="utf-8")
    gw = await start_gateway(path, pool_size=2, executor="pyodide")
    try:
        yield gw
    finally:
        await gw.aclose()


@pytest.fixture(params=["local", "pyodide"])
def any_gateway(request: pytest.FixtureRequest) -> Gateway:
    """The shared gateway of each executor, for behaviour that must be the same in both."""
    name = "gateway" if request.param == "local" else "pyodide_gateway"
    return request.getfixturevalue(name)  # type: ignore[no-any-return]


@pytest_asyncio.fixture(scope="session")
async def gateway(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Gateway]:
    """One gateway over the standard upstreams, shared by tests that do not change it."""
    path = tmp_path_factory.mktemp("cfg") / "mcp_servers.json"
    path.write_text(json.dumps({"servers": standard_servers()}), encoding="utf-8")
    gw = await start_gateway(path, pool_size=2)
    try:
        yield gw
    finally:
        await gw.aclose()
