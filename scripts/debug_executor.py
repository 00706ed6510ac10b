"""Mock MCP client: start the server over stdio, list its tools, run code, run a task.

    python scripts/debug_executor.py [--config mcp_servers.json]

Starts `python -m mcp_code_mode.executor_server` as a subprocess with a fastmcp Client,
checks tools/list, runs `execute_code` snippets against the demo upstreams and, when an LM
is configured in .env (DSPY_LM), runs `task` below through `run_task`. Prints a report and
exits non-zero when a check fails. Without an LM it skips only the agent part, saying so.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from fastmcp import Client
from fastmcp.client.transports import StdioTransport

task = "Which three countries have the most refunded order value? Give the amounts."

ROOT = Path(__file__).resolve().parent.parent
CHECKS = [
    ("arithmetic", "1 + 1", lambda r: r == 2),
    ("one upstream call", "tools.notes.get_note(note_id=1)['id']", lambda r: r == 1),
    (
        "filter in code",
        "rs = tools.data.list_orders(status='refunded')\nlen([o for o in rs if o['amount'] > 850])",
        lambda r: isinstance(r, int) and r > 0,
    ),
    (
        "concurrent calls",
        "call_tools([('data', 'get_customer', {'customer_id': i}) for i in (1, 2, 3)])",
        lambda r: [c["id"] for c in r] == [1, 2, 3],
    ),
    (
        "discovery",
        "search_tools('timezone conversion', limit=1)[0]['tool']",
        lambda r: r == "convert_time",
    ),
]


def report(ok: bool, name: str, detail: str) -> bool:
    print(f"[{'PASS' if ok else 'FAIL'}] {name}: {detail}")
    return ok


async def _settled_servers(client: Client[Any], wait_s: float = 120) -> list[dict[str, Any]]:
    """`list_servers` once no server is still `starting` (a busy machine starts them slowly;
    slow is not broken), or after `wait_s`."""
    deadline = time.monotonic() + wait_s
    while True:
        servers: list[dict[str, Any]] = json.loads(
            (await client.call_tool("list_servers", {})).content[0].text
        )
        if all(row["status"] != "starting" for row in servers) or time.monotonic() > deadline:
            return servers
        await asyncio.sleep(0.5)


async def main(config: str) -> int:
    # The server gets this environment (LM keys included); its workers and upstreams never do.
    transport = StdioTransport(
        sys.executable, ["-m", "mcp_code_mode.executor_server", "--config", config],
        env=dict(os.environ), cwd=str(ROOT), keep_alive=False,
    )  # fmt: skip
    ok = True
    started = time.perf_counter()
    async with Client(transport, init_timeout=120) as client:
        tools = await client.list_tools()
        names = sorted(t.name for t in tools)
        ok &= report(
            {"execute_code", "search_tools", "get_tool_docs", "list_servers"} <= set(names),
            "tools/list", f"{names} after {time.perf_counter() - started:.1f}s",
        )  # fmt: skip
        servers = await _settled_servers(client)
        for row in servers:
            ok &= report(
                row["status"] == "ok",
                f"server {row['name']}",
                row["error"] or f"{row['tool_count']} tools",
            )
        for name, code, check in CHECKS:
            result = await client.call_tool("execute_code", {"code": code}, raise_on_error=False)
            data: dict[str, Any] = json.loads(result.content[0].text)
            shown = json.dumps(data["result"] if data["ok"] else data["error"])[:160]
            ok &= report(
                data["ok"] and check(data["result"]),
                name,
                f"{shown} ({data['duration_ms']:.1f} ms)",
            )
        if "run_task" in names:
            print(f"\nrunning the agent on: {task}")
            result = await client.call_tool("run_task", {"task": task}, raise_on_error=False)
            text = result.content[0].text if result.content else ""
            if result.is_error:
                print(f"[FAIL] run_task: {text}")
                return 1
            data = json.loads(text)
            for number, step in enumerate(data.get("steps", []), 1):
                state = "ok" if step["ok"] else step["error"]["type"]
                print(f"--- step {number} ({state}) ---\n{step['code']}")
            ok &= report(
                not result.is_error and bool(data.get("answer")),
                "run_task",
                str(data.get("answer")),
            )
        else:
            print("\n[SKIP] run_task: no LM configured (set DSPY_LM in .env to run the agent part)")
    print(f"\n{'all checks passed' if ok else 'some checks FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", default=str(ROOT / "mcp_servers.json"))
    sys.exit(asyncio.run(main(parser.parse_args().config)))
