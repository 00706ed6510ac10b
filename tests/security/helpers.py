"""Shared checks for the hostile-input suite: run a snippet, then prove nothing leaked or lingered.

Every case goes through `attempt()`, which asserts the things that must hold whatever the
snippet tried: the run returned within its time limit, the server's secret is nowhere in
the result, no sandbox process outlived the run, and a following `1+1` still answers 2.
The caller then asserts the case's own forbidden effect and the error type.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from mcp_code_mode.gateway import Gateway

from ..support import SECRET, live_processes, start_gateway

RUN_TIMEOUT_S = 2.0  # timeout_s for every case; runaway cases hit it
SLOW_MACHINE_TIMEOUT_S = 15.0  # a second chance for a case that is not a runaway
SLACK_S = 1.5  # a loaded 2-core machine: on top of the contract's timeout + 1 s
ESCAPED = "ESCAPED"  # guest snippets return this marker only when the escape worked
# Guest code makes no metaclass (`type` and every metaclass are sealed, `frozen_classes`):
# what a case built on one now meets first.
NO_METACLASS = "is not an acceptable base type"
_ZYGOTE = b"mcp_code_mode.sandbox.child.zygote"
_SEEN_WORKERS: set[int] = set()  # every worker pid observed; their sessions must die with them
_ZYGOTES_OF: dict[int, set[int]] = {}  # id(gateway) -> its zygote pids


_processes = live_processes


def worker_pids(gateway: Gateway | None = None) -> set[int]:
    """Live sandbox workers (children of a zygote) started from this test process.

    With `gateway` (one started by `start_sandboxed`), only the workers of its zygote.
    """
    table = _processes()
    zygotes = {
        pid for pid, (ppid, _, cmd) in table.items() if ppid == os.getpid() and _ZYGOTE in cmd
    }
    if gateway is not None:
        zygotes &= _ZYGOTES_OF.get(id(gateway), set())
    workers = {pid for pid, (ppid, _, _) in table.items() if ppid in zygotes}
    _SEEN_WORKERS.update(workers)
    return workers


async def start_sandboxed(config_path: Path, **overrides: Any) -> Gateway:
    """`start_gateway`, noting which zygote is the new gateway's (for per-gateway checks)."""
    before = zygote_pids()
    gateway = await start_gateway(config_path, **overrides)
    _ZYGOTES_OF[id(gateway)] = zygote_pids() - before
    return gateway


def zygote_pids() -> set[int]:
    """Live zygotes started from this test process."""
    return {
        pid
        for pid, (ppid, _, cmd) in _processes().items()
        if ppid == os.getpid() and _ZYGOTE in cmd
    }


def orphans() -> set[int]:
    """Processes left in the session of a worker but not a worker themselves (escaped children)."""
    workers = worker_pids()
    return {
        pid
        for pid, (_, sid, _) in _processes().items()
        if sid in _SEEN_WORKERS and pid not in workers
    }


async def wait_warm(gateway: Gateway) -> None:
    """Let the pool refill, so the next run takes a worker this module has already seen."""
    pool = gateway.executor.pool  # type: ignore[attr-defined]
    for _ in range(200):
        if pool.idle_count >= pool.size:
            break
        await asyncio.sleep(0.01)
    worker_pids()


async def assert_no_strays(gateway: Gateway, *, wait_s: float = 3.0) -> None:
    """Soon after a run, every live worker is an idle one of the pool and nothing else remains."""
    pool = gateway.executor.pool  # type: ignore[attr-defined]
    deadline = time.monotonic() + wait_s
    while True:
        workers, escaped = worker_pids(gateway), orphans()
        if not escaped and len(workers) <= pool.idle_count:
            return
        if time.monotonic() > deadline:
            pytest.fail(
                f"sandbox processes outlived the run: workers {sorted(workers)} "
                f"(idle in the pool: {pool.idle_count}), escaped {sorted(escaped)}"
            )
        await asyncio.sleep(0.02)


def reached(out: dict[str, Any], marker: str = ESCAPED) -> bool:
    """Whether `marker` came back in what the guest produced (not in its echoed source lines)."""
    return marker in json.dumps([out["result"], out["stdout"], out["logs"]])


def error_type(out: dict[str, Any]) -> str:
    """The run's error type, or "OK" when it succeeded."""
    return "OK" if out["error"] is None else str(out["error"]["type"])


async def attempt(
    gateway: Gateway,
    code: str,
    *,
    input: Any = None,
    timeout_s: float = RUN_TIMEOUT_S,
    warm: bool = True,
    runaway: bool = False,
) -> dict[str, Any]:
    """Run one hostile snippet and assert what must hold whatever it tried; return the result.

    `warm=False` when other runs are in flight (the pool refills only after a run ends).
    A snippet that is not a runaway (`runaway=False`) and still hits the time limit ran on
    a busy machine: it runs once more with a generous limit, so its outcome is judged on
    what it did, not on how fast the machine was. Everything below is asserted either way.
    """
    if warm:
        await wait_warm(gateway)
    started = time.perf_counter()
    out = (await gateway.execute(code, input=input, timeout_s=timeout_s)).to_json()
    if not runaway and error_type(out) == "TIMEOUT":
        await assert_no_strays(gateway)
        await wait_warm(gateway)
        timeout_s = SLOW_MACHINE_TIMEOUT_S
        started = time.perf_counter()
        out = (await gateway.execute(code, input=input, timeout_s=timeout_s)).to_json()
    elapsed = time.perf_counter() - started
    assert elapsed < timeout_s + 1.0 + SLACK_S, f"the run took {elapsed:.2f}s: {out}"
    assert SECRET not in json.dumps(out), "the server's secret reached the guest"
    assert out["ok"] is (out["error"] is None)
    if not out["ok"]:
        assert out["result"] is None
        assert isinstance(out["error"]["line"], int | None)
    await assert_no_strays(gateway)
    follow_up = (await gateway.execute("1+1", timeout_s=10)).to_json()
    assert follow_up["result"] == 2, f"the next run failed after the hostile one: {follow_up}"
    return out


def hole(reason: str) -> pytest.MarkDecorator:
    """A known hole in the sandbox: the test must keep failing until src fixes it."""
    return pytest.mark.xfail(reason=reason, strict=True)


def table(*rows: tuple[Any, ...]) -> list[Any]:
    """`(id, *values)` or `(id, *values, hole(...))` rows as `pytest.param`s."""
    params = []
    for row in rows:
        marks = [v for v in row[1:] if isinstance(v, pytest.MarkDecorator)]
        values = [v for v in row[1:] if not isinstance(v, pytest.MarkDecorator)]
        params.append(pytest.param(*values, id=row[0], marks=marks))
    return params
