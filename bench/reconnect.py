"""Reconnect: from an upstream coming back to the first successful call through the gateway.

Each round kills a real upstream process and starts it again; the gateway (in this
process, local executor) keeps running. "Back" is the moment the new HTTP upstream
accepts connections on its port; from then on one client calls `tools.h.echo` through
`Gateway.execute` in a loop until a call succeeds, and the time to that success is
recorded. Cases: an HTTP upstream (2026-07-28, sessionless; and 2025-11-25, whose restart
forgets the session, so the gateway meets a 404, opens a new session and sends the call
again) restarted while idle; the same while the gateway already knew it was down (a call
failed meanwhile); the time until `list_servers` says `ok` again with no calls at all
(the background retry, with backoff); and a stdio upstream killed between calls, timed
from the kill, which includes starting a new process.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bench.common import QUIET, ROOT, Section, Table, bench_settings, p50, write_config
from mcp_code_mode.config import load_config
from mcp_code_mode.gateway import Gateway

SERVER = ROOT / "tests" / "servers" / "healing_upstream.py"
POLL_S = 0.01


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class _HttpUpstream:
    def __init__(self, *, legacy: bool) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.legacy = legacy
        self.proc: subprocess.Popen[bytes] | None = None

    async def start(self) -> float:
        """Start it; returns the perf_counter time its port first accepted a connection."""
        args = [sys.executable, str(SERVER), "--port", str(self.port)]
        self.proc = subprocess.Popen(
            [*args, "--legacy"] if self.legacy else args,
            env={**os.environ, **QUIET},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the upstream exited with {self.proc.returncode}")
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", self.port)
            except OSError:
                await asyncio.sleep(POLL_S)
                continue
            back = time.perf_counter()
            writer.close()
            await writer.wait_closed()
            return back
        raise RuntimeError("the upstream did not listen within 60 s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)
        self.proc = None


async def _until(check: Callable[[], Awaitable[bool]], limit_s: float = 60) -> float:
    """Poll `check` until it is true; the perf_counter time it first was."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if await check():
            return time.perf_counter()
        await asyncio.sleep(POLL_S)
    raise RuntimeError(f"not back within {limit_s:g} s")


def _caller(gw: Gateway, server: str) -> Callable[[], Awaitable[bool]]:
    async def call() -> bool:
        return (await gw.execute(f"tools.{server}.echo(text='x')", timeout_s=30)).ok

    return call


def _status_ok(gw: Gateway, server: str) -> Callable[[], Awaitable[bool]]:
    async def ok() -> bool:
        return any(r["name"] == server and r["status"] == "ok" for r in gw.list_servers())

    return ok


async def _http_case(gw: Gateway, up: _HttpUpstream, *, known_down: bool, calls: bool) -> float:
    """One round: kill, (maybe let a call fail), restart; ms from back to first success."""
    assert await _caller(gw, "h")()  # in use and answering (this also resets the backoff)
    up.stop()
    if known_down:
        assert not await _caller(gw, "h")()  # the gateway now knows it is down
    back = await up.start()
    done = await _until(_caller(gw, "h") if calls else _status_ok(gw, "h"))
    return (done - back) * 1000


async def _stdio_case(gw: Gateway) -> float:
    """One round: kill the stdio upstream; ms from the kill to the first successful call."""
    result = await gw.execute("tools.s.boot()['pid']")
    assert result.ok, result.error
    killed = time.perf_counter()
    os.kill(int(result.result), signal.SIGKILL)
    return (await _until(_caller(gw, "s")) - killed) * 1000


async def _gateway(directory: Path, servers: dict[str, Any]) -> Gateway:
    gw = Gateway(bench_settings(), load_config(write_config(directory, servers)))
    await gw.start()
    return gw


async def run(rounds: int = 5) -> Section:
    table = Table(["upstream", "case", "rounds", "p50 ms", "max ms"], align="llrrr")
    samples: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for era, legacy in (("2026-07-28", False), ("2025-11-25", True)):
            up = _HttpUpstream(legacy=legacy)
            await up.start()
            gw = await _gateway(Path(tmp), {"h": {"url": up.url, "timeout_s": 30}})
            try:
                for case, known_down, calls in (
                    ("restarted while idle; calls until one succeeds", False, True),
                    ("restarted after a call failed; calls until one succeeds", True, True),
                    (
                        "restarted after a call failed; no calls, until list_servers is ok",
                        True,
                        False,
                    ),
                ):
                    times = [
                        await _http_case(gw, up, known_down=known_down, calls=calls)
                        for _ in range(rounds)
                    ]
                    samples[f"{era}|{case}"] = times
                    table.rows.append(
                        [f"HTTP {era}", case, rounds, f"{p50(times):.1f}", f"{max(times):.1f}"]
                    )
            finally:
                await gw.aclose()
                up.stop()
        stdio = {"command": "python", "args": [str(SERVER)], "env": dict(QUIET), "timeout_s": 60}
        gw = await _gateway(Path(tmp), {"s": stdio})
        try:
            times = [await _stdio_case(gw) for _ in range(rounds)]
        finally:
            await gw.aclose()
        table.rows.append(
            [
                "stdio",
                "killed; calls until one succeeds (from the kill: includes the restart)",
                rounds,
                f"{p50(times):.1f}",
                f"{max(times):.1f}",
            ]
        )
    idle = samples["2026-07-28|restarted while idle; calls until one succeeds"]
    legacy_idle = samples["2025-11-25|restarted while idle; calls until one succeeds"]
    section = Section(
        "Reconnect",
        __doc__.split("\n\n", 1)[1].strip() if __doc__ else "",
        tables=[("", table)],
        notes=[
            "The background retry waits 0.1, 0.25, 0.5, 1, 2, then every 5 s after "
            "successive failures, so the no-call case depends on how long the upstream was "
            "down (here about as long as a fastmcp server takes to start); a call never "
            "waits for the backoff, it reconnects at once. A 2025-11-25 reconnect costs more "
            "round trips: the probe for 2026-07-28, initialize, initialized, then the call "
            "sent again; on any reconnect the tool list is fetched after the waiting call, "
            "in the background.",
            f"{os.cpu_count()} cores; the upstream, the gateway and its worker share them.",
        ],
    )
    section.headline["reconnect"] = (
        f"first successful call {p50(idle):.0f} ms (p50) after an HTTP upstream is back; "
        f"{p50(legacy_idle):.0f} ms when its session was lost (new session + resend)"
    )
    return section


if __name__ == "__main__":
    section = asyncio.run(run())
    print(section.tables[0][1].markdown())
    print("\n".join(section.notes))
