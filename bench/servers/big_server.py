"""A stdio MCP upstream with a big synthetic catalog that starts in 0.15 s (0.8 s at 10,000 tools).

    python bench/servers/big_server.py --tools 10000
    python bench/servers/big_server.py --catalog-size 1000 --offset 50 --tools 50 --name s01

fastmcp takes minutes to register 10,000 tools and `import mcp` costs ~2 s and ~60 MB a
process, so this is JSON-RPC over stdio by hand, stdlib only: `server/discover` (the
2026-07-28 era; `--era legacy` refuses it so clients fall back), `initialize`, `ping`,
`tools/list` (one page, or `--page-size`) and `tools/call`, which echoes the tool name and
arguments as structured content. Notifications are read and ignored.

The catalog is `big_catalog.catalog()`: the recall set's targets among generated
distractors, grouped by domain; `--catalog-size`, `--offset` and `--tools` pick one
upstream's slice of it.

`--start-cpu-s` burns that much CPU time before reading anything, as a Python server's imports
do (`import fastmcp` is ~1.7 s here), so many starting at once contend for the cores;
`--init-delay-s` then sleeps (a server that fetches its catalog at start-up and answers nothing
meanwhile); `--call-delay-s` delays every `tools/call` (in a thread, so
pings and listings still answer); `--log-file` appends one line per request method, which
shows how often a client lists tools or pings.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
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
        method, request_id = message.get("method"), message.get("id")
        if method is None or request_id is None:
            return  # a response or a notification: nothing to answer
        if self.log is not None:
            self.log.write(f"{time.time():.3f} {method}\n")
        params = message.get("params") or {}
        if method == "tools/call" and self.args.call_delay_s > 0:
            late = (request_id, params, method)
            timer = threading.Timer(self.args.call_delay_s, self.reply, late)
            timer.daemon = True
            timer.start()
            return
        self.reply(request_id, params, method)

    def reply(self, request_id: Any, params: JSON, method: str) -> None:
        try:
            result = self.result(method, params)
        except LookupError as exc:
            error = {"code": -32601, "message": str(exc)}
            self.send({"jsonrpc": "2.0", "id": request_id, "error": error})
            return
        meta = params.get("_meta") or {}
        if meta.get(VERSION_KEY) == MODERN and method != "ping":  # the 2026-07-28 wire shape
            result["resultType"] = "complete"
            if method != "tools/call":
                result.update(ttlMs=0, cacheScope="private")
        self.send({"jsonrpc": "2.0", "id": request_id, "result": result})

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
    return parser


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    size = args.catalog_size or args.tools
    tools = catalog(size, args.seed, start=args.offset, stop=args.offset + args.tools)
    for tool in tools:
        tool["name"] = args.prefix + tool["name"]
    SERVER_INFO["name"] = args.name
    _burn(args.start_cpu_s)
    if args.init_delay_s > 0:
        time.sleep(args.init_delay_s)  # busy starting: requests wait in the pipe
    _Server(tools, args).serve()


if __name__ == "__main__":
    main()
