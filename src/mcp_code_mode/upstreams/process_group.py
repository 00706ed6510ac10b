"""The end of a stdio upstream's process group, once the upstream has exited (Linux and
other POSIX systems; what runs there is the upstream's own, `start_new_session`)."""

from __future__ import annotations

import os
import signal

import anyio

__all__ = ["end_group"]


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
            while _group_alive(pgid):
                await anyio.sleep(0.02)  # a scan of /proc each


def _group_alive(pgid: int) -> bool:
    """Whether a process of the group runs: a zombie waiting for init to reap it does not
    (orphans reaped about once a second held each stop 2-4 s: outside attack 140)."""
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    try:
        entries = os.listdir("/proc")
    except OSError:  # no procfs: as the kernel says
        return True
    return any(_running_in(entry, pgid) for entry in entries if entry.isdigit())


def _running_in(pid: str, pgid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return False
    return fields[2:3] == [str(pgid).encode()] and fields[0] != b"Z"
