"""What runs in a stdio upstream's process before its command, so that the upstream and what
it starts end with the gateway however the gateway ends (Linux; stdlib only).

`python -I -S with_parent.py GATEWAY_PID LC_CTYPE COMMAND ARGV...` (`stdio._dying_with_us`):

1. `PR_SET_PDEATHSIG`: SIGTERM to this process (kept across `exec`) when the gateway dies;
2. a watcher, forked twice so nobody has to reap it and in a process group of its own,
   that waits on the gateway's and the upstream's pidfds: when the gateway goes first
   (or within 2 s of the upstream) it ends the upstream's process group,
   helpers included (SIGTERM, then SIGKILL): a helper of an upstream killed outright lived
   on (outside attack 139); when the upstream goes first it just exits;
3. `execvp` of the command where the upstream runs, with its environment (its own PATH,
   relative entries read from its folder, as `subprocess` did: attack 139), and
   `LC_CTYPE` as the gateway gave it (`-` for unset: this Python's PEP 538 coercion sets
   it). A command that cannot run says so on stderr in one line and exits 126 or 127, as a
   shell does.
"""

import contextlib
import ctypes
import os
import select
import signal
import sys
import time

_PR_SET_PDEATHSIG = 1
_PR_SET_NAME = 15
WATCHER_NAME = b"mcp-cm-watcher"  # as `process_group.WATCHER_NAME` (this file is stdlib only)
_GRACE_S = 2.0  # between the SIGTERM and the SIGKILL of the group, once the gateway is gone


def main(argv: list[str]) -> None:
    gateway, ctype, command, args = int(argv[1]), argv[2], argv[3], argv[3:]
    os.environ.pop("LC_CTYPE", None)
    if ctype != "-":
        os.environ["LC_CTYPE"] = ctype[1:]
    ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != gateway:  # it is gone already
        os._exit(1)
    with contextlib.suppress(OSError, AttributeError):  # no pidfds: the death signal alone
        _watch(os.pidfd_open(gateway), os.pidfd_open(os.getpid()))
    try:
        os.execvp(command, args)
    except OSError as exc:
        print(f"{command}: {exc.strerror or exc}", file=sys.stderr, flush=True)
        os._exit(127 if isinstance(exc, FileNotFoundError) else 126)


def _watch(gateway_fd: int, upstream_fd: int) -> None:
    """Fork the watcher (twice: it is nobody's child to reap) and go on to the command."""
    upstream = os.getpid()
    if os.fork() == 0:
        if os.fork() == 0:
            _watcher(gateway_fd, upstream_fd, upstream)
        os._exit(0)
    os.wait()
    os.close(gateway_fd)
    os.close(upstream_fd)


def _watcher(gateway_fd: int, upstream_fd: int, upstream: int) -> None:
    # its name: a gateway that reaps orphans (PID 1, a subreaper) reaps it (`process_group`)
    ctypes.CDLL(None).prctl(_PR_SET_NAME, ctypes.c_char_p(WATCHER_NAME))
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # the upstream's pipes are not its to hold open
        os.dup2(null, fd)
    # the upstream leads a group of its own (`start_new_session`): never the gateway's;
    # this watcher leaves it, so the gateway's stop of that group never waits for it (its
    # zombie held a stop 2-4 s where orphans are reaped slowly: outside attack 140)
    own_group = os.getpgid(0) == upstream
    os.setpgid(0, 0)
    if _gateway_gone(gateway_fd, upstream_fd) and own_group:
        gone = bool(_ready([upstream_fd], 0))
        with contextlib.suppress(ProcessLookupError):
            os.killpg(upstream, signal.SIGTERM)
            if gone:  # its helpers get a moment to end
                time.sleep(_GRACE_S / 2)
            else:  # the upstream's exit, or the grace
                _ready([upstream_fd], _GRACE_S)
            os.killpg(upstream, signal.SIGKILL)
    os._exit(0)


def _gateway_gone(gateway_fd: int, upstream_fd: int) -> bool:
    """Wait until the gateway or the upstream ends; True if the gateway did. The death
    signal ends the upstream as the gateway's threads end, a moment before its pidfd says
    so: an upstream that goes first is waited past for the gateway (a helper lived on
    when the upstream went first by that moment: attack 140)."""
    done = _ready([gateway_fd, upstream_fd], None)
    if gateway_fd not in done:
        done = _ready([gateway_fd], _GRACE_S)
    return gateway_fd in done


def _ready(fds: list[int], timeout_s: float | None) -> set[int]:
    poll = select.poll()
    for fd in fds:
        poll.register(fd, select.POLLIN)
    return {fd for fd, _ in poll.poll(None if timeout_s is None else int(timeout_s * 1000))}


if __name__ == "__main__":
    main(sys.argv)
