"""The warm pool and the zygote: fresh workers, no sharing, and no orphans even on SIGKILL."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from mcp_code_mode.gateway import Gateway
from mcp_code_mode.sandbox.local import Zygote
from mcp_code_mode.sandbox.pool import WorkerPool
from mcp_code_mode.sandbox.protocol import RunMessage
from mcp_code_mode.sandbox.pyodide import PyodideLauncher
from mcp_code_mode.settings import DEFAULT_ALLOWED_IMPORTS

from ..conftest import require_pyodide
from ..security.helpers import zygote_pids
from ..support import QUIET, TEST_SERVER, server_entry
from .test_local import _processes


def _descendants(root: int) -> set[int]:
    table = _processes()
    found, frontier = set(), {root}
    while frontier:
        children = {pid for pid, (ppid, _, _) in table.items() if ppid in frontier}
        frontier = children - found
        found |= children
    return found


async def test_pool_hands_out_distinct_warm_workers() -> None:
    pool = WorkerPool(
        size=2, launcher=Zygote(allowed_imports=DEFAULT_ALLOWED_IMPORTS), memory_mb=256
    )
    await pool.start()
    try:
        assert pool.idle_count == 2
        workers = await asyncio.gather(*(pool.acquire() for _ in range(5)))
        assert len({w.pid for w in workers}) == 5  # beyond the pool: forked on demand, not shared
        for worker in workers:
            pool.reap(worker)
        for _ in range(300):
            if pool.idle_count == 2:
                break
            await asyncio.sleep(0.01)
        assert pool.idle_count == 2
        assert not any(w.pid in {x.pid for x in pool._idle} for w in workers)
    finally:
        await pool.aclose()
    assert all(w.exited() for w in workers)
    assert not Path(workers[0].workdir).exists()


async def test_closing_right_after_a_release_still_disposes_of_the_worker() -> None:
    """A used worker's cleanup waits until the reply is out; closing the pool in that
    window disposes of it all the same, and starts no replacement."""
    pool = WorkerPool(
        size=2, launcher=Zygote(allowed_imports=DEFAULT_ALLOWED_IMPORTS), memory_mb=256
    )
    await pool.start()
    worker = await pool.acquire()
    try:
        pool.release(worker, reuse=False)
        assert not worker.exited()  # not yet: its cleanup is a few milliseconds away
    finally:
        await pool.aclose()
    assert worker.exited()
    assert not Path(worker.workdir).exists()
    assert pool.idle_count == 0
    await asyncio.sleep(0.05)  # past the deferred cleanup: nothing fires after the close
    assert pool.idle_count == 0 and not pool._starting


async def test_a_reusable_worker_comes_back_after_its_reset() -> None:
    """A Pyodide runner released for reuse is reset and handed out again (the next acquire
    waits the milliseconds of its reset rather than starting a runner); one released
    without reuse is disposed of and replaced."""
    require_pyodide()
    launcher = PyodideLauncher(allowed_imports=DEFAULT_ALLOWED_IMPORTS)
    pool = WorkerPool(size=1, launcher=launcher, memory_mb=256)
    await pool.start()
    try:
        worker = await pool.acquire()
        run: RunMessage = {
            "op": "run",
            "code": "1 + 1",
            "input": None,
            "index": {},
            "timeout_s": 10,
            "max_output_chars": 1000,
        }
        await worker.send(run)
        done = await worker.receive()
        assert done is not None and done["op"] == "done" and done["result"] == 2
        pool.release(worker, reuse=True)
        assert await pool.acquire() is worker
        pool.release(worker, reuse=False)
        for _ in range(300):
            if pool.idle_count == 1:
                break
            await asyncio.sleep(0.02)
        assert pool.idle_count == 1 and worker.exited()
        assert (await pool.acquire()).pid != worker.pid
    finally:
        await pool.aclose()


async def test_zygote_restarts_after_it_dies(gateway: Gateway) -> None:
    zygote_proc = gateway.executor.pool.launcher._proc  # type: ignore[attr-defined]
    assert zygote_proc is not None
    os.kill(zygote_proc.pid, signal.SIGKILL)
    await zygote_proc.wait()
    results = [(await gateway.execute("1+1")).result for _ in range(4)]
    assert results == [2, 2, 2, 2]


def _workdirs(pids: set[int]) -> set[Path]:
    """The scratch directories (`mcp-code-*`) that these processes work in."""
    found = set()
    for pid in pids:
        with contextlib.suppress(OSError):
            cwd = Path(os.readlink(f"/proc/{pid}/cwd"))
            if cwd.name.startswith("mcp-code-"):
                found.add(cwd)
    return found


async def test_killed_server_leaves_no_processes(tmp_path: Path) -> None:
    """SIGKILL gives the server no chance to clean up: its zygote kills the workers and
    removes their directories."""
    config = tmp_path / "mcp_servers.json"
    config.write_text(json.dumps({"servers": {"t": server_entry(TEST_SERVER)}}))
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcp_code_mode.executor_server", "--config", str(config)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={"PATH": os.defpath, **QUIET, "MCP_CODE_POOL_SIZE": "3"},
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            tree = _descendants(proc.pid)
            if len(tree) >= 5:  # upstream + zygote + 3 warm workers
                break
            await asyncio.sleep(0.1)
        assert len(tree) >= 5, tree
        await asyncio.sleep(0.5)  # the warm workers are in their directories by now
        workdirs = _workdirs(_descendants(proc.pid))
        assert len(workdirs) >= 3, workdirs
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                pipe.close()
    for _ in range(200):
        alive = {pid for pid in tree if pid in _processes()}
        if not alive:
            break
        await asyncio.sleep(0.05)
    assert not alive, f"left behind after SIGKILL of the server: {alive}"
    assert not {str(d) for d in workdirs if d.exists()}


async def test_zygote_closed_first_cleans_up_its_workers(tmp_path: Path) -> None:
    """A host that ends the zygote's channel with workers it never disposed of (as a
    crashed server does) leaves neither the workers nor their directories."""
    root = tmp_path / "scratch"
    root.mkdir()
    zygote = Zygote(allowed_imports=DEFAULT_ALLOWED_IMPORTS, scratch_root=str(root))
    await zygote.start()
    try:
        workers = [await zygote.fork(memory_mb=256) for _ in range(3)]
        assert len(list(root.iterdir())) == 3
        # A worker without its directory still counts (one that removed its own, say).
        shutil.rmtree(workers[0].workdir)
        workers.append(await zygote.fork(memory_mb=256))
    finally:
        await zygote.aclose()
    assert list(root.iterdir()) == []
    assert all(worker.exited() for worker in workers)
    for worker in workers:
        await worker.dispose()


async def test_stdio_session_end_stops_everything(tmp_path: Path) -> None:
    config = tmp_path / "mcp_servers.json"
    config.write_text(json.dumps({"servers": {"t": server_entry(TEST_SERVER)}}))
    transport = StdioTransport(
        sys.executable,
        ["-m", "mcp_code_mode.executor_server", "--config", str(config)],
        env={**QUIET, "MCP_CODE_POOL_SIZE": "2"},
        keep_alive=False,
    )
    async with Client(transport, init_timeout=60) as client:
        pid = (await client.call_tool("execute_code", {"code": "tools.t.pid()"})).structured_content
        assert pid is not None
        upstream = pid["result"]
    assert upstream not in _processes()


async def test_a_fork_cancelled_in_flight_leaves_no_directory(tmp_path: Path) -> None:
    """A caller cancelled while the zygote is forking for it (a server stopped during its
    start) never gets the worker: the directory the zygote made for it is removed."""
    root = tmp_path / "scratch"  # its own: other processes' directories are not counted
    root.mkdir()
    zygote = Zygote(allowed_imports=DEFAULT_ALLOWED_IMPORTS, scratch_root=str(root))
    await zygote.start()
    try:
        for attempt in range(40):  # cancelled at moments from before the request to after
            task = asyncio.create_task(zygote.fork(memory_mb=256))
            await asyncio.sleep(attempt * 0.0005)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                worker = await task
                await worker.dispose()
    finally:
        await zygote.aclose()
    await asyncio.sleep(0.2)
    assert list(root.iterdir()) == []


async def test_fork_after_the_zygote_was_sent_sigterm_gets_a_worker(tmp_path: Path) -> None:
    """SIGTERM (from an operator, or the kernel on the server's death) makes the zygote kill
    its workers and exit. A fork asked for meanwhile gets a worker from a new zygote."""
    root = tmp_path / "scratch"
    root.mkdir()
    before = zygote_pids()
    zygote = Zygote(allowed_imports=DEFAULT_ALLOWED_IMPORTS, scratch_root=str(root))
    await zygote.start()
    try:
        for _ in range(5):
            (current,) = zygote_pids() - before
            old = await zygote.fork(memory_mb=256)
            os.kill(current, signal.SIGTERM)
            new = await zygote.fork(memory_mb=256)  # at once: the zygote may still be exiting
            for _ in range(100):
                if old.exited():
                    break
                await asyncio.sleep(0.01)
            assert old.exited()  # killed by its zygote
            await old.dispose()
            await new.dispose()
    finally:
        await zygote.aclose()
    assert list(root.iterdir()) == []
