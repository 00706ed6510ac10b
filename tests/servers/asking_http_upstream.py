"""A streamable HTTP upstream (stdlib only) that floods requests of its own.

`python asking_http_upstream.py PORT COUNT [SPELLING]`: once a client opens its GET stream,
COUNT `ping` requests go down it as fast as they can be written, then the stream stays
open. SPELLING is how each event is written, all read alike by the MCP SDK: `plain`,
`escaped` (the `id` key as `"\\u0069d"`), `cr` (lines ended by a bare `\r`), `space` (the
data in two lines with a line of one space between them: not an event's end), `utf7` (the
stream's charset UTF-7, quotes as `+ACI-`), and `badutf8` (a byte that is not UTF-8 in a
string).
Tools: `echo`, and `answers` (how many answers to those pings have come back so far).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

COUNT = int(sys.argv[2])
SPELLING = sys.argv[3] if len(sys.argv) > 3 else "plain"
TOOLS = [{"name": name, "inputSchema": {"type": "object"}} for name in ("echo", "answers")]
_ANSWERS = [0]
_LOCK = threading.Lock()


def _event(n: int) -> bytes:
    ping = json.dumps({"jsonrpc": "2.0", "id": f"ping-{n}", "method": "ping"})
    if SPELLING == "utf7":
        return f"event: message\ndata: {ping}\n\n".replace('"', "+ACI-").encode()
    if SPELLING == "badutf8":
        return f'event: message\ndata: {ping[:-1]}, "x": "'.encode() + b'\xff"}\n\n'
    return _text_event(ping, n).encode()


def _text_event(ping: str, n: int) -> str:
    if SPELLING == "escaped":
        return "event: message\ndata: " + ping.replace('"id"', '"\\u0069d"') + "\n\n"
    if SPELLING == "cr":  # a `\n` after ten such events: whole lines to a reader of `\n`
        return f"event: message\rdata: {ping}\r\r" + ("\n" if n % 10 == 9 else "")
    if SPELLING == "space":
        head, _, tail = ping.partition(", ")
        return f"event: message\ndata: {head},\n \ndata: {tail}\n\n"
    return f"event: message\ndata: {ping}\n\n"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        del format, args

    def _send(self, status: int, body: bytes = b"") -> None:
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("mcp-session-id", "asking")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _reply(self, ident: Any, result: dict[str, Any]) -> None:
        self._send(200, json.dumps({"jsonrpc": "2.0", "id": ident, "result": result}).encode())

    def do_DELETE(self) -> None:
        self._send(200)

    def do_GET(self) -> None:
        self.send_response(200)
        charset = "; charset=utf-7" if SPELLING == "utf7" else ""
        self.send_header("content-type", "text/event-stream" + charset)
        self.send_header("mcp-session-id", "asking")
        self.end_headers()
        for n in range(COUNT):
            self.wfile.write(_event(n))
        self.wfile.flush()
        time.sleep(120)

    def do_POST(self) -> None:
        message = json.loads(self.rfile.read(int(self.headers["content-length"])))
        method, ident = message.get("method"), message.get("id")
        params = message.get("params") or {}
        if method is None:  # an answer to one of our pings
            with _LOCK:
                _ANSWERS[0] += 1
            self._send(202)
        elif ident is None:
            self._send(202)
        elif method == "initialize":
            info = {"name": "asking", "version": "1"}
            capabilities = {"tools": {"listChanged": False}}
            version = params.get("protocolVersion")
            self._reply(
                ident,
                {"protocolVersion": version, "capabilities": capabilities, "serverInfo": info},
            )
        elif method == "tools/list":
            self._reply(ident, {"tools": TOOLS})
        elif method == "tools/call":
            name = params.get("name")
            text = str(_ANSWERS[0]) if name == "answers" else str(params.get("arguments"))
            self._reply(ident, {"content": [{"type": "text", "text": text}], "isError": False})
        else:
            error = {"code": -32601, "message": f"Method not found: {method}"}
            self._send(200, json.dumps({"jsonrpc": "2.0", "id": ident, "error": error}).encode())


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
