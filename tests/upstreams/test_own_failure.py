"""One HTTP request's failure fails that request alone (`upstreams.own_failure`).

The MCP SDK ran every request's POST in one task group: one POST whose connection failed
(a keep-alive connection the upstream closed as it was reused) ended the session, and
every call in flight to a healthy upstream failed "connection lost" (outside attack 143).
A loopback proxy in front of a real streamable-HTTP upstream drops the one connection that
carries a marked call while eight others are in flight.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator

import pytest

from mcp_code_mode.upstreams.http_limit import request_head

from ..support import ConfigWriter, start_gateway
from ..test_upstream_healing import HttpUpstream

MARK = b'"seconds":0.123'


@contextlib.asynccontextmanager
async def dropping_proxy(port: int) -> AsyncIterator[str]:
    """A proxy to 127.0.0.1:`port` that aborts the connection whose request holds MARK."""

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, drop: bool):
        with contextlib.suppress(OSError):
            while data := await reader.read(65536):
                if drop and MARK in data.replace(b" ", b""):
                    writer.transport.abort()
                    raise OSError("dropped")
                writer.write(data)
                await writer.drain()
        writer.close()

    async def serve(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        up_r, up_w = await asyncio.open_connection("127.0.0.1", port)
        try:
            await asyncio.gather(pipe(client_r, up_w, drop=True), pipe(up_r, client_w, drop=False))
        except OSError:
            pass
        finally:
            client_w.transport.abort()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/mcp"
    finally:
        server.close()


def test_a_big_requests_id_is_read_as_the_sdk_writes_it() -> None:
    """httpx writes compact JSON; the head of a body over 64 KB was read only with spaces, so
    a big call's failed POST was taken for a notification (review 145: "202 Accepted")."""
    pad = "z" * 70_000
    compact = json.dumps(
        {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "p": pad}, separators=(",", ":")
    )
    spaced = json.dumps({"jsonrpc": "2.0", "id": "a", "method": "tools/call", "p": pad})
    assert request_head(compact.encode()) == (7, "tools/call")
    assert request_head(spaced.encode()) == ("a", "tools/call")
    assert request_head(json.dumps({"jsonrpc": "2.0", "method": "x", "p": pad}).encode()) is None


@pytest.mark.parametrize(("legacy", "pad"), [(False, 0), (True, 0), (False, 70_000)])
async def test_one_failed_connection_fails_one_call(
    write_config: ConfigWriter, legacy: bool, pad: int
) -> None:
    upstream = HttpUpstream(legacy=legacy)
    await upstream.start()
    try:
        async with dropping_proxy(upstream.port) as url:
            gw = await start_gateway(write_config({"h": {"url": url, "timeout_s": 30}}))
            try:
                await gw.settle(wait_s=None)
                others = [
                    asyncio.create_task(gw.manager.call_tool("h", "sleep", {"seconds": 2.0}))
                    for _ in range(8)
                ]
                await asyncio.sleep(0.5)
                marked = {"seconds": 0.123, **({"pad": "z" * pad} if pad else {})}
                dropped = gw.manager.call_tool("h", "sleep", marked)
                failed = await asyncio.gather(dropped, return_exceptions=True)
                done = await asyncio.gather(*others, return_exceptions=True)
                after = await gw.manager.call_tool("h", "sleep", {"seconds": 0})
                state = gw.list_servers()[0]["status"]
            finally:
                await gw.aclose()
    finally:
        upstream.stop()
    assert isinstance(failed[0], Exception) and "connection" in str(failed[0]), failed
    assert [type(d).__name__ for d in done] == ["CallToolResult"] * 8, done
    assert state == "ok" and not after.is_error, (state, after)
