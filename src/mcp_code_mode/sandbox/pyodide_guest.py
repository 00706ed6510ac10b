"""The Python side of the Pyodide runner: prepare the interpreter, run one `run` line.

Loaded into Pyodide's in-memory file system by `pyodide_runner.mjs` together with
`guest.py`, `protocol.py` and `worker.py`; never imported by the host. Stdlib only.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import signal
import sys
from typing import Any

from mcp_code_mode.sandbox import worker
from mcp_code_mode.sandbox.guest import LAZY_HELPERS, GuestRuntime

__all__ = ["attach", "install_wheels", "preload", "run_line"]

_allowed: list[str] = []
_bridge: dict[str, Any] = {}
_index = worker.KnownIndex()  # a `run` without `index` uses the last one this runner got


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
    for module in [*_allowed, *LAZY_HELPERS]:
        with contextlib.suppress(ImportError):
            importlib.import_module(module)


def attach() -> None:
    """Take the JS bridge to the host, then hide the ways out of the Wasm sandbox."""
    from _mcp_host import arm_timer, exchange  # type: ignore[import-not-found]  # the JS bridge

    _bridge["exchange"] = exchange
    worker.soft_timer = (signal.SIGINT, lambda seconds: arm_timer(seconds * 1000))
    # Guest code reaches modules only through the allowlist importer; these also go from
    # sys.modules so that nothing preloaded hands out the JS bridge by name.
    for name in ("js", "pyodide_js", "_mcp_host"):
        sys.modules.pop(name, None)
    # Run the snippet path once, so the first real run does not pay for warming it up.
    runtime = GuestRuntime(lambda message: [], _allowed)
    exec(worker.compile_guest("_ = [1 + 1]\n_"), runtime.namespace({}, None))


def run_line(line: str) -> str:
    """Run one `run` message (a JSON line) and return the `done` message as a JSON line."""
    exchange = _bridge["exchange"]

    def send(message: dict[str, Any] | None) -> dict[str, Any]:
        # An empty line sends nothing: it only reads the host's next message (after a pause).
        reply: dict[str, Any] = json.loads(exchange("" if message is None else json.dumps(message)))
        return reply

    message = json.loads(line)
    run = worker.Run(send, int(message["max_output_chars"]))
    runtime = GuestRuntime(run.request, _allowed)
    done = worker.execute(message, run, runtime, index=_index.for_run(message))
    return json.dumps(done)
