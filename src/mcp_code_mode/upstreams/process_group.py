"""The end of a stdio upstream's process group, once the upstream has exited (Linux and
other POSIX systems; what runs there is the upstream's own, `start_new_session`)."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
from collections.abc import Iterator

import anyio

__all__ = ["WATCHER_NAME", "end_group", "reap_watchers"]

WATCHER_NAME = "mcp-cm-watcher"  # the name `with_parent` gives its watcher (comm, 15 bytes)
_PR_GET_CHILD_SUBREAPER = 37


async def end_group(pgid: int, kill_s: float) -> None:
    """End what is left of the upstream's process group once it has exited: a helper it
    started outlived it, and each restart left one more (attack 132). The group is the
    upstream's own (`start_new_session`); a helper that left it with `setsid` is not."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            return  # nobody left
        with anyio.move_on_after(kill_s):
            # a scan of /proc each, off the loop (16 ms with 1,000 processes: attack 140)
            while await anyio.to_thread.run_sync(_group_alive, pgid):
                await anyio.sleep(0.05)


def _group_alive(pgid: int) -> bool:
    """Whether a process of the group runs: a zombie waiting for init to reap it does not
    (orphans reaped about once a second held each stop 2-4 s: outside attack 140)."""
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    try:
        processes = list(_processes())
    except OSError:  # no procfs: as the kernel says
        return True
    group = str(pgid).encode()
    return any(fields[2:3] == [group] and fields[0] != b"Z" for _, _, fields in processes)


def _processes() -> Iterator[tuple[int, bytes, list[bytes]]]:
    """(pid, name, the fields after it) of each process `/proc` lists; one gone is skipped."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                head, tail = stat.read().rsplit(b")", 1)
        except (OSError, ValueError):
            continue
        yield int(entry), head.partition(b"(")[2], tail.split()


def reap_watchers() -> int:
    """Reap the launcher's watchers that ended as this process's children: orphans come to
    a gateway that is PID 1 (a container without an init) or a subreaper, and asyncio reaps
    only what it started (outside attack 140: a zombie per upstream start). How many."""
    if not sys.platform.startswith("linux") or not _reaps_orphans():
        return 0
    reaped, me, name = 0, str(os.getpid()).encode(), WATCHER_NAME.encode()
    for pid, comm, fields in _processes():
        if fields[:2] == [b"Z", me] and comm == name:
            with contextlib.suppress(ChildProcessError):
                reaped += os.waitpid(pid, os.WNOHANG)[0] != 0
    return reaped


def _reaps_orphans() -> bool:
    if os.getpid() == 1:
        return True
    flag = ctypes.c_int(0)
    ctypes.CDLL(None).prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(flag))
    return flag.value != 0
