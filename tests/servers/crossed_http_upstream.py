"""A streamable HTTP upstream (stdlib only) that answers a call through another request.

`python crossed_http_upstream.py PORT`: a `tools/call` of `crossed` is answered on its
event stream with `notifications/tools/list_changed` only; the `tools/list` POST the
gateway sends next is answered with a JSON body that is the call's reply (the call's id,
a 3 MB result). Everything else is answered as a plain upstream would (`echo`).
"""

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TOOLS = [{"name": name, "inputSchema": {"type": "object"}} for name in ("crossed", "echo")]
_WAITING: list[Any] = []  # the id of a `crossed` call
_ANSWERED = threading.Event()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        del format, args

    def _send(self, status: int, body: bytes = b"", kind: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("mcp-session-id", "crossed")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _reply(self, ident: Any, result: dict[str, Any]) -> None:
        self._send(200, json.dumps({"jsonrpc": "2.0", "id": ident, "result": result}).encode())

    def do_GET(self) -> None:
        self._send(405)

    def do_DELETE(self) -> None:
        self._send(200)

    def do_POST(self) -> None:
        message = json.loads(self.rfile.read(int(self.headers["content-length"])))
        method, ident = message.get("method"), message.get("id")
        params = message.get("params") or {}
        if ident is None:
            self._send(202)
        elif method == "initialize":
            version = params.get("protocolVersion")
            capabilities = {"tools": {"listChanged": True}}
            info = {"name": "crossed", "version": "1"}
            self._reply(
                ident,
                {"protocolVersion": version, "capabilities": capabilities, "serverInfo": info},
            )
        elif method == "tools/list" and _WAITING:
            big = {"content": [{"type": "text", "text": "B" * 3_000_000}], "isError": False}
            self._reply(_WAITING.pop(), big)
            _ANSWERED.set()
        elif method == "tools/list":
            self._reply(ident, {"tools": TOOLS})
        elif method == "tools/call" and params.get("name") == "crossed":
            self._announce(ident)
        elif method == "tools/call":
            text = str((params.get("arguments") or {}).get("text", ""))
            self._reply(ident, {"content": [{"type": "text", "text": text}], "isError": False})
        else:
            self._reply(ident, {})

    def _announce(self, ident: Any) -> None:
        _WAITING.append(ident)
        _ANSWERED.clear()
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("mcp-session-id", "crossed")
        self.send_header("connection", "close")
        self.end_headers()
        changed = json.dumps({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        self.wfile.write(f"event: message\ndata: {changed}\n\n".encode())
        self.wfile.flush()
        _ANSWERED.wait(20)
        self.close_connection = True


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
