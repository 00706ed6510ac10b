"""Calls in flight to one upstream: bounded for all runs together, shared out between runs
(`upstreams.fair_share`; attack 128: one client's runs filled a shared upstream's queue).
Through a real gateway, real workers and a real stdio upstream."""

from __future__ import annotations

import asyncio

from mcp_code_mode.gateway import Gateway
from mcp_code_mode.upstreams.fair_share import FairShare, call_owner

from .support import TEST_SERVER, ConfigWriter, server_entry, start_gateway

BUSY = "call_tools([('testsrv', 'hold', {'seconds': 0.4}) for _ in range(8)])"


async def _gateway(write_config: ConfigWriter) -> Gateway:
    path = write_config({"testsrv": server_entry(TEST_SERVER)})
    return await start_gateway(path, pool_size=2, max_upstream_calls=2)


async def test_one_run_keeps_no_more_than_the_upstreams_places(
    write_config: ConfigWriter,
) -> None:
    gw = await _gateway(write_config)
    try:
        out = (await gw.execute(BUSY, timeout_s=30)).to_json()
    finally:
        await gw.aclose()
    assert out["ok"], out["error"]
    assert max(hit["peak"] for hit in out["result"]) == 2  # 8 before: the run's own bound


async def test_a_run_waiting_for_its_first_call_goes_ahead_of_a_busy_run(
    write_config: ConfigWriter,
) -> None:
    gw = await _gateway(write_config)
    try:
        busy = asyncio.create_task(gw.execute(BUSY, timeout_s=30))
        share = gw.manager._upstreams["testsrv"].share
        while not busy.done() and share.busy < 2:  # its first two calls are in flight
            await asyncio.sleep(0.01)
        other = (await gw.execute("tools.testsrv.hold(seconds=0)", timeout_s=30)).to_json()
        done = (await busy).to_json()
    finally:
        await gw.aclose()
    assert other["ok"] and done["ok"], (other["error"], done["error"])
    # The busy run holds both places; the first to free is the other run's: it arrives
    # third or fourth (a FIFO queue: ninth, after all eight of the busy run's calls).
    assert other["result"]["order"] <= 4, other["result"]
    assert sorted(hit["order"] for hit in done["result"]) != list(range(1, 9))


async def test_a_call_waiting_while_its_upstream_dies_goes_to_the_new_one(
    write_config: ConfigWriter,
) -> None:
    """It was sent on the dead connection once it had a place, and failed "connection
    lost" without ever having been sent (attack 134)."""
    path = write_config({"testsrv": server_entry(TEST_SERVER)})
    gw = await start_gateway(path, pool_size=2, max_upstream_calls=1)
    try:
        dying = asyncio.create_task(gw.execute("tools.testsrv.crash_after(seconds=1)"))
        share = gw.manager._upstreams["testsrv"].share
        while not dying.done() and share.busy < 1:
            await asyncio.sleep(0.01)
        waiting = (await gw.execute("tools.testsrv.echo(text='queued')", timeout_s=30)).to_json()
        died = (await dying).to_json()
    finally:
        await gw.aclose()
    assert died["error"]["type"] == "TOOL_ERROR", died
    assert waiting["ok"] and waiting["result"] == "queued", waiting["error"]


async def test_cancelled_waiters_give_their_places_on() -> None:
    share = FairShare(1)
    release = asyncio.Event()
    got: list[str] = []

    async def call(owner: str) -> None:
        call_owner.set(owner)
        async with share.turn():
            got.append(owner)
            await release.wait()

    first = asyncio.create_task(call("a"))
    await asyncio.sleep(0)
    waiting = [asyncio.create_task(call(name)) for name in ("b", "c", "d")]
    await asyncio.sleep(0)
    waiting[0].cancel()  # waiting: gone from the queue
    release.set()
    await asyncio.sleep(0)  # a's place is handed to c ...
    waiting[1].cancel()  # ... which is cancelled before it runs: d gets it
    await asyncio.gather(first, *waiting, return_exceptions=True)
    assert got == ["a", "d"]
    assert share.busy == 0 and not share._waiting and not share._held


async def test_one_run_leaves_a_quarter_of_the_places_to_the_others(
    write_config: ConfigWriter,
) -> None:
    """One run's calls that hung took all 16 places of a shared upstream, and every other
    client's call waited out their timeout (outside attack 143): a run holds at most three
    quarters of them, so another run's call is sent at once."""
    path = write_config({"testsrv": server_entry(TEST_SERVER)})
    gw = await start_gateway(path, pool_size=2, max_upstream_calls=4)
    hung = "call_tools([('testsrv', 'hold', {'seconds': 3}) for _ in range(4)])"
    try:
        busy = asyncio.create_task(gw.execute(hung, timeout_s=60))
        share = gw.manager._upstreams["testsrv"].share
        while not busy.done() and share.busy < 3:  # the three places it may hold
            await asyncio.sleep(0.01)
        other = (await gw.execute("tools.testsrv.hold(seconds=0)", timeout_s=60)).to_json()
        done = (await busy).to_json()
    finally:
        await gw.aclose()
    assert other["ok"] and done["ok"], (other["error"], done["error"])
    assert other["result"]["order"] == 4, other["result"]  # at once (it was fifth: after 3 s)
    assert max(hit["peak"] for hit in done["result"]) <= 4
    assert sorted(hit["order"] for hit in done["result"]) == [1, 2, 3, 5]
