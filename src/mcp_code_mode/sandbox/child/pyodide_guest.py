"""The Python side of the Pyodide runner: prepare the interpreter, then run one `run` at a time.

Loaded into Pyodide's in-memory file system by `pyodide_runner.mjs` together with the rest
of `sandbox/child/` and `protocol.py`; never imported by the host. Stdlib only.

The host is reached through two character devices the runner registers, never through
Pyodide's JavaScript FFI (see the runner): `/dev/mcp_host` carries protocol lines both
ways, `/dev/mcp_timer` takes the run's time limit in milliseconds.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import os
import signal
import sys
from json import dumps, loads  # bound now: guest code may replace `json.dumps`
from typing import Any

from mcp_code_mode.sandbox.child import rewrite, worker
from mcp_code_mode.sandbox.child.guest import GuestRuntime
from mcp_code_mode.sandbox.child.lockdown import lock_down
from mcp_code_mode.sandbox.child.pyodide_loop import seal_webloop
from mcp_code_mode.sandbox.child.rules import preload_lazy_modules

__all__ = ["attach", "install_wheels", "preload", "run_next", "settle"]

_HOST_DEVICE = "/dev/mcp_host"
_TIMER_DEVICE = "/dev/mcp_timer"
_READ_BYTES = 1 << 20

_allowed: list[str] = []
_fds: dict[str, int] = {}
_index = worker.KnownIndex()  # the runner's JS adds the last index to a `run` without one
_session: dict[str, dict[str, Any]] = {}  # a session's namespace, made by its first run


def install_wheels(wheels: dict[str, str]) -> None:
    """Unpack pure-Python wheels (base64 by name) into site-packages; no network, no micropip."""
    import base64
    import io
    import site
    import zipfile

    target = site.getsitepackages()[0]
    modules = []
    for data in wheels.values():
        with zipfile.ZipFile(io.BytesIO(base64.b64decode(data))) as wheel:
            wheel.extractall(target)
            modules += [
                name[:-3].replace("/", ".").removesuffix(".__init__")
                for name in wheel.namelist()
                if name.endswith(".py") and ".dist-info/" not in name
            ]
    importlib.invalidate_caches()
    # Import every module now: runners start from a memory snapshot, which keeps loaded
    # modules but not the files they came from.
    for module in sorted(modules):
        with contextlib.suppress(Exception):
            importlib.import_module(module)


def preload(allowed_imports: list[str]) -> None:
    """Import the allowed modules (before a memory snapshot, so every runner starts warm)."""
    _allowed[:] = list(allowed_imports)
    for module in _allowed:
        with contextlib.suppress(ImportError):
            importlib.import_module(module)
    preload_lazy_modules()


def attach() -> None:
    """Open the devices to the host, then hide the ways out of the Wasm sandbox."""
    _fds["host"] = os.open(_HOST_DEVICE, os.O_RDWR)
    _fds["timer"] = os.open(_TIMER_DEVICE, os.O_WRONLY)
    worker.soft_timer = (signal.SIGINT, _arm_timer)
    # Guest code reaches modules only through the allowlist importer; these also go from
    # sys.modules so that nothing preloaded hands out a JS object by name.
    for name in ("js", "pyodide_js"):
        sys.modules.pop(name, None)
    seal_webloop()  # asyncio's loop there calls JavaScript: no JS error may reach the guest
    # Run the snippet path once, so the first real run does not pay for warming it up.
    runtime = GuestRuntime(lambda message: [], _allowed)
    exec(rewrite.compile_guest("_ = [1 + 1]\n_"), runtime.namespace({}, None))
    lock_down(_allowed)


def settle() -> None:
    """Collect garbage before the runner copies the state every run starts from."""
    gc.collect()


def run_next() -> None:
    """Read one `run` message from the host, run it, and write the `done` message back.

    A session's runs share one namespace (the runner serves only that session and is
    never reset: the host disposes of it when the session ends).
    """
    message = loads(_read_line())
    run = worker.Run(_exchange, int(message["max_output_chars"]))
    namespace = _session.setdefault("namespace", {}) if message.get("session") else None
    done = worker.execute(
        message,
        run,
        GuestRuntime(run.request, _allowed, message.get("max_call_bytes")),
        namespace,
        index=_index.for_run(message),
    )
    _write_line(_encode(done))


def _exchange(message: dict[str, Any] | None) -> dict[str, Any]:
    # None sends nothing: it only reads the host's next message (after a pause).
    if message is not None:
        _write_line(_encode(message))
    reply: dict[str, Any] = loads(_read_line())
    return reply


def _encode(message: Any) -> str:
    # Explicit separators: guest code may change JSONEncoder's class-level defaults.
    return dumps(message, separators=(",", ":"))


def _arm_timer(seconds: float) -> None:
    os.write(_fds["timer"], repr(seconds * 1000).encode())


def _read_line() -> str:
    """The host's next line (a device read serves one line at a time, ending in "\\n")."""
    parts: list[bytes] = []
    while True:
        chunk = os.read(_fds["host"], _READ_BYTES)
        if not chunk:
            raise EOFError("the host closed the runner's input")
        parts.append(chunk)
        if chunk.endswith(b"\n"):
            return b"".join(parts)[:-1].decode()


def _write_line(text: str) -> None:
    data = memoryview((text + "\n").encode())
    while data:
        data = data[os.write(_fds["host"], data) :]
