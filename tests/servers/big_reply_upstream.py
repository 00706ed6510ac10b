"""A hand-written JSON-RPC upstream that sends replies of any size, streamed as they are made.

No MCP library, so the client sees exactly these bytes and the upstream never holds a big
reply whole. Over stdio by default; `--http PORT` serves streamable HTTP (stateless, legacy
protocol era) with JSON bodies, `--sse` makes each reply a one-event stream instead.

Tools: `echo(text)`, `boot()` (this process's pid), `big(size, id_last=False)` (a text
result of `size` bytes; `id_last` puts the reply's id after the result, as the TypeScript
SDK does), `broken()` (a line that carries the request's id but is not JSON-RPC),
`endless()` (with `--sse`: a stream of keep-alive comments that ends only when the client
hangs up), `resumed()` (with `--sse`: an event id and the stream closed, no reply; its
resumption, a GET with `Last-Event-ID`, is endless), `pings()` (with `--sse`: an endless
stream of `ping` requests to the client; with `--hold-answers` the POSTs that answer them
are never answered) and `open_streams()` (how many endless streams are open).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CHUNK = 1 << 20
_OPEN = [0]  # endless streams open now
_OPEN_LOCK = threading.Lock()
_NUMBER = {"type": "number"}
TOOLS = [
    {
        "name": "echo",
        "description": "Return the text unchanged.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
    },
    {"name": "boot", "description": "This process's pid.", "inputSchema": {"type": "object"}},
    {
        "name": "big",
        "description": "A text result of `size` bytes.",
        "inputSchema": {
            "type": "object",
            "properties": {"size": _NUMBER, "id_last": {"type": "boolean"}},
        },
    },
    {
        "name": "broken",
        "description": "A reply line that is not JSON-RPC.",
        "inputSchema": {"type": "object"},
    },
    {"name": "endless", "description": "A reply never sent.", "inputSchema": {"type": "object"}},
    {"name": "resumed", "description": "Resumed, never sent.", "inputSchema": {"type": "object"}},
    {"name": "pings", "description": "Pings, no reply.", "inputSchema": {"type": "object"}},
    {
        "name": "open_streams",
        "description": "Endless streams open.",
        "inputSchema": {"type": "object"},
    },
]


def _text(value: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": value}], "isError": False}


def answer(request: dict[str, Any]) -> dict[str, Any]:
    """The reply's members besides `jsonrpc` and `id` (small replies only)."""
    method, params = request.get("method"), request.get("params") or {}
    if method == "initialize":
        info = {"name": "big-reply", "version": "1"}
        capabilities = {"tools": {"listChanged": False}}
        version = "2025-11-25"
        return {
            "result": {"protocolVersion": version, "capabilities": capabilities, "serverInfo": info}
        }
    if method == "ping":
        return {"result": {}}
    if method == "tools/list":
        return {"result": {"tools": TOOLS}}
    if method == "tools/call":
        name, arguments = params.get("name"), params.get("arguments") or {}
        if name == "echo":
            return {"result": _text(str(arguments.get("text", "")))}
        if name == "boot":
            return {"result": _text(json.dumps({"pid": os.getpid()}))}
        if name == "open_streams":
            return {"result": _text(str(_OPEN[0]))}
    return {"error": {"code": -32601, "message": f"Method not found: {method}"}}


def reply(request: dict[str, Any]) -> tuple[int, Iterator[bytes]]:
    """The reply to `request` as its size and its bytes, made as they are sent."""
    ident = json.dumps(request["id"])
    arguments = (request.get("params") or {}).get("arguments") or {}
    name = (request.get("params") or {}).get("name")
    if request.get("method") == "tools/call" and name == "broken":
        line = f'{{"jsonrpc":"2.0","id":{ident},"result":{{"content":'.encode()
        return len(line), iter([line])
    if request.get("method") != "tools/call" or name != "big":
        line = json.dumps({"jsonrpc": "2.0", "id": request["id"], **answer(request)}).encode()
        return len(line), iter([line])
    size = int(arguments.get("size", 0))
    envelope = f'"jsonrpc":"2.0","id":{ident}'
    text_open = '"result":{"content":[{"type":"text","text":"'
    text_close = '"}],"isError":false}'
    if arguments.get("id_last"):
        head, tail = "{" + text_open, text_close + "," + envelope + "}"
    else:
        head, tail = "{" + envelope + "," + text_open, text_close + "}"

    def chunks() -> Iterator[bytes]:
        yield head.encode()
        block = b"x" * CHUNK
        for start in range(0, size, CHUNK):
            yield block[: min(CHUNK, size - start)]
        yield tail.encode()

    return len(head) + size + len(tail), chunks()


def serve_stdio() -> None:
    out = sys.stdout.buffer
    for line in sys.stdin:
        try:
            request = json.loads(line)
        except ValueError:
            continue
        if "id" not in request or "method" not in request:
            continue  # a notification or a response: nothing to answer
        for chunk in reply(request)[1]:
            out.write(chunk)
        out.write(b"\n")
        out.flush()


class _Handler(BaseHTTPRequestHandler):
    sse = False
    hold_answers = False

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        request = json.loads(body)
        if "id" not in request or "method" not in request:
            if self.hold_answers and "method" not in request:
                time.sleep(600)  # an answer to our ping: never answered
                return
            self.send_response(202)
            self.send_header("content-length", "0")
            self.end_headers()
            return
        name = (request.get("params") or {}).get("name")
        if self.sse and name in ("endless", "resumed", "pings"):
            self._endless(resumable=name == "resumed", pings=name == "pings")
            return
        size, chunks = reply(request)
        self.send_response(200)
        if self.sse:
            self.send_header("content-type", "text/event-stream")
            self.send_header("content-length", str(size + len(b"event: message\ndata: \n\n")))
            self.end_headers()
            chunks = iter([b"event: message\ndata: ", *chunks, b"\n\n"])
        else:
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(size))
            self.end_headers()
        try:
            for chunk in chunks:
                self.wfile.write(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client stopped reading: what it refused

    def _endless(self, *, resumable: bool = False, pings: bool = False) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        if resumable:  # the same event id for every call, as a careless server may send
            self.wfile.write(b"id: resume-me\nretry: 100\ndata: \n\n")
            return
        with _OPEN_LOCK:
            _OPEN[0] += 1
        try:
            for n in range(10**9):
                ping = f'data: {{"jsonrpc":"2.0","id":"p{n}","method":"ping"}}\n\n'.encode()
                self.wfile.write(ping if pings else b": still working\n\n")
                self.wfile.flush()
                time.sleep(0.005 if pings else 0.1)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client hung up
        finally:
            with _OPEN_LOCK:
                _OPEN[0] -= 1

    def do_GET(self) -> None:  # no server-to-client stream, but resumptions
        if self.sse and self.headers.get("last-event-id"):
            self._endless()
            return
        self.send_response(405)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_DELETE(self) -> None:
        self.send_response(405)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        del format, args


def main() -> None:
    if "--http" not in sys.argv:
        serve_stdio()
        return
    port = int(sys.argv[sys.argv.index("--http") + 1])
    _Handler.sse = "--sse" in sys.argv
    _Handler.hold_answers = "--hold-answers" in sys.argv
    ThreadingHTTPServer(("127.0.0.1", port), _Handler).serve_forever()


if __name__ == "__main__":
    main()
