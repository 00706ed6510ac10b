"""The local executor's OS boundary: what guest code holding `os`, `socket` and `ctypes` reaches.

Every run here goes through the `os` gateway, where the policy and the importer are out of
the way: only the worker's OS layers (namespaces, uid drop, rlimits, Landlock, seccomp)
stand between guest code and the kernel. Each case asserts an effect seen from the host
(no datagram arrives, no connection is accepted, no IPC object exists, the other worker
lives on), never the error text. The same cases must hold as root and as another user
(`.ci/security-unprivileged` runs them as uid 65534). Ordinary code and asyncio must
still work under the filter.
"""

from __future__ import annotations

import asyncio
import ctypes
import json
import os
import platform
import secrets
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_code_mode.gateway import Gateway
from mcp_code_mode.sandbox.child import seccomp

from .conftest import Listeners
from .helpers import attempt, error_type, reached, table, worker_pids, zygote_pids

_LIBC = "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
_IPC_RMID = 0


@pytest.fixture(params=["local"])
def local_gateway(os_gateway: Gateway) -> Gateway:
    """The `os` gateway under its executor's name (so `-k local` selects these cases)."""
    return os_gateway


def test_filter_is_reported_active(local_gateway: Gateway) -> None:
    if not seccomp.arch_supported():
        pytest.skip(f"no seccomp filter is written for {platform.machine()}")
    assert "seccomp" in local_gateway.sandbox_info()["layers"]


# -- network ----------------------------------------------------------------------------------

UDP_ROUTES = table(
    (
        "socket_sendto",
        "import socket\nsocket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', input))\n'sent'",
    ),
    (
        "socket_connect_send",
        "import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\ns.connect(('127.0.0.1', input))\ns.send(b'x')\n'sent'",
    ),
    (
        "ipv6_mapped",
        "import socket\nsocket.socket(socket.AF_INET6, socket.SOCK_DGRAM).sendto(b'x', ('::ffff:127.0.0.1', input))\n'sent'",
    ),
    (
        "libc_socket_sendto",  # below Python's socket module: only the kernel can refuse it
        _LIBC
        + "fd = libc.socket(2, 2, 0)\naddr = bytes([2, 0, input >> 8, input & 255, 127, 0, 0, 1]) + bytes(8)\n"
        "'sent' if fd >= 0 and libc.sendto(fd, b'x', 1, 0, addr, 16) == 1 else 'refused'",
    ),
)


@pytest.mark.parametrize("code", UDP_ROUTES)
async def test_udp_datagram_never_arrives(
    local_gateway: Gateway, listeners: Listeners, code: str
) -> None:
    before = len(listeners.datagrams)
    out = await attempt(local_gateway, code, input=listeners.udp_port)
    await asyncio.sleep(0.1)  # a datagram that got out reaches the listener by now
    assert len(listeners.datagrams) == before, "a datagram from the guest arrived"
    assert not reached(out, "sent"), out


@pytest.fixture
def unix_listener(tmp_marker: Path) -> Iterator[tuple[Path, list[int]]]:
    """A world-writable socket in /tmp, as /tmp/.X11-unix/X0 is; the list counts accepts."""
    tmp_marker.mkdir(mode=0o755)
    tmp_marker.chmod(0o755)
    path = tmp_marker / "listener.sock"
    accepted: list[int] = []
    yield path, accepted
    path.unlink(missing_ok=True)


UNIX_ROUTES = table(
    ("socket_connect", "import socket\nsocket.socket(socket.AF_UNIX).connect(input)\n'connected'"),
    (
        "libc_socket_connect",
        _LIBC
        + "fd = libc.socket(1, 1, 0)\naddr = bytes([1, 0]) + input.encode() + bytes(108 - len(input))\n"
        "'connected' if fd >= 0 and libc.connect(fd, addr, 110) == 0 else 'refused'",
    ),
)


@pytest.mark.parametrize("code", UNIX_ROUTES)
async def test_unix_pathname_socket_is_not_accepted(
    local_gateway: Gateway, unix_listener: tuple[Path, list[int]], code: str
) -> None:
    path, accepted = unix_listener

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(1)
        writer.close()

    server = await asyncio.start_unix_server(accept, path)
    path.chmod(0o777)
    try:
        out = await attempt(local_gateway, code, input=str(path))
        await asyncio.sleep(0.1)
        assert accepted == [], "the guest connected to a Unix socket on the host"
        _, writer = await asyncio.open_unix_connection(path)  # the listener is real
        writer.close()
        for _ in range(100):
            if accepted:
                break
            await asyncio.sleep(0.01)
        assert accepted == [1]
    finally:
        server.close()
        await server.wait_closed()
    assert not reached(out, "connected"), out


# -- IPC objects that would outlive the run ---------------------------------------------------

SYSV_ROUTES = table(
    (
        "shm",
        "shm",
        _LIBC
        + "libc.shmat.restype = ctypes.c_void_p\nipc = libc.shmget(input['key'], 4096, 0o1666)\n"
        "if ipc >= 0:\n    at = libc.shmat(ipc, None, 0)\n    if at and at != ctypes.c_void_p(-1).value:\n"
        "        ctypes.memmove(at, input['token'].encode(), len(input['token']))\nipc",
        "libc.shmat.restype = ctypes.c_void_p\nipc = libc.shmget(input['key'], 0, 0)\nfound = ''\n"
        "if ipc >= 0:\n    at = libc.shmat(ipc, None, 0)\n    if at and at != ctypes.c_void_p(-1).value:\n"
        "        found = ctypes.string_at(at, 64).decode('latin-1')\nfound",
    ),
    (
        "msg",
        "msg",
        _LIBC + "ipc = libc.msgget(input['key'], 0o1666)\nif ipc >= 0:\n"
        "    text = (1).to_bytes(8, 'little') + input['token'].encode()\n    libc.msgsnd(ipc, text, len(text) - 8, 0)\nipc",
        "ipc = libc.msgget(input['key'], 0)\nbuffer = ctypes.create_string_buffer(200)\n"
        "size = libc.msgrcv(ipc, buffer, 192, 0, 0o4000) if ipc >= 0 else -1\n"
        "buffer.raw[8:8 + size].decode('latin-1') if size > 0 else ''",
    ),
    (
        "sem",
        "sem",
        _LIBC + "ipc = libc.semget(input['key'], 1, 0o1666)\nipc",
        "ipc = libc.semget(input['key'], 0, 0)\ninput['token'] if ipc >= 0 else ''",
    ),
)


def _ipc_ids(kind: str, key: int) -> list[int]:
    """Ids of the SysV objects of `kind` (shm, msg, sem) with `key` in the host's namespace."""
    ids = []
    for line in Path(f"/proc/sysvipc/{kind}").read_text().splitlines()[1:]:
        fields = line.split()
        if int(fields[0]) == key:
            ids.append(int(fields[1]))
    return ids


def _remove_ipc(kind: str, key: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    for ipc_id in _ipc_ids(kind, key):
        if kind == "sem":
            libc.semctl(ipc_id, 0, _IPC_RMID)
        else:
            getattr(libc, f"{kind}ctl")(ipc_id, _IPC_RMID, None)


@pytest.mark.parametrize(("kind", "create", "read"), SYSV_ROUTES)
async def test_sysv_ipc_object_does_not_outlive_its_run(
    local_gateway: Gateway, kind: str, create: str, read: str
) -> None:
    """Run A's object is gone after it, and run B (another worker) cannot reach it."""
    key, token = secrets.randbelow(1 << 30) + 1, f"ipc-{uuid.uuid4().hex}"
    guest_input = {"key": key, "token": token}
    try:
        await attempt(local_gateway, create, input=guest_input)
        assert _ipc_ids(kind, key) == [], f"a SysV {kind} object outlived the run"
        out = await attempt(local_gateway, _LIBC + read, input=guest_input)
        assert token not in json.dumps(out), "one run reached another run's IPC object"
    finally:
        _remove_ipc(kind, key)


async def test_posix_message_queue_does_not_outlive_its_run(local_gateway: Gateway) -> None:
    name = f"/mcp-{uuid.uuid4().hex}"
    code = _LIBC + "fd = libc.mq_open(input.encode(), 0o102, 0o666, None)\nfd"  # O_CREAT | O_RDWR
    libc = ctypes.CDLL(None, use_errno=True)
    try:
        await attempt(local_gateway, code, input=name)
        host_fd = libc.mq_open(name.encode(), os.O_RDONLY)
        assert host_fd < 0, "a POSIX message queue outlived the run"
    finally:
        libc.mq_unlink(name.encode())


# -- namespaces and other processes -----------------------------------------------------------

_CLONE_NEWNS = 0x00020000
_CLONE_NEWIPC = 0x08000000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000
NAMESPACE_ROUTES = table(
    (
        "os_unshare_user",
        f"import os\nif hasattr(os, 'unshare'):\n    os.unshare({_CLONE_NEWUSER})\n    'ESCAPED'\nelse:\n    raise OSError('no os.unshare before 3.12')",
    ),
    (
        "libc_unshare_user",
        _LIBC + f"'ESCAPED' if libc.unshare({_CLONE_NEWUSER}) == 0 else 'refused'",
    ),
    (
        "libc_unshare_user_net",
        _LIBC + f"'ESCAPED' if libc.unshare({_CLONE_NEWUSER | _CLONE_NEWNET}) == 0 else 'refused'",
    ),
    (
        "libc_unshare_mount",
        _LIBC + f"'ESCAPED' if libc.unshare({_CLONE_NEWNS}) == 0 else 'refused'",
    ),
    ("libc_unshare_ipc", _LIBC + f"'ESCAPED' if libc.unshare({_CLONE_NEWIPC}) == 0 else 'refused'"),
    (
        "raw_clone_newuser",  # a child that would exit at once; the parent reports the clone
        _LIBC
        + f"libc.syscall.restype = ctypes.c_long\npid = libc.syscall(56 if input == 'x86_64' else 220, {_CLONE_NEWUSER | 17}, 0, 0, 0, 0)\n"
        "if pid == 0:\n    libc.syscall(60 if input == 'x86_64' else 93, 0)\n'ESCAPED' if pid > 0 else 'refused'",
    ),
)


@pytest.mark.parametrize("code", NAMESPACE_ROUTES)
async def test_no_new_namespace(local_gateway: Gateway, code: str) -> None:
    out = await attempt(local_gateway, code, input=platform.machine())
    assert not reached(out), "the guest created a namespace"
    assert error_type(out) in {"OK", "RUNTIME_ERROR"}, out


_SPY = (
    _LIBC
    + """import os
libc.ptrace.restype = ctypes.c_long
libc.process_vm_readv.restype = ctypes.c_ssize_t
buffer = ctypes.create_string_buffer(64)
here = (ctypes.c_size_t * 2)(ctypes.addressof(buffer), 64)
there = (ctypes.c_size_t * 2)(id(None), 64)  # None lies at one address in every forked worker
targets = [pid for pid in input if pid != os.getpid()]
got = []
for pid in targets:
    if libc.ptrace(0x4206, pid, None, None) == 0:  # PTRACE_SEIZE
        got.append(['ptrace', pid])
    if libc.process_vm_readv(pid, here, 1, there, 1, 0) > 0:
        got.append(['process_vm_readv', pid])
[len(targets), got]
"""
)


async def test_sibling_worker_cannot_be_traced_or_read(local_gateway: Gateway) -> None:
    token = f"victim-{uuid.uuid4().hex}"
    victim_code = (
        "import asyncio\nkept = input\nlist_servers()\nawait asyncio.sleep(1.0)\n'alive:' + kept"
    )
    victim = asyncio.create_task(local_gateway.execute(victim_code, input=token, timeout_s=4))
    await asyncio.sleep(0.3)  # the victim's worker is asleep now
    targets = {
        os.getpid(),
        *zygote_pids(),
        *worker_pids(local_gateway),
    }  # the server holds the keys
    out = await attempt(local_gateway, _SPY, input=sorted(targets), warm=False)
    assert out["ok"], out
    tried, got = out["result"]
    assert tried > 2, "the spy had no other worker to try; the test proves nothing"
    assert got == [], f"the guest traced or read another worker: {got}"
    assert (await victim).to_json()["result"] == "alive:" + token


async def test_worker_keeps_its_parent_death_signal(local_gateway: Gateway) -> None:
    """A worker that cleared its parent-death signal would outlive a killed zygote."""
    code = (
        _LIBC
        + "libc.prctl(1, 0, 0, 0, 0)\nsig = ctypes.c_int(-1)\n"
        + "libc.prctl(2, ctypes.byref(sig), 0, 0, 0)\nsig.value"
    )
    out = await attempt(local_gateway, code)
    assert out["ok"], out
    assert out["result"] == 9  # still SIGKILL


# -- what must keep working under the filter --------------------------------------------------

WORKING = table(
    ("top_level_await", "import asyncio\nawait asyncio.sleep(0)\n'ok'", "ok"),
    (
        "asyncio_run_gather",
        "import asyncio\nasync def double(x):\n    await asyncio.sleep(0)\n    return 2 * x\n"
        "async def main():\n    return await asyncio.gather(*(double(i) for i in range(3)))\nasyncio.run(main())",
        [0, 2, 4],
    ),
    (
        "asyncio_queue_timeout",
        "import asyncio\nasync def main():\n    q = asyncio.Queue()\n    await q.put(1)\n"
        "    return await asyncio.wait_for(q.get(), 1)\nasyncio.run(main())",
        1,
    ),
    (
        "json_re",
        "import json\nimport re\njson.loads(json.dumps(re.findall(r'\\d+', 'a1b22')))",
        ["1", "22"],
    ),
    (
        "dataclass_enum",
        "from dataclasses import dataclass, asdict\nimport enum\nclass C(enum.Enum):\n    A = 1\n"
        "@dataclass\nclass P:\n    x: int\n    c: str = C.A.name\nasdict(P(3))",
        {"x": 3, "c": "A"},
    ),
    (
        "uuid_hashlib_random",
        "import hashlib\nimport random\nimport uuid\nlen(str(uuid.uuid4())) + len(hashlib.sha256(random.randbytes(8)).hexdigest())",
        100,
    ),
    (
        "datetime_decimal",
        "import datetime\nimport decimal\nstr(decimal.Decimal('1.10') + 1) + datetime.date(2024, 1, 2).isoformat()",
        "2.102024-01-02",
    ),
)


@pytest.mark.parametrize(("code", "expected"), WORKING)
async def test_ordinary_code_still_runs(
    local_gateway: Gateway, code: str, expected: object
) -> None:
    out = await attempt(local_gateway, code)
    assert out["ok"], out
    assert out["result"] == expected


async def test_thread_runs_or_is_refused_cleanly(local_gateway: Gateway) -> None:
    """A thread is a process to RLIMIT_NPROC: refused where that limit holds, never a crash."""
    code = "import threading\nseen = []\nt = threading.Thread(target=seen.append, args=[1])\nt.start()\nt.join()\nseen"
    out = await attempt(local_gateway, code)
    assert (out["ok"] and out["result"] == [1]) or error_type(out) == "RUNTIME_ERROR", out
