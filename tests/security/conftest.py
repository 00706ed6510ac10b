"""Fixtures of the hostile-input suite: gateways, loopback listeners, marker paths."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio

from mcp_code_mode.gateway import Gateway

from ..conftest import require_pyodide
from ..support import TEST_SERVER, server_entry
from .helpers import start_sandboxed


async def _gateway(tmp_path_factory: pytest.TempPathFactory, **overrides: object) -> Gateway:
    path = tmp_path_factory.mktemp("sec-cfg") / "mcp_servers.json"
    path.write_text(json.dumps({"servers": {"t": server_entry(TEST_SERVER)}}), encoding="utf-8")
    return await start_sandboxed(path, pool_size=1, **overrides)


@pytest_asyncio.fixture(scope="module", params=["local", "pyodide"])
async def sec_gateway(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Gateway]:
    """The default allowlist and limits, one warm worker: for policy, file, network cases.

    Run over both executors: with the default allowlist they must stop the same things.
    """
    if request.param == "pyodide":
        require_pyodide()
    gw = await _gateway(tmp_path_factory, executor=request.param)
    try:
        yield gw
    finally:
        await gw.aclose()


# Modules an administrator might add with MCP_CODE_ALLOWED_IMPORTS. With them the policy and
# the importer are out of the way, so what these runs manage is what the OS layers allow.
OS_MODULES = (
    "os,sys,io,socket,subprocess,ctypes,signal,resource,atexit,threading,time,multiprocessing,pty"
)


@pytest_asyncio.fixture(scope="module")
async def os_gateway(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Gateway]:
    """`os`, `socket`, `subprocess`, `ctypes`... allowed: for testing the OS layers alone."""
    gw = await _gateway(tmp_path_factory, extra_imports=OS_MODULES)
    try:
        yield gw
    finally:
        await gw.aclose()


@pytest.fixture(scope="module")
def gateways(sec_gateway: Gateway, os_gateway: Gateway) -> dict[str, Gateway]:
    """Both, by the short names the case tables use: "sec" and "os"."""
    return {"sec": sec_gateway, "os": os_gateway}


@pytest_asyncio.fixture(scope="module", params=["local", "pyodide"])
async def tight_gateway(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Gateway]:
    """Low limits (128 MB, 2000 output chars) and the OS modules allowed: runaway cases."""
    if request.param == "pyodide":
        require_pyodide()
    gw = await _gateway(
        tmp_path_factory,
        memory_mb=128,
        max_output_chars=2000,
        extra_imports=OS_MODULES,
        executor=request.param,
    )
    try:
        yield gw
    finally:
        await gw.aclose()


@pytest.fixture
def tmp_marker() -> Iterator[Path]:
    """A path in the world-writable /tmp that no one has created; removed afterwards."""
    path = Path("/tmp") / f"mcp-security-{uuid.uuid4().hex}"
    try:
        yield path
    finally:
        if path.is_dir() and not path.is_symlink():
            path.rmdir()
        else:
            path.unlink(missing_ok=True)


@pytest.fixture
def owned_marker(tmp_path: Path) -> Path:
    """A path in a temporary directory owned by the test process (root, mode 0700)."""
    return tmp_path / "marker"


class Listeners:
    """A TCP and a UDP listener on 127.0.0.1 that record every connection or datagram."""

    def __init__(self) -> None:
        self.accepted: list[tuple[str, int]] = []
        self.datagrams: list[bytes] = []
        self.tcp_port = 0
        self.udp_port = 0

    def hits(self) -> list[object]:
        return [*self.accepted, *self.datagrams]


class _Udp(asyncio.DatagramProtocol):
    def __init__(self, sink: list[bytes]) -> None:
        self.sink = sink

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        self.sink.append(data)


@pytest_asyncio.fixture(scope="module")
async def listeners() -> AsyncIterator[Listeners]:
    state = Listeners()

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        state.accepted.append(writer.get_extra_info("peername"))
        writer.close()

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    state.tcp_port = server.sockets[0].getsockname()[1]
    transport, _ = await asyncio.get_running_loop().create_datagram_endpoint(
        lambda: _Udp(state.datagrams), local_addr=("127.0.0.1", 0)
    )
    state.udp_port = transport.get_extra_info("sockname")[1]
    try:
        yield state
    finally:
        transport.close()
        server.close()
        await server.wait_closed()
