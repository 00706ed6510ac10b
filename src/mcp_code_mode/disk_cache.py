"""Cache files written off the build's path, one writer thread for the process.

The search index's caches (vectors, BM25 terms) write a file per upstream. At 700 upstreams
that is 1,400 files created and renamed, 1 to 2 s of a cold build spent waiting on the disk
while the index itself was ready. `write_later` hands a file to the writer thread and returns;
until it is on disk, `pending` gives the value back to a build in this process that looks for
it, so nothing is made twice. A write that fails is logged and costs making the value again
at the next start, nothing else. Python waits for the writer at exit (`concurrent.futures`
joins its threads), so a gateway that stops right after a build still leaves its cache.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import stat
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

__all__ = ["flush", "pending", "prune_later", "prune_oldest", "read_regular", "write_later"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

_lock = threading.Lock()
_pending: dict[Path, Any] = {}  # path → the value being written there


def write_later(path: Path, value: T, encode: Callable[[T], bytes], what: str) -> Future[bool]:
    """Write `encode(value)` to `path` atomically (readers see all of it or nothing), in the
    writer thread; the future says whether it was written. `pending(path)` is `value` until."""
    with _lock:
        _pending[path] = value
    try:
        return _writer().submit(_write, path, value, encode, what)
    except RuntimeError:  # the interpreter is exiting: a build that ended late writes nothing
        with _lock:
            _pending.pop(path, None)
        logger.debug("%s not written: the process is exiting", what)
        skipped: Future[bool] = Future()
        skipped.set_result(False)
        return skipped


def pending(path: Path) -> Any | None:
    """The value a `write_later` to `path` has not put on disk yet, if any."""
    with _lock:
        return _pending.get(path)


def prune_later(directory: Path, pattern: str, keep: int, what: str) -> None:
    """`prune_oldest`, in the writer thread after the writes handed to it before."""
    with contextlib.suppress(RuntimeError):  # the interpreter is exiting: pruned next time
        _writer().submit(prune_oldest, directory, pattern, keep, what)


def flush() -> None:
    """Wait until every write and prune handed to the writer so far is done."""
    _writer().submit(lambda: None).result()


def read_regular(path: Path, max_bytes: int = 1 << 31) -> bytes | None:
    """The bytes of `path` when it is a regular file of at most `max_bytes`, else None (a
    FIFO or a device put in its place would hang or exhaust a read). Raises OSError."""
    info = path.stat()
    if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
        return None
    with path.open("rb") as file:
        return file.read(max_bytes)


def prune_oldest(directory: Path, pattern: str, keep: int, what: str) -> None:
    """Delete all but the `keep` most recently written files of `directory` matching
    `pattern`; a failure (another process pruning, a gone directory) is only logged."""
    try:
        files = list(directory.glob(pattern))
        if len(files) <= keep:
            return
        files.sort(key=lambda p: p.stat().st_mtime)
        for stale in files[: len(files) - keep]:
            stale.unlink(missing_ok=True)
    except OSError as exc:
        logger.info("%s not pruned: %s", what, exc)


def _write(path: Path, value: T, encode: Callable[[T], bytes], what: str) -> bool:
    partial = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial.write_bytes(encode(value))
        partial.replace(path)  # atomic: readers see all or nothing
    except OSError as exc:  # a read-only or full disk costs making it again, nothing else
        logger.info("%s not written: %s", what, exc)
        _remove(partial)
        return False
    except Exception:  # the writer's boundary: a bad value must not stop later writes
        logger.exception("%s not written", what)
        _remove(partial)
        return False
    finally:
        with _lock:
            if _pending.get(path) is value:
                del _pending[path]
    return True


def _remove(partial: Path) -> None:
    """A write that failed half way leaves no file behind (a full disk stays full else)."""
    with contextlib.suppress(OSError):
        partial.unlink(missing_ok=True)


@functools.cache
def _writer() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="mcp-code-mode-cache-writer")
