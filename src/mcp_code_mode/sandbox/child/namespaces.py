"""The workers' network and IPC namespaces: made per worker, or once per zygote and shared.

A worker enters a network namespace with no interfaces but a down loopback, and an IPC
namespace of no objects; as a non-root user, first a user namespace with no uid mapped.
Made per worker (`unshare`), they cost a worker about 0.7 ms of CPU; joined (`setns`),
about 0.2 ms (BENCHMARKS.md: no end-to-end change beyond this machine's noise).

When the seccomp layer holds, a worker can create nothing in either namespace: `socket`
(every family, abstract Unix names included), SysV IPC and POSIX message queues are
refused. Then one set made in the zygote (`Shared.make`) serves every worker it forks:
each worker enters it with `setns` (kept alive by the zygote's descriptors) and nothing one
run does can be left there for the next. Without seccomp each worker makes its own.
Stdlib only.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
from typing import Any

__all__ = ["Shared", "enter_new", "libc"]

_CLONE_NEWNET = 0x40000000
_CLONE_NEWIPC = 0x08000000
_CLONE_NEWUSER = 0x10000000
# (kind in /proc/PID/ns, its clone flag), a user namespace first: it grants the others.
_KINDS = (("user", _CLONE_NEWUSER), ("net", _CLONE_NEWNET), ("ipc", _CLONE_NEWIPC))

_libc: Any = None


def libc() -> Any:
    """The C library, loaded once per process (the zygote's is what workers inherit)."""
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc


def _namespace_id(kind: str) -> int | None:
    try:
        return os.stat(f"/proc/self/ns/{kind}").st_ino
    except OSError:
        return None


def _entered(before: dict[str, int | None]) -> dict[str, bool]:
    return {
        f"{name}_namespace": before[kind] is not None and _namespace_id(kind) != before[kind]
        for kind, name in (("net", "network"), ("ipc", "ipc"))
    }


def enter_new() -> dict[str, bool]:
    """New network and IPC namespaces for this process; which ones it really got.

    Root unshares them directly; another user first enters a user namespace of its own.
    """
    before = {kind: _namespace_id(kind) for kind in ("net", "ipc")}
    for kind, flag in _KINDS:
        if kind != "user" or os.getuid() != 0:
            with contextlib.suppress(OSError, AttributeError):
                libc().unshare(flag)
    return _entered(before)


class Shared:
    """Namespaces made once (by a short-lived child of the zygote), entered by each worker."""

    def __init__(self, fds: list[tuple[int, int]]) -> None:
        self._fds = fds  # (descriptor of /proc/PID/ns/KIND, its clone flag)

    @classmethod
    def make(cls) -> Shared | None:
        """A child enters new namespaces and waits while we open them; None if it failed."""
        libc()  # loaded here once, not in every worker
        said, tell = os.pipe()
        wait, release = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(said)
            os.close(release)
            entered = enter_new()
            os.write(tell, b"1" if all(entered.values()) else b"0")
            os.read(wait, 1)  # until the zygote has opened them (or gave up)
            os._exit(0)
        os.close(tell)
        os.close(wait)
        fds: list[tuple[int, int]] = []
        if os.read(said, 1) == b"1":
            for kind, flag in _KINDS:
                if kind != "user" or os.getuid() != 0:
                    fd = os.open(f"/proc/{pid}/ns/{kind}", os.O_RDONLY | os.O_CLOEXEC)
                    fds.append((fd, flag))
        os.close(release)
        os.close(said)
        os.waitpid(pid, 0)
        return cls(fds) if fds else None

    def enter(self) -> dict[str, bool]:
        """In a worker: join the shared namespaces, then close their descriptors. Joined
        is what `setns` says (that they are new was checked when they were made)."""
        joined = all(libc().setns(fd, flag) == 0 for fd, flag in self._fds)
        self.close()
        return {"network_namespace": joined, "ipc_namespace": joined}

    def close(self) -> None:
        for fd, _ in self._fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds = []
