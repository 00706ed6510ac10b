"""A hand-written stdio JSON-RPC upstream whose replies break the MCP result shapes on request.

No MCP library: it reads one JSON-RPC message a line and writes what each tool is meant to
send, so the client sees exactly these bytes. With `--modern` it answers `server/discover`
(protocol 2026-07-28, where every result carries `resultType`); without it, it answers
`server/discover` with "method not found", so the client falls back to `initialize`.

Tools: `echo` (a correct reply), `boot` (this process's pid), `content_not_list`
(`content` is a string), `text_not_string` (a text block whose `text` is a number),
`no_result_type` (a correct 2025 result, so on a 2026-07-28 connection it lacks
`resultType`), `garbage_first` (a line that is not JSON, then a correct reply),
`wire_size` (the size in bytes of the call's `arguments` JSON exactly as it arrived, and
whether those bytes were valid UTF-8). With `--surrogate` it also lists a tool whose name,
description and argument name hold lone surrogates.

`announce` (tools/list_changed every 2 ms for `seconds`, from a thread), `listed`
(that count), `crossed` (a 3 MB result sent on a line whose first `"id"` is the tools/list the gateway
sends after the call's `tools/list_changed`, and whose last, the one JSON keeps, is the
call's).

With `--pages N --page-tools K` its tools/list comes in N pages (a cursor each): the tools
above, then K more a page (`paged_<page>_<n>`, each described by `--description-chars`
characters, default 200); with `--junk-chars N` each page also carries N characters
under a `_meta` given twice (the parser keeps the second, empty one).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import Any

MODERN = "--modern" in sys.argv
MODERN_VERSION = "2026-07-28"
LEGACY_VERSION = "2025-11-25"
_NO_ARGS = {"type": "object", "properties": {}}
_LAST_LINE = [b""]  # the request line being answered, as its bytes arrived
_CROSSED: list[Any] = []  # the id of a `crossed` call waiting for the next tools/list
_LISTED = [0]  # tools/list requests answered
_WRITING = threading.Lock()  # replies and announcements, one line at a time
_ARGS = sys.argv[1:]
PAGES = int(_ARGS[_ARGS.index("--pages") + 1]) if "--pages" in _ARGS else 1
PAGE_TOOLS = int(_ARGS[_ARGS.index("--page-tools") + 1]) if "--page-tools" in _ARGS else 0
JUNK_CHARS = int(_ARGS[_ARGS.index("--junk-chars") + 1]) if "--junk-chars" in _ARGS else 0
_DESCRIBED = "--description-chars"
DESCRIPTION_CHARS = int(_ARGS[_ARGS.index(_DESCRIBED) + 1]) if _DESCRIBED in _ARGS else 200
TOOLS = [
    {
        "name": "echo",
        "description": "Return the text unchanged.",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
    },
    {"name": "boot", "description": "This process's pid.", "inputSchema": _NO_ARGS},
    {
        "name": "content_not_list",
        "description": "Replies with content that is a string.",
        "inputSchema": _NO_ARGS,
    },
    {
        "name": "text_not_string",
        "description": "Replies with a text block whose text is a number.",
        "inputSchema": _NO_ARGS,
    },
    {
        "name": "no_result_type",
        "description": "Replies without resultType.",
        "inputSchema": _NO_ARGS,
    },
    {
        "name": "wire_size",
        "description": "The size in bytes of this call's arguments as they arrived.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
    },
    {"name": "crossed", "description": "A big result under two ids.", "inputSchema": _NO_ARGS},
    {
        "name": "announce",
        "description": "Announces tools/list_changed every 2 ms for `seconds`.",
        "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}}},
    },
    {
        "name": "listed",
        "description": "How many tools/list were answered.",
        "inputSchema": _NO_ARGS,
    },
    {
        "name": "garbage_first",
        "description": "Writes a line that is not JSON, then a correct reply.",
        "inputSchema": _NO_ARGS,
    },
]


def send(message: dict[str, Any]) -> None:
    with _WRITING:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def _announcing(seconds: float) -> None:
    """`tools/list_changed` every 2 ms for `seconds`, beside the replies."""
    ends = time.monotonic() + seconds
    while time.monotonic() < ends:
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        time.sleep(0.002)


def modern(result: dict[str, Any]) -> dict[str, Any]:
    """A result as a 2026-07-28 server sends it (2025 results carry no such fields)."""
    return {**result, "resultType": "complete"} if MODERN else result


def text(value: str) -> dict[str, Any]:
    return modern({"content": [{"type": "text", "text": value}], "isError": False})


def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    if name == "echo":
        return text(str(arguments.get("text", "")))
    if name == "boot":
        return text(json.dumps({"pid": os.getpid()}))
    if name == "content_not_list":
        return modern({"content": "this should be a list", "isError": False})
    if name == "text_not_string":
        return modern({"content": [{"type": "text", "text": 42}], "isError": False})
    if name == "no_result_type":
        return {"content": [{"type": "text", "text": "no resultType"}], "isError": False}
    if name == "wire_size":
        return text(json.dumps(_raw_arguments(_LAST_LINE[0])))
    if name == "garbage_first":
        sys.stdout.write("this line is not JSON-RPC\n")
        return text("after garbage")
    return modern({"content": [{"type": "text", "text": f"unknown tool {name}"}], "isError": True})


def _raw_arguments(line: bytes) -> dict[str, Any]:
    """The `arguments` object of a tools/call line, measured in the bytes that carried it."""
    try:
        decoded, utf8 = line.decode("utf-8"), True
    except UnicodeDecodeError:
        decoded, utf8 = line.decode("utf-8", "surrogateescape"), False
    key = decoded.index('"arguments"')
    start = decoded.index(":", key) + 1
    while decoded[start] in " \t":
        start += 1
    _, end = json.JSONDecoder().raw_decode(decoded, start)
    raw = decoded[start:end].encode("utf-8", "surrogateescape")
    return {"bytes": len(raw), "utf8": utf8}


def answer(request: dict[str, Any]) -> dict[str, Any] | None:
    method, params = request.get("method"), request.get("params") or {}
    if method == "server/discover":
        if not MODERN:
            return {"error": {"code": -32601, "message": "Method not found"}}
        return {
            "result": {
                "supportedVersions": [MODERN_VERSION],
                "capabilities": {"tools": {"listChanged": False}},
                "ttlMs": 0,
                "cacheScope": "private",
                "resultType": "complete",
                "_meta": {
                    "io.modelcontextprotocol/serverInfo": {"name": "malformed", "version": "1"}
                },
            }
        }
    if method == "initialize":
        return {
            "result": {
                "protocolVersion": LEGACY_VERSION,
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": {"name": "malformed", "version": "1"},
            }
        }
    if method == "ping":
        return {"result": modern({})}
    if method == "tools/list" and _CROSSED:
        body = json.dumps(text("C" * 3_000_000))
        ids = json.dumps(request["id"]), json.dumps(_CROSSED.pop())
        sys.stdout.write(
            f'{{"jsonrpc": "2.0", "id": {ids[0]}, "result": {body}, "id": {ids[1]}}}\n'
        )
    if method == "tools/list":
        _LISTED[0] += 1
    if method == "tools/call" and params.get("name") == "announce":
        seconds = float((params.get("arguments") or {}).get("seconds", 1))
        threading.Thread(target=_announcing, args=(seconds,), daemon=True).start()
        return {"result": text(str(_LISTED[0]))}
    if method == "tools/call" and params.get("name") == "listed":
        return {"result": text(str(_LISTED[0]))}
    if method == "tools/call" and params.get("name") == "crossed":
        _CROSSED.append(request["id"])
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        return None
    if method == "tools/list":
        page = int(params.get("cursor") or 0)
        listed: dict[str, Any] = {"tools": _page(page)}
        if page + 1 < PAGES:
            listed["nextCursor"] = str(page + 1)
        if JUNK_CHARS:  # a page big on the wire, small once parsed: its `_meta` given twice
            small = json.dumps({**listed, "_meta": {}})
            junk = f'{{"_meta": "{"x" * JUNK_CHARS}", {small[1:]}'
            sys.stdout.write(
                f'{{"jsonrpc": "2.0", "id": {json.dumps(request["id"])}, "result": {junk}}}\n'
            )
            return None
        return {
            "result": modern({**listed, "ttlMs": 0, "cacheScope": "private"} if MODERN else listed)
        }
    if method == "tools/call":
        return {"result": call(str(params.get("name")), params.get("arguments") or {})}
    return {"error": {"code": -32601, "message": f"Method not found: {method}"}}


if "--surrogate" in _ARGS:  # sent as JSON escapes, as any JSON encoder may: `"\\ud800"`
    TOOLS.append(
        {
            "name": "lone\ud800",
            "description": "A lone surrogate \udc80 in its name, text and argument name.",
            "inputSchema": {"type": "object", "properties": {"x\ud800": {"type": "string"}}},
        }
    )


def _page(page: int) -> list[dict[str, Any]]:
    extra = [
        {
            "name": f"paged_{page}_{n}",
            "description": "x" * DESCRIPTION_CHARS,
            "inputSchema": _NO_ARGS,
        }
        for n in range(PAGE_TOOLS)
    ]
    return (TOOLS if page == 0 else []) + extra


def main() -> None:
    for line in sys.stdin.buffer:
        _LAST_LINE[0] = line
        try:
            request = json.loads(line)
        except ValueError:
            continue
        if "id" not in request or "method" not in request:
            continue  # a notification or a response: nothing to answer
        reply = answer(request)
        if reply is not None:
            send({"jsonrpc": "2.0", "id": request["id"], **reply})


if __name__ == "__main__":
    main()
