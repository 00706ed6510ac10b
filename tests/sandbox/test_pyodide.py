"""The Pyodide executor's own layers: Deno permissions, kill on timeout, Wasm memory cap."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from mcp_code_mode.gateway import Gateway

from ..conftest import require_pyodide
from ..support import SECRET, TEST_SERVER, ConfigWriter, server_entry, start_gateway
from .test_local import _processes


@pytest_asyncio.fixture
async def js_gateway(write_config: ConfigWriter) -> AsyncIterator[Gateway]:
    """Pyodide with `js` deliberately allowed: only Deno's permissions stand in the way."""
    require_pyodide()
    gw = await start_gateway(
        write_config({"t": server_entry(TEST_SERVER)}), executor="pyodide", extra_imports="js",
        memory_mb=128, pool_size=1,
    )  # fmt: skip
    try:
        yield gw
    finally:
        await gw.aclose()


@pytest.mark.parametrize(
    ("code", "needle"),
    [
        ("import js\njs.Deno.env.get('MCP_CODE_TEST_SECRET')", "NotCapable"),
        ("import js\njs.Deno.env.toObject()", "NotCapable"),
        ("import js\njs.Deno.readTextFileSync('/etc/hostname')", "NotCapable"),
        ("import js\njs.Deno.writeTextFileSync('/tmp/mcp-pyodide-marker', 'x')", "NotCapable"),
        ("import js\njs.Deno.Command.new('/bin/sh').outputSync()", "NotCapable"),
        ("import js\njs.Deno.listen(js.Object.fromEntries([['port', 0]]))", "NotCapable"),
    ],
)
async def test_deno_permissions_hold_even_with_js(
    js_gateway: Gateway, code: str, needle: str
) -> None:
    out = (await js_gateway.execute(code, timeout_s=10)).to_json()
    assert not out["ok"], out
    assert needle in out["error"]["message"] or "PermissionDenied" in out["error"]["message"]
    assert SECRET not in str(out)
    assert not Path("/tmp/mcp-pyodide-marker").exists()
    assert (await js_gateway.execute("1+1")).result == 2


async def test_js_is_not_importable_by_default(pyodide_gateway: Gateway) -> None:
    out = (await pyodide_gateway.execute("import js")).to_json()
    assert out["error"]["type"] == "POLICY_VIOLATION"
    out = (await pyodide_gateway.execute("import json\njson.loads('1')\nimport pyodide")).to_json()
    assert out["error"]["type"] == "POLICY_VIOLATION" and out["error"]["line"] == 3


async def test_timeout_kills_the_runner(pyodide_gateway: Gateway) -> None:
    deno = {pid for pid, (_, _, cmd) in _processes().items() if b"pyodide_runner.mjs" in cmd}
    started = time.perf_counter()
    out = (await pyodide_gateway.execute("while True:\n    pass", timeout_s=1.0)).to_json()
    assert out["error"]["type"] == "TIMEOUT"
    assert time.perf_counter() - started < 2.5
    await asyncio.sleep(0.2)
    alive = {pid for pid, (_, _, cmd) in _processes().items() if b"pyodide_runner.mjs" in cmd}
    assert len(deno - alive) >= 1  # the runner that ran the loop is gone
    assert (await pyodide_gateway.execute("1+1")).result == 2


async def test_wasm_memory_cap(js_gateway: Gateway) -> None:
    out = (await js_gateway.execute("x = bytearray(400 * 1024 * 1024)\nlen(x)")).to_json()
    assert out["error"]["type"] == "MEMORY_LIMIT", out
    assert (await js_gateway.execute("len(bytearray(8 * 1024 * 1024))")).result == 8 * 1024 * 1024


async def test_runner_has_no_server_environment(pyodide_gateway: Gateway) -> None:
    assert os.environ["MCP_CODE_TEST_SECRET"] == SECRET
    runners = [pid for pid, (_, _, cmd) in _processes().items() if b"pyodide_runner.mjs" in cmd]
    assert runners
    for pid in runners:
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue  # it finished meanwhile
        assert SECRET.encode() not in environ and b"MCP_CODE_TEST_SECRET" not in environ


async def test_js_heap_is_capped_with_the_runner(js_gateway: Gateway) -> None:
    """Reaching the JS bridge (here allowed on purpose) grants no memory beyond the limit:
    RLIMIT_DATA on the Deno process caps JS objects as well as Wasm memory."""
    assert "deno_memory_cap" in js_gateway.sandbox_info()["layers"]
    code = "import js\nkept = [js.Uint8Array.new(256 * 1024 * 1024) for _ in range(8)]\nlen(kept)"
    out = (await js_gateway.execute(code, timeout_s=20)).to_json()
    assert not out["ok"], "2 GiB of JS memory under a 256 MB limit"
    assert out["error"]["type"] in {"MEMORY_LIMIT", "EXECUTOR_ERROR", "RUNTIME_ERROR"}, out
    assert (await js_gateway.execute("1+1")).result == 2
