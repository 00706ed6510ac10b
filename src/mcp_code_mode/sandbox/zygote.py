"""The zygote: a preloaded, never-used process that forks one fresh worker per request.

Started by the host as `python -I -m mcp_code_mode.sandbox.zygote FD`, where FD is a Unix
socket to the host. It preloads the guest runtime and the allowed modules once, finds
which isolation layers work here, then serves `fork` requests: each carries a socket for
the new worker (SCM_RIGHTS). Forking this small process takes about a millisecond and
happens outside the server's event loop. Guest code never runs in the zygote, so every
worker starts from the same clean state. Stdlib only.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import json
import os
import signal
import socket
import sys
import tempfile
from typing import Any

from mcp_code_mode.sandbox import worker
from mcp_code_mode.sandbox.guest import LAZY_HELPERS, GuestRuntime
from mcp_code_mode.sandbox.isolation import confine, detect_layers, die_with_parent, set_cpu_limit
from mcp_code_mode.sandbox.output_mirror import OutputMirror
from mcp_code_mode.sandbox.protocol import decode, encode, write_message

__all__ = ["main", "serve"]


def _preload(modules: list[str]) -> None:
    for module in modules:
        # A module missing here is reported to the guest when it imports it.
        with contextlib.suppress(ImportError):
            importlib.import_module(module)


def main() -> None:
    control = socket.socket(fileno=int(sys.argv[1]))
    die_with_parent()
    init = json.loads(control.recv(1 << 20) or b'{"op": "eof"}')
    if init.get("op") != "init":
        os._exit(3)
    allowed = list(init["allowed_imports"])
    _preload([*allowed, *LAZY_HELPERS])
    layers = detect_layers()
    gc.freeze()  # keep the collector from touching (and so copying) preloaded objects in workers
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # workers are reaped by the kernel
    control.sendall(encode({"op": "ready", "pid": os.getpid(), "layers": layers}))
    while True:
        message, fds, _, _ = socket.recv_fds(control, 1 << 16, 2)  # socket [, output mirror]
        if not message:  # the host closed the channel: shut down
            os._exit(0)
        request = json.loads(message)
        workdir = tempfile.mkdtemp(prefix="mcp-code-")
        pid = os.fork()
        if pid == 0:
            control.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            serve(fds[0], workdir=workdir, memory_mb=int(request["memory_mb"]),
                  allowed_imports=allowed, layers=layers,
                  mirror_fd=fds[1] if len(fds) > 1 else None)  # fmt: skip
            os._exit(0)
        for fd in fds:
            os.close(fd)
        try:
            control.sendall(encode({"op": "forked", "pid": pid, "workdir": workdir}))
        except (BrokenPipeError, ConnectionResetError):  # the host closed the pool mid-fork
            os._exit(0)


def _warm_up(allowed_imports: list[str]) -> None:
    """Touch the run path once before `ready`, so its copy-on-write page faults happen now."""
    runtime = GuestRuntime(lambda message: [], allowed_imports)
    exec(worker.compile_guest("_ = [1 + 1]\n_"), runtime.namespace({}, None))


def serve(
    fd: int, *, workdir: str, memory_mb: int, allowed_imports: list[str],
    layers: dict[str, bool], mirror_fd: int | None = None,
) -> None:  # fmt: skip
    """In a freshly forked worker: confine this process, say `ready`, run one snippet, report."""
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
    confine(workdir=workdir, memory_mb=memory_mb, layers=layers)
    _warm_up(allowed_imports)

    request_id = [0]

    def exchange(message: dict[str, Any] | None) -> dict[str, Any]:
        if message is not None:
            request_id[0] = message["id"]
            write_message(pipe_out, message)
        while True:
            line = pipe_in.readline()
            if not line:  # the host is gone
                os._exit(3)
            reply = decode(line)
            if reply.get("op") == "pause":
                return reply
            if reply.get("op") == "reply" and reply.get("id") == request_id[0]:
                return reply

    namespace: dict[str, Any] | None = None
    try:
        write_message(pipe_out, {"op": "ready", "pid": os.getpid()})
        while True:
            line = pipe_in.readline()
            if not line:  # the host is done with this worker (or gave up on it unused)
                break
            message = decode(line)
            if message.get("op") != "run":
                continue  # e.g. a reply that arrived after its run had timed out
            set_cpu_limit(float(message["timeout_s"]))
            run = worker.Run(exchange, int(message["max_output_chars"]), mirror)
            if message.get("session") and namespace is None:
                namespace = {}
            runtime = GuestRuntime(run.request, allowed_imports)
            write_message(pipe_out, worker.execute(message, run, runtime, namespace))
            if not message.get("session"):
                break
        pipe_out.close()
    except (BrokenPipeError, ConnectionResetError):
        pass  # the host went away (pool closing): nothing to report to
    finally:
        os.chdir("/")
        with contextlib.suppress(OSError):
            os.rmdir(workdir)  # the host removes it too when it knows it; a cancelled fork does not
    os._exit(0)


if __name__ == "__main__":
    main()
