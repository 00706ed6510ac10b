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

from mcp_code_mode.sandbox import worker
from mcp_code_mode.sandbox.isolation import detect_layers, die_with_parent
from mcp_code_mode.sandbox.protocol import encode

__all__ = ["main"]


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
    _preload(allowed)
    layers = detect_layers()
    gc.freeze()  # keep the collector from touching (and so copying) preloaded objects in workers
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # workers are reaped by the kernel
    control.sendall(encode({"op": "ready", "pid": os.getpid(), "layers": layers}))
    while True:
        message, fds, _, _ = socket.recv_fds(control, 1 << 16, 1)
        if not message:  # the host closed the channel: shut down
            os._exit(0)
        request = json.loads(message)
        workdir = tempfile.mkdtemp(prefix="mcp-code-")
        pid = os.fork()
        if pid == 0:
            control.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            worker.serve(fds[0], workdir=workdir, memory_mb=int(request["memory_mb"]),
                         allowed_imports=allowed, layers=layers)  # fmt: skip
            os._exit(0)
        for fd in fds:
            os.close(fd)
        control.sendall(encode({"op": "forked", "pid": pid, "workdir": workdir}))


if __name__ == "__main__":
    main()
