"""What one run can make the host keep (contract §7): names and error texts are clipped
where they are received, so a run's records stay small whatever its guest sends."""

from __future__ import annotations

import gc
from pathlib import Path

from mcp_code_mode.gateway import ERROR_CHARS, Gateway
from mcp_code_mode.memory import release_free_memory
from mcp_code_mode.run_router import RECORD_NAME_CHARS
from mcp_code_mode.sandbox.protocol import MAX_NAME_CHARS

CLIP_NOTE = 40  # "… [N more characters cut]"


async def test_huge_names_are_refused_unsent_and_kept_clipped(gateway: Gateway) -> None:
    code = (
        "try:\n    call_tool('s' * 100_000, 't' * 1_000_000, {})\n"
        "except ToolError as e:\n    r = e.message\nr"
    )
    out = (await gateway.execute(code, timeout_s=30)).to_json()
    assert out["ok"], out
    message = out["result"]
    assert len(message) < 2 * (RECORD_NAME_CHARS + CLIP_NOTE) + 200
    assert f"longer than the {MAX_NAME_CHARS:,}" in message and "not sent" in message
    (record,) = out["tool_calls"]
    assert not record["ok"]
    assert len(record["server"]) <= RECORD_NAME_CHARS + CLIP_NOTE
    assert len(record["tool"]) <= RECORD_NAME_CHARS + CLIP_NOTE


async def test_a_long_name_of_a_real_server_is_refused_too(gateway: Gateway) -> None:
    code = (
        f"try:\n    call_tool('testsrv', 'e' * {MAX_NAME_CHARS + 1}, {{}})\n"
        "except ToolError as e:\n    r = e.message\nr"
    )
    out = (await gateway.execute(code)).to_json()
    assert "the tool name is longer than the 1,000 characters" in out["result"], out


async def test_an_upstreams_long_error_text_is_clipped(gateway: Gateway) -> None:
    code = (
        "try:\n    tools.testsrv.fail(message='e' * 500_000)\n"
        "except ToolError as e:\n    r = len(e.message)\nr"
    )
    out = (await gateway.execute(code, timeout_s=30)).to_json()
    assert out["ok"], out
    assert ERROR_CHARS <= out["result"] <= ERROR_CHARS + CLIP_NOTE + 100


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


async def test_a_thousand_calls_with_megabyte_names_cost_the_host_little(
    gateway: Gateway,
) -> None:
    code = (
        "name = 'n' * 1_000_000\nserver = 's' * 100_000\nfailed = 0\n"
        "for i in range(1000):\n    try:\n        call_tool(server, name, {})\n"
        "    except ToolError:\n        failed += 1\nfailed"
    )
    await gateway.execute("1+1")
    gc.collect()
    release_free_memory()
    before = _rss_mb()
    out = (await gateway.execute(code, timeout_s=120)).to_json()
    gc.collect()
    release_free_memory()
    grown = _rss_mb() - before
    assert out["ok"] and out["result"] == 1000, out.get("error")
    assert grown <= 50, f"the host grew by {grown:.0f} MB"
