"""An MCP upstream (stdio or HTTP) with a big synthetic catalog, ready in 0.15 s (0.8 s at 10k).

    python bench/servers/big_server.py --tools 10000
    python bench/servers/big_server.py --catalog-size 1000 --offset 50 --tools 50 --name s01

fastmcp takes minutes to register 10,000 tools and `import mcp` costs ~2 s and ~60 MB a
process, so this is JSON-RPC by hand, stdlib only: `server/discover` (the
2026-07-28 era; `--era legacy` refuses it so clients fall back), `initialize`, `ping`,
`tools/list` (one page, or `--page-size`) and `tools/call`, which echoes the tool name and
arguments as structured content. Notifications are read and ignored.

The catalog is `big_catalog.catalog()`: the recall set's targets among generated
distractors, grouped by domain; `--catalog-size`, `--offset` and `--tools` pick one
upstream's slice of it.

`--http PORT` serves streamable HTTP instead (stateless, JSON replies; the URL on stderr).
`--start-cpu-s` burns that much CPU time before reading anything, as a Python server's imports
do (`import fastmcp` is ~1.7 s here), so many starting at once contend for the cores;
`--init-delay-s` then sleeps (a server that fetches its catalog at start-up and answers nothing
meanwhile); `--call-delay-s` delays every `tools/call` (in a thread, so pings and listings
still answer); `--log-file` appends one line per request method, which
shows how often a client lists tools or pings.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO, Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.servers.big_catalog import JSON, catalog

__all__ = ["main"]

MODERN = "2026-07-28"
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"  # in a modern request's `_meta`
LEGACY = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
SERVER_INFO = {"name": "big-server", "version": "1.0.0"}

# ---------------------------------------------------------------- the server


class _Server:
    def __init__(self, tools: list[JSON], args: argparse.Namespace) -> None:
        self.tools = {t["name"]: t for t in tools}
        self.listing = [{k: v for k, v in t.items() if k != "_domain"} for t in tools]
        self.args = args
        self.out: IO[str] = sys.stdout
        self.lock = threading.Lock()
        self.log = open(args.log_file, "a", buffering=1) if args.log_file else None  # noqa: SIM115

    def send(self, message: JSON) -> None:
        line = json.dumps(message, separators=(",", ":")) + "\n"
        with self.lock:
            self.out.write(line)
            self.out.flush()

    def handle(self, message: JSON) -> None:
        """Answer one stdio message, a delayed call from a timer thread."""
        if message.get("method") == "tools/call" and self.args.call_delay_s > 0:
            timer = threading.Timer(self.args.call_delay_s, self.answer_to, (message,))
            timer.daemon = True
            timer.start()
            return
        self.answer_to(message)

    def answer_to(self, message: JSON) -> None:
        reply = self.answer(message)
        if reply is not None:
            self.send(reply)

    def answer(self, message: JSON) -> JSON | None:
        """The JSON-RPC response to `message`; None for a notification or a response."""
        method, request_id = message.get("method"), message.get("id")
        if method is None or request_id is None:
            return None
        if self.log is not None:
            self.log.write(f"{time.time():.3f} {method}\n")
        params = message.get("params") or {}
        try:
            result = self.result(method, params)
        except LookupError as exc:
            error = {"code": -32601, "message": str(exc)}
            return {"jsonrpc": "2.0", "id": request_id, "error": error}
        meta = params.get("_meta") or {}
        if meta.get(VERSION_KEY) == MODERN and method != "ping":  # the 2026-07-28 wire shape
            result["resultType"] = "complete"
            if method != "tools/call":
                result.update(ttlMs=0, cacheScope="private")
        return {"jsonrpc": "2.0", "id": request_id, "result": result}

    def result(self, method: str, params: JSON) -> JSON:
        if method == "initialize":
            asked = params.get("protocolVersion")
            return {
                "protocolVersion": asked if asked in LEGACY else LEGACY[0],
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": SERVER_INFO,
            }
        if method == "server/discover" and self.args.era == "dual":
            return {
                "supportedVersions": [MODERN, *LEGACY],
                "capabilities": {"tools": {"listChanged": False}},
                "_meta": {"io.modelcontextprotocol/serverInfo": SERVER_INFO},
            }
        if method == "ping":
            return {}
        if method == "tools/list":
            return self.page(params.get("cursor"))
        if method == "tools/call":
            return self.call(params.get("name", ""), params.get("arguments") or {})
        raise LookupError(f"method not found: {method}")

    def page(self, cursor: str | None) -> JSON:
        size = self.args.page_size
        if size <= 0:
            return {"tools": self.listing}
        start = int(cursor or 0)
        result: JSON = {"tools": self.listing[start : start + size]}
        if start + size < len(self.listing):
            result["nextCursor"] = str(start + size)
        return result

    def call(self, name: str, arguments: JSON) -> JSON:
        if name not in self.tools:
            text = f"unknown tool: {name}"
            return {"content": [{"type": "text", "text": text}], "isError": True}
        echo = {"tool": name, "arguments": arguments}
        text = json.dumps(echo)
        return {"content": [{"type": "text", "text": text}], "structuredContent": echo}

    def serve(self) -> None:
        for line in sys.stdin:
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError:
                continue
            for item in message if isinstance(message, list) else [message]:
                if isinstance(item, dict):
                    self.handle(item)


def _serve_http(server: _Server, port: int) -> None:
    """Streamable HTTP without sessions: each POST answered with one JSON body (or 202 for a
    notification), no GET stream. Binds at once; requests wait until start-up is over."""
    ready = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def reply(self, status: int, body: JSON | None = None) -> None:
            data = json.dumps(body).encode() if body is not None else b""
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            ready.wait()
            try:
                message = json.loads(body)
            except ValueError:
                self.reply(400, {"jsonrpc": "2.0", "id": None, "error": {"code": -32700}})
                return
            if message.get("method") == "tools/call":
                time.sleep(server.args.call_delay_s)
            answer = server.answer(message)
            self.reply(202) if answer is None else self.reply(200, answer)

        def do_GET(self) -> None:
            self.reply(405)

        def do_DELETE(self) -> None:
            self.reply(405)

    httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    httpd.daemon_threads = True
    url = f"http://127.0.0.1:{httpd.server_address[1]}/mcp"
    print(f"big_server: serving {url}", file=sys.stderr, flush=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    _start_up(server.args)
    ready.set()
    threading.Event().wait()


def _start_up(args: argparse.Namespace) -> None:
    _burn(args.start_cpu_s)
    if args.init_delay_s > 0:
        time.sleep(args.init_delay_s)  # busy starting: requests wait


def _burn(cpu_s: float) -> None:
    """Spend `cpu_s` of this process's CPU time (longer in wall time on busy cores)."""
    end = time.process_time() + cpu_s
    while time.process_time() < end:
        sum(range(10_000))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tools", type=int, default=100, help="tools this server serves")
    parser.add_argument("--catalog-size", type=int, help="size of the shared catalog (--tools)")
    parser.add_argument("--offset", type=int, default=0, help="first tool of the shared catalog")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--prefix", default="", help="prepended to every tool name")
    parser.add_argument("--name", default=SERVER_INFO["name"], help="serverInfo name")
    parser.add_argument("--start-cpu-s", type=float, default=0.0, help="CPU burnt at start")
    parser.add_argument("--init-delay-s", type=float, default=0.0, help="then sleep")
    parser.add_argument("--call-delay-s", type=float, default=0.0)
    parser.add_argument("--page-size", type=int, default=0, help="tools/list page size (0: one)")
    parser.add_argument("--era", choices=("dual", "legacy"), default="dual")
    parser.add_argument("--log-file", help="append one line per request method")
    parser.add_argument("--http", type=int, metavar="PORT", help="streamable HTTP (0: any port)")
    return parser


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    size = args.catalog_size or args.tools
    tools = catalog(size, args.seed, start=args.offset, stop=args.offset + args.tools)
    for tool in tools:
        tool["name"] = args.prefix + tool["name"]
    SERVER_INFO["name"] = args.name
    if args.http is not None:
        _serve_http(_Server(tools, args), args.http)
        return
    _start_up(args)  # meanwhile requests wait in the pipe
    _Server(tools, args).serve()


if __name__ == "__main__":
    main()
