"""A run's stdout and logs in shared memory, for when its worker cannot report them.

The host gives each local worker a memfd of `MIRROR_BYTES` (passed to the zygote with the
worker's socket). The worker maps it and appends every kept piece of stdout and every
log line as the guest produces them: plain memory writes, no system call per `print`.
When the host has to kill the worker (one long C call never sees the soft timer) or the
worker dies, `read_mirror` gives back what the run produced, as the contract asks of a
failed run. Past 3 MiB of stdout or 1 MiB of log lines a region stops taking more (the
worker's own `done` message still carries everything). Stdlib only: the worker imports it.
"""

from __future__ import annotations

import mmap
import os
import struct

__all__ = ["MIRROR_BYTES", "OutputMirror", "create_mirror_fd", "read_logs", "read_mirror"]

MIRROR_BYTES = 4 * 1024 * 1024  # pages are touched only as output is written
_HEADER = struct.Struct("<QQ")  # bytes of stdout, bytes of log records
_LOG_LENGTH = struct.Struct("<I")
_STDOUT_AT = _HEADER.size
_LOGS_AT = 3 * 1024 * 1024  # stdout gets 3 MiB, log lines the last 1 MiB


def create_mirror_fd() -> int | None:
    """A new memfd of MIRROR_BYTES for one worker; None where memfds do not exist."""
    if not hasattr(os, "memfd_create"):
        return None
    try:
        fd = os.memfd_create("mcp-code-output", os.MFD_CLOEXEC)
    except OSError:
        return None
    os.ftruncate(fd, MIRROR_BYTES)
    return fd


class OutputMirror:
    """The worker's side: append stdout and log lines to the shared mapping."""

    def __init__(self, fd: int) -> None:
        self._map = mmap.mmap(fd, MIRROR_BYTES)
        self._stdout = self._logs = 0  # bytes used in each region
        self._full = [False, False]  # stdout, logs: once a write did not fit, keep no more

    def reset(self) -> None:
        """Forget the previous run's output (interpreter sessions run many snippets)."""
        self._stdout = self._logs = 0
        self._full = [False, False]
        _HEADER.pack_into(self._map, 0, 0, 0)

    def stdout(self, text: str) -> None:
        data = text.encode("utf-8", "surrogatepass")  # guest text may hold lone surrogates
        start = _STDOUT_AT + self._stdout
        end = start + len(data)
        if end > _LOGS_AT or self._full[0]:
            self._full[0] = True
            return
        self._map[start:end] = data
        self._stdout += len(data)
        _HEADER.pack_into(self._map, 0, self._stdout, self._logs)  # after the bytes

    def log(self, line: str) -> None:
        data = line.encode("utf-8", "surrogatepass")
        start = _LOGS_AT + self._logs
        end = start + _LOG_LENGTH.size + len(data)
        if end > MIRROR_BYTES or self._full[1]:
            self._full[1] = True
            return
        _LOG_LENGTH.pack_into(self._map, start, len(data))
        self._map[start + _LOG_LENGTH.size : end] = data
        self._logs = end - _LOGS_AT
        _HEADER.pack_into(self._map, 0, self._stdout, self._logs)


def read_mirror(fd: int) -> tuple[str, list[str]]:
    """The host's side: the stdout and log lines a worker mirrored, however it ended."""
    header = os.pread(fd, _HEADER.size, 0)
    if len(header) < _HEADER.size:
        return "", []
    stdout_bytes, log_bytes = _HEADER.unpack(header)
    stdout = os.pread(fd, min(stdout_bytes, _LOGS_AT - _STDOUT_AT), _STDOUT_AT)
    records = os.pread(fd, min(log_bytes, MIRROR_BYTES - _LOGS_AT), _LOGS_AT)
    logs = []
    offset = 0
    while offset + _LOG_LENGTH.size <= len(records):
        (length,) = _LOG_LENGTH.unpack_from(records, offset)
        offset += _LOG_LENGTH.size
        logs.append(_text(records[offset : offset + length]))
        offset += length
    return _text(stdout), logs


def read_logs(fd: int, offset: int, max_bytes: int) -> tuple[list[str], int]:
    """The host's side, while the run works: log lines mirrored past byte `offset` of the
    log region (at most about `max_bytes` of them), and the offset after them."""
    header = os.pread(fd, _HEADER.size, 0)
    if len(header) < _HEADER.size:
        return [], offset
    log_bytes = min(_HEADER.unpack(header)[1], MIRROR_BYTES - _LOGS_AT)
    records = os.pread(fd, max(0, min(log_bytes - offset, max_bytes)), _LOGS_AT + offset)
    lines, used = [], 0
    while used + _LOG_LENGTH.size <= len(records):
        (length,) = _LOG_LENGTH.unpack_from(records, used)
        end = used + _LOG_LENGTH.size + length
        if end > len(records):
            if used == 0 and length > max_bytes:  # one line longer than a read: skip it
                return [_text(records[_LOG_LENGTH.size :])], offset + _LOG_LENGTH.size + length
            break
        lines.append(_text(records[used + _LOG_LENGTH.size : end]))
        used = end
    return lines, offset + used


def _text(data: bytes) -> str:
    """What the worker wrote, lone surrogates kept; bytes a broken worker wrote as U+FFFD."""
    try:
        return data.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return data.decode("utf-8", "replace")
