"""A seccomp-BPF filter: the kernel refuses the system calls a worker never needs.

Installed last in a worker's confinement (see `isolation.confine`), just before guest code
can run; it binds every thread and any later process for good, and guest code cannot
remove it. A refused call fails with EPERM (clone3 with ENOSYS, so libc falls back to
clone, whose flags the filter can read); nothing is killed. Stdlib only (ctypes), written
out by hand for x86-64 and AArch64; elsewhere `install()` does nothing and says so.

Refused, and why:
- `socket`, every family: no new sockets at all (inet, Unix pathname or abstract, netlink,
  packet). As a non-root user there may be no network namespace, and Landlock covers
  neither UDP nor pathname Unix sockets. The host channel is inherited; `socketpair`
  stays allowed (asyncio's event loop makes one).
- SysV IPC (`shm*`, `msg*`, `sem*`) and `mq_open`/`mq_unlink`: objects that outlive the
  worker and are shared between runs and users (shared memory is not in RLIMIT_AS).
- `unshare`, `setns`, `clone` with any CLONE_NEW* flag, `clone3`: new namespaces (a user
  namespace opens kernel code written for root) or entering others'.
- `ptrace`, `process_vm_readv`/`writev`, `pidfd_getfd`: another process's memory or files.
  As a non-root user, the server and every worker share one uid.
- `keyctl`, `add_key`, `request_key`: the kernel keyrings are shared per uid.
- `prctl(PR_SET_PDEATHSIG, ...)`: a worker must die with its zygote; clearing its
  parent-death signal would let it outlive the server. Other `prctl` options are allowed.
- `bpf`, `perf_event_open`, `userfaultfd`, `io_uring_*`: large kernel surfaces that serve no
  guest code; io_uring's operations would also bypass this filter.
- The mount API (`mount` ... `mount_setattr`), `kexec_*`, `*_module`: only a worker that
  kept root or holds capabilities in its own user namespace could use them.

What it does not stop: anything on file descriptors the worker already holds (the host
channel, the output mirror), `fork` (RLIMIT_NPROC's job), file access (Landlock's),
signals (Landlock's scope), CPU and memory use (rlimits), and running native code through
ctypes (the filter applies to it too). `personality` is allowed: it only affects `execve`,
which Landlock refuses.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import platform
import sys
from typing import Final

__all__ = ["DENIED", "arch_supported", "install", "prepare"]

# name: (x86-64 number, AArch64 number)
DENIED: Final[dict[str, tuple[int, int]]] = {
    # no new sockets
    "socket": (41, 198),
    # SysV IPC and POSIX message queues
    "shmget": (29, 194),
    "shmat": (30, 196),
    "shmctl": (31, 195),
    "shmdt": (67, 197),
    "msgget": (68, 186),
    "msgsnd": (69, 189),
    "msgrcv": (70, 188),
    "msgctl": (71, 187),
    "semget": (64, 190),
    "semop": (65, 193),
    "semtimedop": (220, 192),
    "semctl": (66, 191),
    "mq_open": (240, 180),
    "mq_unlink": (241, 181),
    # namespaces (clone and clone3 are filtered apart)
    "unshare": (272, 97),
    "setns": (308, 268),
    # other processes' memory and files
    "ptrace": (101, 117),
    "process_vm_readv": (310, 270),
    "process_vm_writev": (311, 271),
    "pidfd_getfd": (438, 438),
    # keyrings
    "keyctl": (250, 219),
    "add_key": (248, 217),
    "request_key": (249, 218),
    # large kernel surfaces
    "bpf": (321, 280),
    "perf_event_open": (298, 241),
    "userfaultfd": (323, 282),
    "io_uring_setup": (425, 425),
    "io_uring_enter": (426, 426),
    "io_uring_register": (427, 427),
    # only for a worker that kept root or holds user-namespace capabilities
    "mount": (165, 40),
    "umount2": (166, 39),
    "pivot_root": (155, 41),
    "open_tree": (428, 428),
    "move_mount": (429, 429),
    "fsopen": (430, 430),
    "fsconfig": (431, 431),
    "fsmount": (432, 432),
    "fspick": (433, 433),
    "mount_setattr": (442, 442),
    "kexec_load": (246, 104),
    "kexec_file_load": (320, 294),
    "init_module": (175, 105),
    "finit_module": (313, 273),
    "delete_module": (176, 106),
}
"""System calls refused with EPERM, whatever their arguments."""

_PRCTL: Final = (157, 167)
_PR_SET_PDEATHSIG: Final = 1
_CLONE: Final = (56, 220)
_CLONE3: Final = (435, 435)
_SECCOMP: Final = (317, 277)
# (AUDIT_ARCH_*, column in DENIED, the x32 bit that must not be set)
_ARCHES: Final = {"x86_64": (0xC000003E, 0, 0x40000000), "aarch64": (0xC00000B7, 1, 0)}
# CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET; clone() ignores the
# upper 32 bits of its flags, and CLONE_NEWTIME shares its bit with the exit signal there.
_CLONE_NEW_ANY: Final = 0x7E020000

_RET_ALLOW: Final = 0x7FFF0000
_RET_ERRNO: Final = 0x00050000
_LD_W_ABS, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
_NR, _ARCH, _ARG0 = 0, 4, 16  # offsets in struct seccomp_data (arg0's low word: little-endian)
_PR_SET_NO_NEW_PRIVS: Final = 38
_SECCOMP_SET_MODE_FILTER: Final = 1
_SECCOMP_FILTER_FLAG_TSYNC: Final = 1


class _Instruction(ctypes.Structure):
    _fields_ = (
        ("code", ctypes.c_uint16),
        ("jt", ctypes.c_uint8),
        ("jf", ctypes.c_uint8),
        ("k", ctypes.c_uint32),
    )


class _Program(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Instruction)))


def arch_supported() -> bool:
    """Whether this process's ABI is one the filter is written for (64-bit little-endian)."""
    return (
        sys.platform == "linux"
        and platform.machine() in _ARCHES
        and ctypes.sizeof(ctypes.c_void_p) == 8
        and sys.byteorder == "little"
    )


# An instruction before its jumps are resolved: (code, jump-if-true, jump-if-false, k),
# where a jump is 0 (the next instruction) or the name of a label below.
_Step = tuple[int, int | str, int | str, int]


def _steps(machine: str) -> list[_Step]:
    audit_arch, column, x32_bit = _ARCHES[machine]
    steps: list[_Step] = [
        (_LD_W_ABS, 0, 0, _ARCH),
        (_JEQ, 0, "eperm", audit_arch),  # another ABI (i386 through int 0x80): refuse it all
        (_LD_W_ABS, 0, 0, _NR),
    ]
    if x32_bit:
        steps.append((_JGE, "eperm", 0, x32_bit))  # x32 numbers would dodge the list below
    steps += [(_JEQ, "eperm", 0, numbers[column]) for numbers in DENIED.values()]
    steps += [
        (_JEQ, 0, 2, _PRCTL[column]),  # not prctl: on to clone (the number is still loaded)
        (_LD_W_ABS, 0, 0, _ARG0),
        (_JEQ, "eperm", "allow", _PR_SET_PDEATHSIG),
        (_JEQ, "enosys", 0, _CLONE3[column]),  # its flags sit in memory the filter cannot read
        (_JEQ, 0, "allow", _CLONE[column]),
        (_LD_W_ABS, 0, 0, _ARG0),
        (_JSET, "eperm", "allow", _CLONE_NEW_ANY),
    ]
    return steps


_TAIL: Final = {
    "allow": _RET_ALLOW,
    "eperm": _RET_ERRNO | errno.EPERM,
    "enosys": _RET_ERRNO | errno.ENOSYS,
}


def _assemble(machine: str) -> list[tuple[int, int, int, int]]:
    steps = _steps(machine)
    labels = {name: len(steps) + i for i, name in enumerate(_TAIL)}

    def offset(here: int, target: int | str) -> int:
        return target if isinstance(target, int) else labels[target] - here - 1

    program = [(code, offset(i, jt), offset(i, jf), k) for i, (code, jt, jf, k) in enumerate(steps)]
    return program + [(_RET, 0, 0, value) for value in _TAIL.values()]


def prepare() -> None:
    """Assemble the filter once (in the zygote): a worker forked from here only installs it
    (about 0.4 ms of a worker's start)."""
    if arch_supported():
        _program()
        _libc()


@functools.cache
def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


@functools.cache
def _program() -> tuple[_Program, ctypes.Array[_Instruction]]:
    """The filter for this machine, and the instructions it points to (kept alive with it)."""
    program = _assemble(platform.machine())
    instructions = (_Instruction * len(program))(*(_Instruction(*step) for step in program))
    return _Program(len(program), instructions), instructions


def install() -> bool:
    """Put the filter on this process (all its threads) for good; True when it is in force.

    Sets `no_new_privs` first, as the kernel requires of an unprivileged caller.
    """
    if not arch_supported():
        return False
    fprog, _ = _program()
    try:
        libc = _libc()
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            return False
        column = _ARCHES[platform.machine()][1]
        result = libc.syscall(
            ctypes.c_long(_SECCOMP[column]),
            ctypes.c_uint(_SECCOMP_SET_MODE_FILTER),
            ctypes.c_uint(_SECCOMP_FILTER_FLAG_TSYNC),
            ctypes.byref(fprog),
        )
    except (OSError, AttributeError):
        return False
    return bool(result == 0)
