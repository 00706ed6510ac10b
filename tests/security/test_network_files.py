"""The server's environment, files and network, as seen from guest code.

Two gateways: `sec` has the default allowlist, where the AST policy and the restricted
builtins must refuse every route; `os` has `os`, `io`, `socket`... allowed (as an
administrator may configure), so the policy is out of the way and each row tests the OS
layers alone: the worker's own uid cannot read the server's /proc entries or a root-owned
directory, its network namespace has no usable interface, and seccomp refuses socket()
(so no Unix socket either). What the OS layers still let a worker do is marked as a hole.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from mcp_code_mode.gateway import Gateway

from ..support import SECRET
from .conftest import Listeners
from .helpers import attempt, error_type, reached, table

POLICY = {"POLICY_VIOLATION"}
RUNTIME = {"RUNTIME_ERROR"}
# Refused by the policy, or past it by an OSError from the OS layers: either is right.
STOPPED = {"POLICY_VIOLATION", "RUNTIME_ERROR"}
# Reading the worker's own, minimal environment is allowed with `os`: only the absence of
# the server's secret matters (a stricter sandbox may refuse it, which is fine too).
OWN_ENV = {"OK", "RUNTIME_ERROR"}

_WORLD_READABLE = (
    "no mount namespace or Landlock: a worker reads any world-readable file "
    "(/etc/passwd, the project's source and .env if 0644, other users' configs)"
)
_WORLD_WRITABLE = (
    "no mount namespace or Landlock: a worker creates files, directories and symlinks in "
    "/tmp (RLIMIT_FSIZE=0 only keeps them empty)"
)


def _crossed(
    routes: list[tuple[str, str, str, set[str], bool]],
    targets: tuple[str, ...],
    open_target: str,
    reason: str,
) -> list[object]:
    """Every route against every target; an OS-level route is a hole on `open_target`."""
    return [
        pytest.param(
            gateway,
            target,
            code,
            expected,
            id=f"{target}-{name}",
        )
        for target in targets
        for name, gateway, code, expected, os_level in routes
    ]


# -- the server's environment and API keys ---------------------------------------------------

ENV_ROUTES = table(
    ("import_os_environ", "sec", "import os\ndict(os.environ)", POLICY),
    ("uuid_os_environ", "sec", "import uuid\ndict(uuid.os.environ)", POLICY),
    (
        "getattr_built_environ",
        "sec",
        "import uuid\ndict(getattr(uuid, 'o' + 's').environ)",
        RUNTIME,
    ),
    ("upstream_env_tool", "sec", "tools.t.env(name='MCP_CODE_TEST_SECRET')", {"OK"}),
    ("worker_environ", "os", "import os\ndict(os.environ)", OWN_ENV),
    ("worker_environb", "os", "import os\nstr(os.environb)", OWN_ENV),
    (
        "proc_self_environ",
        "os",
        "import os\nos.read(os.open('/proc/self/environ', 0), 1 << 16).decode()",
        OWN_ENV,
    ),
    (
        "proc_zygote_environ",
        "os",
        "import os\nos.read(os.open('/proc/%d/environ' % os.getppid(), 0), 1 << 16).decode()",
        RUNTIME,
    ),
    (
        "proc_gateway_environ",
        "os",
        "import os\nos.read(os.open('/proc/%d/environ' % input, 0), 1 << 16).decode()",
        RUNTIME,
    ),
    (
        "proc_scan_every_environ",
        "os",
        "import os\nfound = []\nfor pid in os.listdir('/proc'):\n    try:\n        found.append(os.read(os.open('/proc/' + pid + '/environ', 0), 1 << 16).decode())\n    except OSError:\n        pass\nfound",
        OWN_ENV,
    ),
)


@pytest.mark.parametrize(("gateway", "code", "expected"), ENV_ROUTES)
async def test_server_secret_is_out_of_reach(
    gateways: dict[str, Gateway], gateway: str, code: str, expected: set[str]
) -> None:
    assert os.environ["MCP_CODE_TEST_SECRET"] == SECRET
    gw = gateways[gateway]
    out = await attempt(gw, code, input=os.getpid())  # attempt() checks the secret
    assert error_type(out) in expected, out
    assert "MCP_CODE_TEST_SECRET" not in str(out["result"])


# -- reading files -----------------------------------------------------------------------------

READ_ROUTES = [
    ("open_builtin", "sec", "open(input).read()", POLICY, False),
    ("import_pathlib", "sec", "import pathlib\npathlib.Path(input).read_text()", POLICY, False),
    ("import_io", "sec", "import io\nio.open(input).read()", POLICY, False),
    (
        "getattr_built_os",
        "sec",
        "import uuid\nos = getattr(uuid, 'o' + 's')\nos.read(os.open(input, 0), 4096)",
        RUNTIME,
        False,
    ),
    (
        "os_read",
        "os",
        "import os\nos.read(os.open(input, os.O_RDONLY), 4096).decode()",
        STOPPED,
        True,
    ),
    ("io_open", "os", "import io\nio.open(input).read()", STOPPED, True),
]
READ_CASES = _crossed(READ_ROUTES, ("passwd", "owned_secret"), "passwd", _WORLD_READABLE)


@pytest.mark.parametrize(("gateway", "target", "code", "expected"), READ_CASES)
async def test_files_cannot_be_read(
    gateways: dict[str, Gateway],
    tmp_path: Path,
    gateway: str,
    target: str,
    code: str,
    expected: set[str],
) -> None:
    if target == "passwd":
        path, needle = "/etc/passwd", "root:x:0:0"
    else:  # a root-owned 0600 file in a 0700 directory, holding the secret
        secret_file = tmp_path / "secret.txt"
        secret_file.write_text(f"token={SECRET}\n")
        secret_file.chmod(0o600)
        path, needle = str(secret_file), SECRET
    out = await attempt(gateways[gateway], code, input=path)
    assert not reached(out, needle), f"the guest read {path}"
    assert error_type(out) in expected, out


# -- writing files -----------------------------------------------------------------------------

WRITE_ROUTES = [
    ("open_builtin", "sec", "open(input, 'w').write('x')", POLICY, False),
    ("import_os_open", "sec", "import os\nos.open(input, os.O_CREAT | os.O_WRONLY)", POLICY, False),
    ("import_pathlib_touch", "sec", "import pathlib\npathlib.Path(input).touch()", POLICY, False),
    (
        "getattr_built_os_open",
        "sec",
        "import uuid\nos = getattr(uuid, 'o' + 's')\nos.open(input, 0o101)",
        RUNTIME,
        False,
    ),
    (
        "os_open_creat",
        "os",
        "import os\nos.open(input, os.O_CREAT | os.O_WRONLY)\n'created'",
        STOPPED,
        True,
    ),
    (
        "io_open_write",
        "os",
        "import io\nwith io.open(input, 'w') as f:\n    f.write('x')",
        STOPPED,
        True,
    ),
    ("os_mkdir", "os", "import os\nos.mkdir(input)", STOPPED, True),
    ("os_symlink", "os", "import os\nos.symlink('/etc/passwd', input)", STOPPED, True),
]
WRITE_CASES = _crossed(WRITE_ROUTES, ("owned_dir", "tmp"), "tmp", _WORLD_WRITABLE)


@pytest.mark.parametrize(("gateway", "target", "code", "expected"), WRITE_CASES)
async def test_files_cannot_be_created(
    gateways: dict[str, Gateway],
    owned_marker: Path,
    tmp_marker: Path,
    gateway: str,
    target: str,
    code: str,
    expected: set[str],
) -> None:
    marker = owned_marker if target == "owned_dir" else tmp_marker
    out = await attempt(gateways[gateway], code, input=str(marker))
    assert not os.path.lexists(marker), f"the guest created {marker}"
    assert error_type(out) in expected, out


# -- network -----------------------------------------------------------------------------------

_SOCK = "import socket\n"
NET_ROUTES = table(
    (
        "import_socket",
        "sec",
        "import socket\nsocket.create_connection(('127.0.0.1', input['port']))",
        POLICY,
    ),
    (
        "dunder_import_socket",
        "sec",
        "__import__('socket').create_connection(('127.0.0.1', input['port']))",
        POLICY,
    ),
    (
        "asyncio_open_connection",
        "sec",
        "import asyncio\nawait asyncio.open_connection('127.0.0.1', input['port'])",
        POLICY,
    ),
    (
        "asyncio_streams_open_connection",
        "sec",
        "import asyncio\nawait asyncio.streams.open_connection('127.0.0.1', input['port'])",
        POLICY,
    ),
    (
        "loop_create_connection",
        "sec",
        "import asyncio\nloop = asyncio.get_running_loop()\nawait loop.create_connection(asyncio.Protocol, '127.0.0.1', input['port'])",
        POLICY,
    ),
    (
        "loop_sock_connect",
        "sec",
        "import asyncio\nloop = asyncio.get_running_loop()\nawait loop.sock_connect(None, ('127.0.0.1', input['port']))",
        POLICY,
    ),
    (
        "getattr_built_open_connection",
        "sec",
        "import asyncio\nconnect = getattr(asyncio, 'open_' + 'connection')\nawait connect('127.0.0.1', input['port'])",
        RUNTIME,
    ),
    # With `socket` allowed: the empty network namespace must stop every one of these.
    (
        "tcp_connect",
        "os",
        _SOCK + "socket.socket().connect(('127.0.0.1', input['port']))\n'connected'",
        STOPPED,
    ),
    (
        "tcp_connect_localhost",
        "os",
        _SOCK + "socket.socket().connect(('localhost', input['port']))\n'connected'",
        STOPPED,
    ),
    (
        "tcp_connect_any_address",
        "os",
        _SOCK + "socket.socket().connect(('0.0.0.0', input['port']))\n'connected'",
        STOPPED,
    ),
    (
        "tcp_connect_ipv4_mapped_ipv6",
        "os",
        _SOCK
        + "sock = socket.socket(socket.AF_INET6)\nsock.connect(('::ffff:127.0.0.1', input['port']))\n'connected'",
        STOPPED,
    ),
    (
        "tcp_nonblocking_connect_ex",
        "os",
        _SOCK
        + "sock = socket.socket()\nsock.setblocking(False)\nrc = sock.connect_ex(('127.0.0.1', input['port']))\nif rc:\n    raise OSError(rc, 'connect_ex failed')\n'connected'",
        STOPPED,
    ),
    (
        "udp_sendto",
        "os",
        _SOCK
        + "socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', input['udp']))\n'sent'",
        STOPPED,
    ),
    # A raw packet socket could bring its own stack: it needs CAP_NET_RAW, which workers lack.
    (
        "raw_packet_socket",
        "os",
        _SOCK + "socket.socket(socket.AF_PACKET, socket.SOCK_RAW)\n'raw'",
        STOPPED,
    ),
)


@pytest.mark.parametrize(("gateway", "code", "expected"), NET_ROUTES)
async def test_loopback_listener_is_unreachable(
    gateways: dict[str, Gateway],
    listeners: Listeners,
    gateway: str,
    code: str,
    expected: set[str],
) -> None:
    before = len(listeners.hits())
    ports = {"port": listeners.tcp_port, "udp": listeners.udp_port}
    out = await attempt(gateways[gateway], code, input=ports)
    await asyncio.sleep(0.05)  # let a connection that got through reach the accept callback
    assert len(listeners.hits()) == before, f"the guest reached the listener: {listeners.hits()}"
    assert not reached(out, "connected") and not reached(out, "sent"), out
    assert error_type(out) in expected, out


@pytest.mark.parametrize(
    ("socket_mode", "dir_mode"),
    [
        pytest.param(0o755, 0o700, id="socket_in_private_dir"),
        pytest.param(0o777, 0o755, id="world_writable_socket"),  # as /tmp/.X11-unix/X0 is
    ],
)
async def test_unix_socket_listener_is_unreachable(
    os_gateway: Gateway, tmp_marker: Path, socket_mode: int, dir_mode: int
) -> None:
    tmp_marker.mkdir(mode=dir_mode)
    tmp_marker.chmod(dir_mode)
    path = tmp_marker / "listener.sock"
    accepted: list[int] = []

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(1)
        writer.close()

    server = await asyncio.start_unix_server(accept, path)
    path.chmod(socket_mode)
    code = _SOCK + "socket.socket(socket.AF_UNIX).connect(input)\n'connected'"
    try:
        out = await attempt(os_gateway, code, input=str(path))
        await asyncio.sleep(0.05)
    finally:
        server.close()
        await server.wait_closed()
        path.unlink(missing_ok=True)
    assert accepted == [], "the guest connected to a Unix socket on the host"
    assert error_type(out) in STOPPED, out


async def test_listeners_work_from_the_host(listeners: Listeners) -> None:
    """The listeners are real: the test process itself gets through (sanity check)."""
    before = len(listeners.accepted)
    _, writer = await asyncio.open_connection("127.0.0.1", listeners.tcp_port)
    writer.close()
    for _ in range(100):
        if len(listeners.accepted) > before:
            break
        await asyncio.sleep(0.01)
    assert len(listeners.accepted) == before + 1


_NAMESPACES = "import os\n[os.readlink(f'/proc/self/ns/{kind}') for kind in ('net', 'ipc')]"
_LEAVE_BEHIND = (
    "import socket\nout = []\n"
    "for family, name in ((socket.AF_UNIX, '\\0mcp-left-behind'), (socket.AF_INET, ('127.0.0.1', 0))):\n"
    "    try:\n"
    "        s = socket.socket(family)\n"
    "        s.bind(name)\n"
    "        s.listen()\n"
    "        out.append('listening')\n"
    "    except OSError as exc:\n"
    "        out.append(exc.errno)\n"
    "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
    "out.append((libc.shmget(0, 4096, 0o1666), ctypes.get_errno()))\n"
    "out"
)


async def test_workers_share_an_empty_namespace_nothing_can_be_left_in(
    os_gateway: Gateway,
) -> None:
    """With seccomp, one gateway's workers join one network and IPC namespace made once
    (not the host's), and no worker can create anything there for the next run to find:
    no socket of any family (an abstract Unix name lives in the network namespace), no
    SysV IPC object."""
    if "seccomp" not in os_gateway.sandbox_info()["layers"]:
        pytest.skip("without seccomp each worker makes namespaces of its own")
    seen = [await attempt(os_gateway, _NAMESPACES) for _ in range(2)]
    assert all(out["ok"] for out in seen), seen
    first, second = (out["result"] for out in seen)
    assert first == second, "two runs of one gateway: one shared namespace of each kind"
    host = [os.readlink(f"/proc/self/ns/{kind}") for kind in ("net", "ipc")]
    assert not set(first) & set(host), "a worker is in the host's namespace"
    left = await attempt(os_gateway, _LEAVE_BEHIND)
    # EPERM (1): seccomp refuses socket() and shmget()
    assert left["ok"] and left["result"] == [1, 1, [-1, 1]], left
