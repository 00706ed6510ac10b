"""The zygote: a preloaded, never-used process that forks one fresh worker per request.

Started by the host as `python -I -m mcp_code_mode.sandbox.child.zygote FD`, where FD is a Unix
socket to the host. It preloads the guest runtime and the allowed modules once, finds
which isolation layers work here, then serves `fork` requests: each carries a socket for
the new worker (SCM_RIGHTS). Forking this small process takes about a millisecond and
happens outside the server's event loop. Guest code never runs in the zygote, so every
worker starts from the same clean state. Stdlib only.

If the host goes away without disposing of its workers (it was SIGKILLed, or closed the
channel early), the zygote kills the workers it forked and removes their working
directories before it exits: the host can no longer do it.

The host also sends the guest index here (an `index` message, once per version): workers
forked after it arrived inherit it, and their runs need not carry it. The `forked` reply
says which version the new worker has.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import json
import os
import pkgutil
import select
import shutil
import signal
import socket
import sys
import tempfile
import time
from typing import Any

from mcp_code_mode.sandbox.child import landlock, namespaces, rewrite, seccomp, worker
from mcp_code_mode.sandbox.child.guest import GuestRuntime
from mcp_code_mode.sandbox.child.isolation import (
    confine,
    detect_layers,
    die_with_parent,
    set_cpu_limit,
)
from mcp_code_mode.sandbox.child.lockdown import lock_down
from mcp_code_mode.sandbox.child.output_mirror import OutputMirror
from mcp_code_mode.sandbox.child.rules import preload_lazy_modules
from mcp_code_mode.sandbox.protocol import decode, encode, write_message

__all__ = ["main", "serve"]


def _preload(modules: list[str]) -> None:
    for module in modules:
        # A module missing here is reported to the guest when it imports it.
        with contextlib.suppress(ImportError):
            importlib.import_module(module)


def _preload_packages(packages: list[str]) -> None:
    """The public submodules of the packages an operator added (`xml` gives
    `xml.etree.ElementTree`): a worker cannot load a module later when its uid may not read
    the interpreter's files (a Python beneath a home directory of mode 700), so the zygote
    loads them now, before the guest's view is locked down."""
    for name in packages:
        path = getattr(sys.modules.get(name), "__path__", None)
        if path is None:
            continue  # a module, not a package (or not importable: said at the guest's import)
        for found in pkgutil.walk_packages(path, f"{name}.", onerror=lambda _: None):
            parts = found.name.split(".")[1:]
            if any(part.startswith("_") or part in ("test", "tests") for part in parts):
                continue
            with contextlib.suppress(Exception):
                importlib.import_module(found.name)


class _Control:
    """The host's requests on the control socket: JSON lines, and the file descriptors sent
    with `fork` requests. One read may bring an `index` line together with the `fork` after
    it and that fork's descriptors; the host sends the next fork only after the reply."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._buffer = bytearray()
        self._fds: list[int] = []

    def next(self) -> dict[str, Any] | None:
        """The next request; None once the host is gone."""
        while (end := self._buffer.find(b"\n")) < 0:
            try:
                data, fds, _, _ = socket.recv_fds(self._sock, 1 << 16, 2)  # socket [, mirror]
            except ConnectionResetError:  # the host closed with a request unread: it is gone
                return None
            self._fds += fds
            if not data:
                return None
            self._buffer += data
        request: dict[str, Any] = json.loads(self._buffer[:end])
        del self._buffer[: end + 1]
        return request

    def take_fds(self) -> list[int]:
        """The descriptors received so far (those of the `fork` just read)."""
        fds, self._fds = self._fds, []
        return fds


def _exited(pidfd: int) -> bool:
    """Whether the process of `pidfd` has exited (its pidfd polls readable)."""
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    return bool(poller.poll(0))


class _Forked:
    """The workers forked so far that are alive or whose directories still exist.

    The host kills a worker and removes its directory when it disposes of it; such entries
    are dropped at the next fork, so this holds about a pool's worth. What is left when
    the host is gone is the zygote's to clean up (`remove_all`).
    """

    def __init__(self) -> None:
        # workdir -> (pid, pidfd): the pidfd while the worker may be alive, else None.
        self._workers: dict[str, tuple[int, int | None]] = {}

    def add(self, workdir: str) -> None:
        """Before the fork: the directory is tracked from the moment it exists."""
        for known, (pid, pidfd) in list(self._workers.items()):
            if pidfd is not None and _exited(pidfd):
                os.close(pidfd)
                pidfd = None
                self._workers[known] = (pid, None)
            # Alive, a worker is kept even without its directory (it may have removed it).
            if pidfd is None and not os.path.isdir(known):
                del self._workers[known]
        self._workers[workdir] = (0, None)

    def forked(self, workdir: str, pid: int) -> None:
        pidfd = None
        # A pidfd, not the pid: once the worker is gone its pid may be another process's.
        with contextlib.suppress(OSError):
            pidfd = os.pidfd_open(pid)
        self._workers[workdir] = (pid, pidfd)

    def close_in_worker(self) -> None:
        """In a new worker: its siblings' pidfds are not its to hold."""
        for _, pidfd in self._workers.values():
            if pidfd is not None:
                os.close(pidfd)
        self._workers.clear()

    def remove_all(self) -> None:
        """Kill the workers, wait (briefly) until they are gone, remove their directories."""
        alive = [(p, fd) for p, fd in self._workers.values() if fd is not None and not _exited(fd)]
        for pid, pidfd in alive:
            # While it lives, a worker's pid is its own and names its process group (it
            # called setsid): whatever it started goes too.
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        poller = select.poll()
        for _, pidfd in alive:
            poller.register(pidfd, select.POLLIN)
        waiting, deadline = {fd for _, fd in alive}, time.monotonic() + 1.0
        while waiting and (left := deadline - time.monotonic()) > 0:
            for pidfd, _ in poller.poll(left * 1000):
                waiting.discard(pidfd)
                poller.unregister(pidfd)
        for workdir in self._workers:
            shutil.rmtree(workdir, ignore_errors=True)
        self._workers.clear()


def main() -> None:
    control = socket.socket(fileno=int(sys.argv[1]))
    forked = _Forked()
    _exit_with_the_host(forked)
    requests = _Control(control)
    prepared = _prepare(requests, control)
    index = worker.KnownIndex()
    while (request := requests.next()) is not None:
        if request.get("op") == "index":
            index = worker.KnownIndex(int(request["version"]), request["index"])
            gc.freeze()  # as in `_prepare`: workers share the index without copying it
            continue
        options = {**prepared, "index": index}
        if not _fork_one(request, requests.take_fds(), control, forked, options):
            break  # the host closed the pool mid-fork
    # The host closed the channel: what it did not dispose of is ours to clean up.
    worker.SET_HANDLER(signal.SIGTERM, signal.SIG_IGN)
    forked.remove_all()
    os._exit(0)


def _exit_with_the_host(forked: _Forked) -> None:
    """When the host dies the kernel sends SIGTERM (and the channel ends): clean up, exit."""
    zygote = os.getpid()

    def host_gone(signum: int, frame: object) -> None:
        if os.getpid() == zygote:  # not in a worker between its fork and its reset
            forked.remove_all()
        os._exit(0)

    worker.SET_HANDLER(signal.SIGTERM, host_gone)
    die_with_parent(signal.SIGTERM)


def _prepare(requests: _Control, control: socket.socket) -> dict[str, Any]:
    """Read `init`, preload, probe the layers, lock the guest's view down, say `ready`;
    the options every worker is served with."""
    init = requests.next()
    if init is None or init.get("op") != "init":
        os._exit(3)
    allowed = list(init["allowed_imports"])
    _preload(allowed)
    preload_lazy_modules()
    _preload_packages(list(init.get("whole_packages", [])))
    # Built once here, put in force by each worker (and by the probe, which checks them).
    landlock.prepare()
    seccomp.prepare()
    layers = detect_layers()
    shared = namespaces.Shared.make() if layers["seccomp"] else None
    lock_down(allowed, warm_up=_warm_up)  # every worker forked from here inherits it
    gc.freeze()  # keep the collector from touching (and so copying) preloaded objects in workers
    worker.SET_HANDLER(signal.SIGCHLD, signal.SIG_IGN)  # workers are reaped by the kernel
    try:
        control.sendall(encode({"op": "ready", "pid": os.getpid(), "layers": layers}))
    except (BrokenPipeError, ConnectionResetError):  # the host stopped as it started: no
        os._exit(0)  # traceback on its stderr (outside attack 140)
    return {"allowed_imports": allowed, "layers": layers, "shared": shared}


def _fork_one(
    request: dict[str, Any],
    fds: list[int],
    control: socket.socket,
    forked: _Forked,
    options: dict[str, Any],
) -> bool:
    """Fork the worker `request` asks for and tell the host; False if the host is gone."""
    workdir = tempfile.mkdtemp(prefix="mcp-code-")
    forked.add(workdir)
    pid = os.fork()
    if pid == 0:
        worker.SET_HANDLER(signal.SIGTERM, signal.SIG_DFL)
        forked.close_in_worker()
        control.close()
        worker.SET_HANDLER(signal.SIGCHLD, signal.SIG_DFL)
        mirror_fd = fds[1] if len(fds) > 1 else None
        memory_mb = int(request["memory_mb"])
        serve(fds[0], workdir=workdir, memory_mb=memory_mb, mirror_fd=mirror_fd, **options)
        os._exit(0)
    forked.forked(workdir, pid)
    for fd in fds:
        os.close(fd)
    index: worker.KnownIndex = options["index"]
    reply = {"op": "forked", "pid": pid, "workdir": workdir, "index_version": index.version}
    try:
        control.sendall(encode(reply))
    except (BrokenPipeError, ConnectionResetError):
        return False
    return True


def _warm_up(allowed_imports: list[str]) -> None:
    """Touch the run path once in the zygote, before any worker is forked."""
    runtime = GuestRuntime(lambda message: [], allowed_imports)
    exec(rewrite.compile_guest("_ = [1 + 1]\n_"), runtime.namespace({}, None))


_WARM_UP_RUN = {
    "op": "run",
    "code": "_ = call_tool('s', 't', {'n': 1})\n[_, 1 + 1]",
    "timeout_s": 60.0,
    "max_output_chars": 10_000,
    "input": None,
}
_WARM_UP_REPLY = {"op": "reply", "results": [{"ok": True, "value": {"n": 1}}]}
_DRAIN_BYTES = 65536  # what a done worker reads at a time while it waits for its end


def _warm_up_worker(
    allowed_imports: list[str], index: worker.KnownIndex, mirror: OutputMirror | None
) -> None:
    """Take a whole run's path once, a tool call's round trip included, before `ready`: a
    forked worker's first writes to the pages it shares with the zygote copy them, and
    this way they are copied while the worker waits, not in the run it is given."""
    message = decode(encode(_WARM_UP_RUN))
    set_cpu_limit(float(message["timeout_s"]))
    run = worker.Run(lambda request: decode(encode(_WARM_UP_REPLY)), 10_000, mirror)
    runtime = GuestRuntime(run.request, allowed_imports)
    encode(worker.execute(message, run, runtime, index=index.servers))


def serve(
    fd: int,
    *,
    workdir: str,
    memory_mb: int,
    allowed_imports: list[str],
    layers: dict[str, bool],
    index: worker.KnownIndex,
    shared: namespaces.Shared | None = None,
    mirror_fd: int | None = None,
) -> None:
    """In a freshly forked worker: confine this process, say `ready`, run one snippet (or a
    session's), report.

    `index` is the guest index inherited from the zygote (maybe none yet); `shared`, the
    zygote's namespaces for this worker to join.
    """
    sock = socket.socket(fileno=fd)
    mirror = None
    if mirror_fd is not None:
        mirror = OutputMirror(mirror_fd)  # mapped before the memory limit applies
        os.close(mirror_fd)
    pipe_in, pipe_out = sock.makefile("rb"), sock.makefile("wb")
    # The server's stderr is not the guest's to write: it would bypass the output cap.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    os.close(devnull)
    confine(workdir=workdir, memory_mb=memory_mb, layers=layers, shared=shared)
    _warm_up_worker(allowed_imports, index, mirror)
    status = 70  # whatever ends this worker, it ends here, by `os._exit`: the interpreter's
    try:  # own shutdown would run guest `__del__`s with the modules torn down (attack 34)
        write_message(pipe_out, {"op": "ready", "pid": os.getpid()})
        _serve_runs(_Exchange(pipe_in, pipe_out), allowed_imports, index, mirror)
        pipe_out.close()
        status = 0
    except (BrokenPipeError, ConnectionResetError):
        status = 0  # the host went away (pool closing): nothing to report to
    finally:
        os.chdir("/")
        with contextlib.suppress(OSError):
            os.rmdir(workdir)  # the host removes it too when it knows it; a cancelled fork does not
        os._exit(status)


class _Exchange:
    """The worker's side of the pipe: requests out, the matching reply (or a pause) back."""

    def __init__(self, pipe_in: Any, pipe_out: Any) -> None:
        self.pipe_in = pipe_in
        self.pipe_out = pipe_out
        self._request_id = 0

    def __call__(self, message: dict[str, Any] | None) -> dict[str, Any]:
        if message is not None:
            self._request_id = message["id"]
            write_message(self.pipe_out, message)
        while True:
            line = self.pipe_in.readline()
            if not line:  # the host is gone
                os._exit(3)
            reply = decode(line)
            if reply.get("op") == "pause":
                return reply
            if reply.get("op") == "reply" and reply.get("id") == self._request_id:
                return reply


def _serve_runs(
    exchange: _Exchange,
    allowed_imports: list[str],
    index: worker.KnownIndex,
    mirror: OutputMirror | None,
) -> None:
    """One `run`, or a session's runs one after another in one namespace, until EOF (after
    a single run: until the host, which has its `done`, ends the worker)."""
    namespace: dict[str, Any] | None = None
    while line := exchange.pipe_in.readline():  # EOF: the host is done with this worker
        message = decode(line)
        if message.get("op") != "run":
            continue  # e.g. a reply that arrived after its run had timed out
        set_cpu_limit(float(message["timeout_s"]))
        run = worker.Run(exchange, int(message["max_output_chars"]), mirror)
        if message.get("session") and namespace is None:
            namespace = {}
        runtime = GuestRuntime(run.request, allowed_imports, message.get("max_call_bytes"))
        done = worker.execute(message, run, runtime, namespace, index=index.for_run(message))
        write_message(exchange.pipe_out, done)
        if not message.get("session"):
            # Not `os._exit` yet: freeing this process's memory takes ~1 ms of the core the
            # host was just woken on, before it could read `done`. The host kills it.
            while exchange.pipe_in.read1(_DRAIN_BYTES):
                pass
            return


if __name__ == "__main__":
    main()
