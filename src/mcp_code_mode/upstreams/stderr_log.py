"""Where a stdio upstream's stderr goes: a pipe we read, not the terminal.

An upstream's expected errors (often a long rich traceback) are its own business; their
last lines appear in our error messages when it fails to start or dies, with the path of a
per-upstream log file holding all of it (`<cache>/mcp-code-mode/logs/<server>.log`, the
previous megabyte kept as `.log.1`). The pipe is also how we learn, at once and without
asking the transport, that the process has exited: its end of the pipe closes (once every
process that inherited it is gone).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from ..encodable import clean_text

__all__ = ["StderrLog", "log_path"]

_TAIL_BYTES = 2000
_TAIL_LINES = 5
_CHUNK_BYTES = 65536
_FILE_BYTES = 1_000_000  # of a log file, before it becomes `.log.1`


def log_path(directory: Path, server: str) -> Path:
    """The log file of `server` in `directory` (any name maps to a safe, distinct file)."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", server)[:80]
    digest = hashlib.sha256(server.encode("utf-8", "replace")).hexdigest()[:8]
    return directory / f"{safe}-{digest}.log"


class StderrLog:
    """The stderr of the upstream's current process: its last lines and its end.

    Args:
        path: the log file all of it is appended to; None keeps only the last lines.
    """

    def __init__(self, path: Path | None = None, redact: Callable[[str], str] = str) -> None:
        self.path = path
        self._redact = redact  # the config's `${VAR}` values: an upstream prints its key
        self._line = bytearray()  # the start of a line not yet written to the file
        self._tail = bytearray()
        self._write: TextIO | None = None
        self._reader: asyncio.Task[None] | None = None

    def open(self, on_exit: Callable[[], None]) -> TextIO:
        """A new pipe for the next process; hand the returned file to the transport.

        `on_exit` is called when the process (and all that inherited its stderr) is gone.
        Call `spawned` once the process runs, so only it holds the writing end.
        """
        self.close()
        self._tail.clear()
        read_fd, write_fd = os.pipe()
        self._write = os.fdopen(write_fd, "w", encoding="utf-8", errors="replace")
        self._reader = asyncio.create_task(self._read(read_fd, on_exit))
        return self._write

    def spawned(self) -> None:
        """Close our copy of the writing end: the pipe now ends with the process."""
        if self._write is not None:
            with contextlib.suppress(OSError):
                self._write.close()
            self._write = None

    @property
    def watching(self) -> bool:
        """Whether the pipe is open: its end will tell when the process exits."""
        return self._reader is not None and not self._reader.done()

    async def drained(self, *, timeout_s: float) -> None:
        """Wait (at most `timeout_s`) until everything the process wrote has been read."""
        if self._reader is not None and self._write is None:
            await asyncio.wait({self._reader}, timeout=timeout_s)

    def tail(self) -> str:
        """`; stderr: <last lines>` of what the process wrote, or nothing; cleaned of
        terminal escapes, controls and bidi overrides (it is shown to models and people)."""
        text = clean_text(self._tail.decode("utf-8", errors="replace"))
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        if not lines:
            return ""
        where = f" (all of it: {self.path})" if self.path is not None else ""
        return f"; stderr: {' | '.join(lines[-_TAIL_LINES:])}{where}"

    def close(self) -> None:
        """Stop reading (the process is being replaced or shut down)."""
        self.spawned()
        if self._reader is not None:
            self._reader.cancel()
            self._reader = None

    async def _read(self, fd: int, on_exit: Callable[[], None]) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()
        pipe = os.fdopen(fd, "rb", buffering=0)
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), pipe
        )
        try:
            while chunk := await reader.read(_CHUNK_BYTES):
                self._tail += chunk
                del self._tail[:-_TAIL_BYTES]
                self._keep(chunk)
        finally:
            transport.close()
            self._keep(b"", whole=True)
        on_exit()

    def _keep(self, chunk: bytes, *, whole: bool = False) -> None:
        """Append `chunk`'s whole lines to the log file, redacted (a secret the upstream
        printed was kept there as it came: a new user's first hour, M); a line longer
        than `_CHUNK_BYTES` is written in parts."""
        self._line += chunk
        end = len(self._line) if whole else self._line.rfind(b"\n") + 1
        if end == 0 and len(self._line) <= _CHUNK_BYTES:
            return
        end = end or len(self._line)
        lines, self._line = bytes(self._line[:end]), self._line[end:]
        self._append(self._redact(lines.decode("utf-8", "replace")).encode())

    def _append(self, data: bytes) -> None:
        """Append `data` to the log file (a full one becomes `.log.1` first); a file that
        cannot be written costs the file, nothing else."""
        if self.path is None or not data:
            return
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            if self.path.exists() and self.path.stat().st_size > _FILE_BYTES:
                self.path.replace(self.path.with_name(self.path.name + ".1"))
            # the user's alone: an upstream prints its own secrets (attack 136)
            flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
            with open(os.open(self.path, flags, 0o600), "ab") as file:
                file.write(data)
        except OSError:
            self.path = None  # not said again for every chunk
