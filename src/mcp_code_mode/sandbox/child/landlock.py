"""Landlock (Linux ≥ 5.13): an unprivileged, irrevocable file-system and network policy.

Applied late in a worker's confinement (seccomp comes after it): read access only beneath
the interpreter's import paths (lazy stdlib imports still work); no writes, no new files,
no execution of any file (so `execve` fails), and — where the kernel's ABI has them — no
TCP bind/connect and no signals or abstract Unix sockets outside the worker. Stdlib only
(ctypes syscalls).

What it does not stop: connecting to an already world-writable pathname Unix socket
(the kernel ABI here has no right for that), and reads beneath the import paths.
"""

from __future__ import annotations

import ctypes
import functools
import os
import platform
import sys
from collections.abc import Iterable

__all__ = ["abi_version", "prepare", "release", "restrict"]

_SYSCALLS = {"x86_64": (444, 445, 446), "aarch64": (444, 445, 446)}
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1

_EXECUTE, _WRITE_FILE, _READ_FILE, _READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_FS_ABI1 = (1 << 13) - 1  # EXECUTE .. MAKE_SYM
_FS_BY_ABI = {1: _FS_ABI1, 2: _FS_ABI1 | 1 << 13, 3: _FS_ABI1 | 3 << 13, 5: _FS_ABI1 | 7 << 13}
_NET_TCP = 0b11  # BIND_TCP | CONNECT_TCP (ABI 4)
_SCOPES = 0b11  # ABSTRACT_UNIX_SOCKET | SIGNAL (ABI 6)


class _RulesetAttr(ctypes.Structure):
    _fields_ = (
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    )


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = (("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))


_prepared: int | None = None  # a ruleset built ahead by `prepare`, in this process


@functools.cache
def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


def _syscall(number: int, *args: object) -> int:
    return int(_libc().syscall(ctypes.c_long(number), *args))


def abi_version() -> int:
    """The kernel's Landlock ABI version; 0 when Landlock is unavailable."""
    numbers = _SYSCALLS.get(platform.machine())
    if numbers is None:
        return 0
    try:
        version = _syscall(numbers[0], None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    except (OSError, AttributeError):
        return 0
    return max(version, 0)


def _fs_rights(abi: int) -> int:
    return _FS_BY_ABI[max(k for k in _FS_BY_ABI if k <= abi)]


def prepare() -> None:
    """Build the ruleset once (in the zygote), so that a worker forked from here only has to
    put it in force (`restrict()`): the same rules for every worker, without each one
    opening every import path again (about 0.6 ms of a worker's start)."""
    global _prepared
    if _prepared is None:
        _prepared = _ruleset(None)


def release() -> None:
    """Close this process's copy of the prepared ruleset, unused (Landlock is off)."""
    global _prepared
    if _prepared is not None:
        os.close(_prepared)
        _prepared = None


def restrict(readable: Iterable[str] | None = None) -> bool:
    """Confine this process (and any child) for good; True when the ruleset is in force.

    `no_new_privs` must already be set (the worker sets it just before). Uses the ruleset
    `prepare` built when there is one and `readable` is not given; this process's copy of
    its descriptor is closed either way (guest code must not add rules to it: it would
    change the workers forked after).
    """
    global _prepared
    ruleset, _prepared = (_prepared, None) if readable is None else (None, _prepared)
    if ruleset is None:
        ruleset = _ruleset(readable)
    if ruleset is None:
        return False
    restrict_self = _SYSCALLS[platform.machine()][2]
    try:
        return _syscall(restrict_self, ruleset, ctypes.c_uint32(0)) == 0
    finally:
        os.close(ruleset)


def _ruleset(readable: Iterable[str] | None) -> int | None:
    """A new ruleset's descriptor: reads beneath `readable` (default: the import paths)."""
    abi = abi_version()
    if abi < 1:
        return None
    create, add_rule, _ = _SYSCALLS[platform.machine()]
    attr = _RulesetAttr(
        handled_access_fs=_fs_rights(abi),
        handled_access_net=_NET_TCP if abi >= 4 else 0,
        scoped=_SCOPES if abi >= 6 else 0,
    )
    size = ctypes.sizeof(_RulesetAttr) if abi >= 6 else (16 if abi >= 4 else 8)
    ruleset = _syscall(create, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        return None
    for path in readable if readable is not None else _import_paths():
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            rule = _PathBeneath(allowed_access=_READ_FILE | _READ_DIR, parent_fd=fd)
            _syscall(add_rule, ruleset, _RULE_PATH_BENEATH, ctypes.byref(rule), ctypes.c_uint32(0))
        finally:
            os.close(fd)
    return ruleset


def _import_paths() -> list[str]:
    return sorted({p for p in sys.path if p and os.path.isdir(p)})
