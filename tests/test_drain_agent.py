"""A SIGTERM drain and a `run_task`: the task ends after the step it is in, with its reply."""

from __future__ import annotations

import asyncio
import itertools
import signal
import time
from pathlib import Path
from typing import Any

from fastmcp import Client

from .servers.stub_lm import chat_reply, reply_kind, serve_stub
from .test_http_serving import _config, serving, wait_ready

_STEP_S = 3.0  # each model reply takes this long


async def test_a_drain_ends_a_task_after_its_step_and_sends_its_reply(tmp_path: Path) -> None:
    """The drain waited one run and one approval wait, the task went on calling the model
    past SIGTERM, and its client got "SSE stream ended without a response" with none of its
    steps (outside attack 147)."""
    counter = itertools.count(1)

    def slow(body: dict[str, Any]) -> str:
        time.sleep(_STEP_S)
        if reply_kind(body) == "answer":
            return chat_reply(answer="stopped early")
        return chat_reply(reasoning="more", code=f"{next(counter)} + 1", finished="False")

    with serve_stub(slow) as stub:
        settings = {
            "DSPY_LM": "openai/slow",
            "DSPY_API_BASE": stub.api_base,
            "DSPY_TIMEOUT_S": "10",
            "DSPY_NUM_RETRIES": "0",
            "DSPY_MAX_STEPS": "8",  # 8 steps and an answer: 27 s, past the old 16 s drain
            "MCP_CODE_MAX_TIMEOUT_S": "5",
            "MCP_CODE_APPROVAL_TIMEOUT_S": "1",
        }
        async with serving(_config(tmp_path), tmp_path / "serve.log", **settings) as instance:
            await wait_ready(instance)
            async with Client(instance.url, timeout=120) as client:
                task = asyncio.ensure_future(client.call_tool("run_task", {"task": "Count."}))
                while len(stub.requests) < 2:  # a step is under way
                    await asyncio.sleep(0.1)
                instance.proc.send_signal(signal.SIGTERM)
                result = await task
            exited = await asyncio.to_thread(instance.proc.wait, 60)
        asked = len(stub.requests)
    reply = result.structured_content
    assert reply is not None and reply["error"]["type"] == "STOPPED", reply
    assert 1 <= len(reply["steps"]) < 8 and reply["steps"][0]["ok"], reply["steps"]
    assert exited == 0 and asked < 9, (exited, asked)
