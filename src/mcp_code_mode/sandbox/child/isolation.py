"""OS isolation for worker processes: detected once in the zygote, applied in each worker.

Stdlib only (runs in the zygote and its forked workers). Each layer is tried, not assumed:
`detect_layers()` forks a probe child that applies them in a worker's order and reports
which ones took effect; a worker that cannot apply a reported layer exits before `ready`.

Layers, in the order a worker applies them:
- `network_namespace`, `ipc_namespace`: an empty network (no interfaces but a down
  loopback) and IPC namespace, not the host's, checked by the namespace's inode. As root
  directly; as another user inside a user namespace with no uid mapped (it appears as
  65534 and gains no rights over any file). Per worker, or, when seccomp holds (nothing
  can be created in them), made once in the zygote and joined (see `namespaces`).
  Without a network namespace, `socket_block` also disables connect/bind/sendto
  in-process, which alone is weak.
- `uid_drop`: each worker runs as a uid of its own (1,000,000 + its pid) with no groups
  (only when the zygote is root), so workers cannot signal or trace one another; with
  it, `rlimit_nproc` stops fork (root ignores RLIMIT_NPROC).
- `die_with_parent`, `no_new_privs`, rlimits on address space, CPU, open files, file size,
  core dumps and (`rlimit_nproc`) processes.
- `landlock`: reads only beneath the import paths, no writes or execs (see `landlock`).
- `seccomp`: no new sockets, SysV IPC, namespaces, ptrace... (see `seccomp`); reported
  only when the probe's socket() really failed with EPERM.

What this does not stop: reads beneath the import paths, CPU time up to the run's limit,
memory up to RLIMIT_AS, and whatever the kernel still lets an unprivileged process do
with the system calls left to it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import resource
import signal
import socket

from mcp_code_mode.sandbox.child import landlock, namespaces, seccomp

__all__ = [
    "NOBODY",
    "WORKER_UID_BASE",
    "confine",
    "detect_layers",
    "die_with_parent",
    "set_cpu_limit",
    "worker_uid",
]

NOBODY = 65534
WORKER_UID_BASE = 1_000_000  # + the worker's pid: above any real account, one uid per worker
_CONFINE_FAILED = 4  # exit status of a worker that could not apply a detected layer
_PR_SET_PDEATHSIG = 1
_PR_SET_NO_NEW_PRIVS = 38
_OPEN_FILES = 64

_c = namespaces.libc


def die_with_parent(signum: int = signal.SIGKILL) -> bool:
    """Ask the kernel to send `signum` (SIGKILL) to this process when its parent dies (Linux)."""
    try:
        return bool(_c().prctl(_PR_SET_PDEATHSIG, signum, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def worker_uid() -> int:
    """A uid of this worker's own (from its pid), so workers cannot signal one another."""
    return WORKER_UID_BASE + os.getpid()


def _drop_privileges(workdir: str | None) -> bool:
    if os.getuid() != 0:
        return False
    uid = worker_uid()
    try:
        if workdir is not None:
            os.chown(workdir, uid, uid)
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    except OSError:
        return False
    return os.getuid() == uid


def _block_sockets() -> None:
    """In-process fallback when there is no network namespace: refuse outgoing traffic."""
    import socket

    def refuse(*args: object, **kwargs: object) -> None:
        raise PermissionError("network access is disabled in the sandbox")

    for name in ("connect", "connect_ex", "bind", "sendto", "sendmsg"):
        setattr(socket.socket, name, refuse)
    socket.create_connection = refuse  # type: ignore[assignment]


def confine(
    *,
    workdir: str | None,
    memory_mb: int,
    layers: dict[str, bool],
    shared: namespaces.Shared | None = None,
) -> None:
    """Apply the layers `detect_layers()` found working, in the current (worker) process.

    `shared`: the zygote's namespaces to join instead of making new ones. A layer reported
    active that does not take effect here ends the process (status 4) rather than let guest
    code run without it.
    """
    os.setsid()
    if layers.get("network_namespace") or layers.get("ipc_namespace"):
        entered = shared.enter() if shared is not None else namespaces.enter_new()
        _require(all(entered[k] for k in entered if layers.get(k)))
    if not layers.get("network_namespace"):
        _block_sockets()
    if workdir is not None:
        os.chdir(workdir)
    if layers.get("uid_drop"):
        _require(_drop_privileges(workdir))
    die_with_parent()  # after the uid change, which clears it
    if layers.get("no_new_privs"):
        _require(_c().prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0)
    _set_limits(memory_mb, nproc=bool(layers.get("rlimit_nproc")))
    if layers.get("landlock"):
        _require(landlock.restrict())  # late: it also forbids reading /proc/self, used above
    else:
        landlock.release()
    if layers.get("seccomp"):
        _require(seccomp.install())  # last: guest code runs next


def _require(applied: bool) -> None:
    if not applied:
        os._exit(_CONFINE_FAILED)


def _set_limits(memory_mb: int, *, nproc: bool) -> None:
    address_space = _mapped_bytes() + memory_mb * 1024 * 1024
    limits = {
        resource.RLIMIT_AS: address_space,
        resource.RLIMIT_CORE: 0,
        resource.RLIMIT_FSIZE: 0,
        resource.RLIMIT_NOFILE: _OPEN_FILES,
    }
    if nproc:
        limits[resource.RLIMIT_NPROC] = 0
    for which, value in limits.items():
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(which, (value, value))


def _mapped_bytes() -> int:
    """This process's address space now (VmSize): `/proc/self/statm`'s first field, read
    with one system call (parsing `/proc/self/status` cost a worker 0.3 ms)."""
    fd = os.open("/proc/self/statm", os.O_RDONLY)
    try:
        pages = int(os.read(fd, 128).split()[0])
    finally:
        os.close(fd)
    return pages * resource.getpagesize()


def set_cpu_limit(seconds: float) -> None:
    """CPU-time backstop for a run: SIGXCPU, then SIGKILL, a little after the wall-clock limit."""
    used = resource.getrusage(resource.RUSAGE_SELF)
    soft = int(used.ru_utime + used.ru_stime + seconds) + 2
    # Only the soft limit moves: after the uid drop the hard one could not be raised again,
    # and an interpreter session sets this once per snippet. SIGXCPU at `soft` kills.
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


def detect_layers() -> dict[str, bool]:
    """Fork a probe that applies each layer as a worker would; return which ones held."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the probe
        os.close(read_fd)
        found = {"die_with_parent": die_with_parent(), **namespaces.enter_new()}
        found["uid_drop"] = _drop_privileges(None)
        with contextlib.suppress(OSError):
            found["no_new_privs"] = _c().prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0
        found["rlimit_nproc"] = _nproc_blocks_fork()
        found["landlock"] = bool(found.get("no_new_privs")) and landlock.restrict()
        found["seccomp"] = seccomp.install() and _sockets_refused()
        os.write(write_fd, ",".join(k for k, on in found.items() if on).encode())
        os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as pipe:
        names = pipe.read().decode().split(",")
    os.waitpid(pid, 0)
    layers = {name: name in names for name in _PROBED}
    if not layers["network_namespace"]:  # the weak fallback: named only where it stands in
        layers["socket_block"] = True
    return layers


_PROBED = (
    "die_with_parent",
    "network_namespace",
    "ipc_namespace",
    "uid_drop",
    "no_new_privs",
    "rlimit_nproc",
    "landlock",
    "seccomp",
)


def _sockets_refused() -> bool:
    """The filter's effect: socket() fails with EPERM while socketpair() still works."""
    try:
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM).close()
    except OSError as exc:
        refused = exc.errno == errno.EPERM
    else:
        return False
    try:
        for end in socket.socketpair():
            end.close()
    except OSError:
        return False
    return refused


def _nproc_blocks_fork() -> bool:
    if os.getuid() == 0:
        return False  # root ignores RLIMIT_NPROC
    try:
        resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))
        pid = os.fork()
    except OSError:
        return True
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return False
