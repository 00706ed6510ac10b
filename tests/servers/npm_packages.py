"""npm packages tests run (real third-party servers and clients), installed once into a cache.

`installed(name, packages, entry)` installs `packages` (npm specs) from the npm registry into
`$MCP_CODE_MODE_TEST_CACHE/<name>` (default ~/.cache/mcp-code-mode-tests/<name>) on first
use and returns `<that folder>/<entry>`. Only the standard library is used.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

__all__ = ["cache_root", "installed"]


def cache_root() -> Path:
    """`$MCP_CODE_MODE_TEST_CACHE` or ~/.cache/mcp-code-mode-tests."""
    root = os.environ.get("MCP_CODE_MODE_TEST_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "mcp-code-mode-tests"
    )
    return Path(root)


def installed(name: str, packages: Sequence[str], entry: str, timeout_s: float = 300.0) -> Path:
    """`entry` (a path under the install folder), `packages` installed there on first use.

    Installs into a temporary sibling folder and renames it into place, so two test
    processes that race here both end with a complete install (the loser's copy is dropped).
    """
    target = cache_root() / name
    if (target / entry).is_file():
        return target / entry
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError(f"npm is not installed; cannot install {' '.join(packages)}")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".installing-", dir=target.parent))
    try:
        command = [npm, "install", "--no-audit", "--no-fund", "--no-save", "--prefix", str(tmp)]
        subprocess.run([*command, *packages], check=True, capture_output=True, timeout=timeout_s)
        if not (tmp / entry).is_file():
            raise RuntimeError(f"npm install did not produce {tmp / entry}")
        with contextlib.suppress(OSError):  # another process won the race: keep theirs
            tmp.rename(target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if not (target / entry).is_file():
        raise RuntimeError(f"{' '.join(packages)}: {entry} not found after install")
    return target / entry
