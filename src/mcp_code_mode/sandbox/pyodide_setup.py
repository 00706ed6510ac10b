"""What the Pyodide executor needs on disk: the npm `pyodide` package, Deno, snapshots.

`setup_pyodide()` installs the npm `pyodide` package into a cache with npm (from the npm
registry only); the Deno binary comes from the `deno` PyPI package (the `[pyodide]` extra).
Each configuration's prepared interpreter is kept as a memory snapshot beside it, and old
snapshots are pruned.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import time
from pathlib import Path

from ..errors import CodeModeError
from ..settings import cache_root

__all__ = [
    "NO_DENO",
    "PYODIDE_VERSION",
    "deno_binary",
    "prune_snapshots",
    "pyodide_dir",
    "setup_pyodide",
]

PYODIDE_VERSION = "0.29.4"
_KEPT_SNAPSHOTS = 3  # per Pyodide version: one per recent set of allowed imports and wheels
_SNAPSHOT_IN_USE_S = 3600.0  # younger snapshots are never pruned (their gateway may run)


def pyodide_dir(cache_dir: str | None = None) -> Path:
    """Where `setup_pyodide()` puts the npm package."""
    return cache_root(cache_dir) / f"pyodide-{PYODIDE_VERSION}" / "node_modules" / "pyodide"


def deno_binary() -> str | None:
    try:
        import deno  # the PyPI package that ships the binary ([pyodide] extra)

        path: str = deno.find_deno_bin()
        return path
    except (ImportError, FileNotFoundError, AttributeError):
        return shutil.which("deno")


NO_DENO = (
    "Deno to run Pyodide: the `deno` package of the [pyodide] extra (`pip install -e "
    "'.[pyodide]'` in a clone; `pipx install '.[pyodide]'` or `uv tool install '.[pyodide]'` "
    "for the command alone), or Deno (https://deno.com) on the PATH"
)
_NO_NODE = (
    "Node.js and npm to install Pyodide from the npm registry, once: e.g. "
    "`apt-get install nodejs npm` or https://nodejs.org"
)


def setup_pyodide(cache_dir: str | None = None) -> Path:
    """Install npm `pyodide` into the cache (from the npm registry only); returns its folder.
    What is missing (Deno to run it, Node.js and npm to install it) is said first, all of it."""
    target = pyodide_dir(cache_dir)
    missing = [] if deno_binary() is not None else [NO_DENO]
    installed = (target / "pyodide.mjs").is_file()
    npm = shutil.which("npm")
    if not installed and (npm is None or shutil.which("node") is None):
        missing.append(_NO_NODE)
    if missing:
        raise CodeModeError("the Pyodide executor needs " + "; and ".join(missing))
    if installed or npm is None:
        return target
    prefix = target.parent.parent
    prefix.mkdir(parents=True, exist_ok=True)
    command = [npm, "install", "--no-audit", "--no-fund", "--prefix", str(prefix)]
    proc = subprocess.run(
        [*command, f"pyodide@{PYODIDE_VERSION}"], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0 or not (target / "pyodide.mjs").is_file():
        raise CodeModeError(f"npm install pyodide@{PYODIDE_VERSION} failed:\n{proc.stderr[-2000:]}")
    return target


def prune_snapshots(keep: Path) -> None:
    """Remove all but the most recently used snapshots (20 MB each) beside `keep`, and none
    used within the last hour: a gateway of another configuration may be running on it."""
    snapshots = sorted(
        keep.parent.glob("snapshot-*.bin"), key=lambda p: p.stat().st_mtime, reverse=True
    )
    stale = time.time() - _SNAPSHOT_IN_USE_S
    for old in snapshots[_KEPT_SNAPSHOTS:]:
        with contextlib.suppress(OSError):
            if old != keep and old.stat().st_mtime < stale:
                old.unlink()


def _main() -> None:  # pragma: no cover - a manual check: python -m ...pyodide_setup
    print(setup_pyodide(), file=sys.stderr)


if __name__ == "__main__":
    _main()
