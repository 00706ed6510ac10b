"""A stdlib streamable-HTTP MCP upstream that compresses its replies whatever it is asked.

`python gzip_upstream.py PORT`. Tools: `bomb` (a gzip reply that inflates to `BOMB_MB`
megabytes of text, a few hundred KB on the wire), `small` (a gzip reply that inflates to a
little text) and `brotli` (a reply that says it is br-encoded). The Accept-Encoding header
of each tools/call is appended to `SEEN_FILE` when set.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_TOOLS = [{"name": n, "inputSchema": {"type": "object"}} for n in ("bomb", "small", "brotli")]


def _gzip_reply(rid: Any, text_mb: int, text: bytes = b"") -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", compresslevel=9) as out:
        out.write(
            b'{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"'
            % json.dumps(rid).encode()
        )
        for _ in range(text_mb):
            out.write(b"A" * (1 << 20))
        out.write(text + b'"}]}}')
    return buf.getvalue()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, body: bytes = b"", coding: str | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Mcp-Session-Id", "s1")
        if coding:
            self.send_header("Content-Encoding", coding)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self._send(405)

    def do_DELETE(self) -> None:
        self._send(200)

    def do_POST(self) -> None:
        message = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        method, rid = message.get("method"), message.get("id")
        if rid is None:
            self._send(202)
            return
        if method == "tools/call":
            self._call(rid, message["params"]["name"])
            return
        if method == "initialize":
            version = message["params"]["protocolVersion"]
            info = {"name": "gzip", "version": "1"}
            result: Any = {
                "protocolVersion": version,
                "capabilities": {"tools": {}},
                "serverInfo": info,
            }
        else:
            result = {"tools": _TOOLS} if method == "tools/list" else {}
        self._send(200, json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}).encode())

    def _call(self, rid: Any, name: str) -> None:
        seen = os.environ.get("SEEN_FILE")
        if seen:
            with open(seen, "a", encoding="utf-8") as f:
                f.write(f"{self.headers.get('accept-encoding')}\n")
        if name == "bomb":
            self._send(200, _gzip_reply(rid, int(os.environ.get("BOMB_MB", "200"))), "gzip")
        elif name == "small":
            self._send(200, _gzip_reply(rid, 0, b"inflated"), "gzip")
        else:
            self._send(200, b"\x00not brotli", "br")


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
