"""The gateway's guest index follows the catalog and the servers' status (issue 19).

It is made once per version and reaches the workers forked after it through the zygote;
these tests change the catalog under real upstreams and run on workers of both kinds.
"""

from __future__ import annotations

import asyncio

from mcp_code_mode.gateway import Gateway

from .support import ConfigWriter, server_entry
from .test_upstream_healing import (
    HEALING_SERVER,
    HttpUpstream,
    eventually,
    run,
    start,
    status,
    value,
)


def _idle_versions(gw: Gateway) -> list[int | None]:
    return [worker.index_version for worker in gw.executor.pool._idle]  # type: ignore[attr-defined]


async def test_the_index_is_made_once_per_version(write_config: ConfigWriter) -> None:
    gw = await start(write_config({"t": server_entry(HEALING_SERVER)}))
    try:
        first = gw._guest_index()
        assert gw._guest_index() is first
        await value(gw, "call_tool('t', 'add_tool', {'name': 'fresh'})")
        changed = gw._guest_index()
        assert changed.version != first.version
        assert "fresh" in changed.servers["t"]["tools"]
    finally:
        await gw.aclose()


async def test_a_new_tool_reaches_workers_forked_after_it(write_config: ConfigWriter) -> None:
    gw = await start(write_config({"t": server_entry(HEALING_SERVER)}), pool_size=2)
    try:
        await value(gw, "call_tool('t', 'add_tool', {'name': 'fresh'})")
        version = gw._guest_index().version
        # The idle workers were forked before: their runs carry the new index.
        assert version not in _idle_versions(gw)
        for _ in range(3):
            assert (await value(gw, "tools.t.fresh()")) == "fresh ok"
        # Their replacements inherit it from the zygote; their runs carry no index.
        await eventually(lambda: _idle_versions(gw) == [version, version])
        assert (await value(gw, "[tools.t.fresh(), 'fresh' in dir(tools.t)]")) == [
            "fresh ok",
            True,
        ]
    finally:
        await gw.aclose()


async def test_a_server_that_is_down_says_why_until_its_tools_arrive(
    write_config: ConfigWriter,
) -> None:
    upstream = HttpUpstream(legacy=False)  # its port is chosen; nothing listens there yet
    gw = await start(
        write_config({"t": server_entry(HEALING_SERVER), "h": {"url": upstream.url}}),
        pool_size=2,
    )
    try:
        assert status(gw, "h")["status"] == "error"
        for text in ("anyone?", "still?"):  # on a worker forked before the index, then after
            out = await run(gw, f"tools.h.echo(text={text!r})")
            assert out["error"]["type"] == "TOOL_ERROR", out
            assert out["error"]["message"].startswith("ToolError: h.echo: ")
            assert upstream.url in out["error"]["message"]
            await asyncio.sleep(0.2)
        await upstream.start()
        try:
            await eventually(lambda: status(gw, "h")["status"] == "ok", within_s=30)
            for _ in range(3):  # on workers forked before the change, then after it
                assert (await value(gw, "tools.h.echo(text='back')")) == "back"
                await asyncio.sleep(0.1)
        finally:
            upstream.stop()
    finally:
        await gw.aclose()
