"""What the scale benchmark reads from /proc and from the upstreams' request logs (Linux)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from pathlib import Path

__all__ = ["cpu_s", "descendants", "eras", "request_counts", "status_mb"]


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of `pid` (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (children, their children, ...)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError):
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                parents.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        kids = parents.get(todo.pop(), [])
        found += kids
        todo += kids
    return found


def status_mb(pid: int, key: str) -> float:
    """A /proc/PID/status memory line (`VmRSS`, `VmHWM`) in MB; 0 once the process is gone."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
    return 0.0


def request_counts(logs: Sequence[Path], since: float, until: float) -> dict[str, int]:
    """Requests per method that `big_server.py --log-file` logged between two `time.time()`s."""
    counts: dict[str, int] = {}
    for log in logs:
        with contextlib.suppress(OSError):
            for line in log.read_text().splitlines():
                stamp, _, method = line.partition(" ")
                if since <= float(stamp) < until:
                    counts[method] = counts.get(method, 0) + 1
    return counts


def eras(logs: Sequence[Path], since: float) -> dict[str, int]:
    """How many upstreams a client reached in each protocol era since `since`: one that was
    sent `initialize` is on the handshake era (the probe failed or timed out), else on
    2026-07-28 (`server/discover` only)."""
    counts = {"2026-07-28": 0, "handshake": 0, "none": 0}
    for log in logs:
        methods = set()
        with contextlib.suppress(OSError):
            for line in log.read_text().splitlines():
                stamp, _, method = line.partition(" ")
                if float(stamp) >= since:
                    methods.add(method)
        era = "handshake" if "initialize" in methods else "2026-07-28"
        counts[era if methods & {"initialize", "server/discover"} else "none"] += 1
    return counts
