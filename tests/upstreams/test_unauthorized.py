"""An HTTP upstream that refuses our credentials is said to, not "an error response"."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator

import pytest

from ..support import ConfigWriter, start_gateway


class _Refusing(http.server.BaseHTTPRequestHandler):
    status = 401

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(self.status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", "12")
        self.end_headers()
        self.wfile.write(b"who are you?")

    do_GET = do_DELETE = do_POST

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(params=[401, 403])
def refusing(request: pytest.FixtureRequest) -> Iterator[tuple[str, int]]:
    handler = type("Handler", (_Refusing,), {"status": request.param})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp", request.param
    finally:
        server.shutdown()
        server.server_close()


async def test_a_refused_token_is_named(
    write_config: ConfigWriter, refusing: tuple[str, int]
) -> None:
    """`check` and `list_servers` said only "failed to start: Server returned an error
    response" for a wrong token (a new user's first hour, attack 149)."""
    url, status = refusing
    entry = {"url": url, "headers": {"Authorization": "Bearer wrong"}}
    gateway = await start_gateway(write_config({"web": entry}))
    try:
        (row,) = gateway.list_servers()
    finally:
        await gateway.aclose()
    assert row["status"] == "error", row
    assert f"HTTP {status}" in row["error"] and "headers" in row["error"], row
