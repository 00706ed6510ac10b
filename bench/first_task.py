"""The first `run_task` after `serve` starts, against the second: what loading the LM's stack
costs and whether the start's warm-up (`agent_lm.warm_up`) took it off the first task.

`python -m bench.first_task [--wait S] [--tasks N]`: serves the demo config over stdio with
DSPY_LM pointing at a loopback stub (tests/servers/stub_lm.py), connects a fastmcp `Client`,
waits S seconds (a person typing the first task), then times N `run_task` calls. Prints
seconds: connect (handshake answered), then each task.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import time
from typing import Any

from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from tests.servers.stub_lm import chat_reply, reply_kind, serve_stub


def _reply(body: dict[str, Any]) -> str:
    if reply_kind(body) == "write_code":
        return chat_reply(reasoning="Add them.", code="1 + 1", finished="True")
    return chat_reply(answer="2")


async def measure(wait_s: float, tasks: int) -> list[float]:
    with serve_stub(_reply) as stub:
        env = {**os.environ, "DSPY_LM": "openai/stub", "DSPY_API_BASE": stub.api_base}
        env |= {"FASTMCP_CHECK_FOR_UPDATES": "off", "FASTMCP_SHOW_SERVER_BANNER": "false"}
        command = shutil.which("mcp-code-mode") or "mcp-code-mode"
        started = time.perf_counter()
        async with Client(StdioTransport(command=command, args=["serve"], env=env)) as client:
            times = [time.perf_counter() - started]
            await asyncio.sleep(wait_s)
            for _ in range(tasks):
                began = time.perf_counter()
                done = await client.call_tool("run_task", {"task": "What is 1 + 1?"})
                assert (done.structured_content or {}).get("answer") == "2", done
                times.append(time.perf_counter() - began)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--wait", type=float, default=20.0, help="seconds before the first task")
    parser.add_argument("--tasks", type=int, default=3)
    args = parser.parse_args()
    times = asyncio.run(measure(args.wait, args.tasks))
    print(f"connect {times[0]:.2f} s; tasks: " + ", ".join(f"{t:.2f} s" for t in times[1:]))


if __name__ == "__main__":
    main()
