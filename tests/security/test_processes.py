"""Processes and signals: subprocess, os.system, fork, pty, multiprocessing, ctypes, kill, atexit.

On the `sec` gateway (default allowlist) the policy refuses every route. On the `os`
gateway `os`, `subprocess`, `ctypes`... are allowed, so each row tests the OS layers alone:
with an unprivileged uid and RLIMIT_NPROC=0 a worker cannot fork, and it cannot signal the
root-owned zygote or server. A spawned command would create a marker file in /tmp (which a
worker is able to do), so a marker that appears means another program really ran.
"""

from __future__ import annotations

import asyncio
import os
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_code_mode.gateway import Gateway

from .helpers import attempt, error_type, reached, table, zygote_pids

POLICY = {"POLICY_VIOLATION"}
RUNTIME = {"RUNTIME_ERROR"}
# Refused by the policy, or past it by an OSError from the OS layers: either is right.
STOPPED = {"POLICY_VIOLATION", "RUNTIME_ERROR"}
# Harmless with the modules allowed (the effect cannot happen), so success is fine too.
HARMLESS = {"OK", "POLICY_VIOLATION", "RUNTIME_ERROR"}

_OS = "import os\nmarker = input['marker']\n"

PROCESS_ROUTES = table(
    (
        "import_subprocess",
        "sec",
        "import subprocess\nsubprocess.run(['touch', input['marker']])",
        POLICY,
    ),
    ("import_os_system", "sec", "import os\nos.system('touch ' + input['marker'])", POLICY),
    ("uuid_os_system", "sec", "import uuid\nuuid.os.system('touch ' + input['marker'])", POLICY),
    ("import_pty", "sec", "import pty\npty.spawn(['touch', input['marker']])", POLICY),
    (
        "import_multiprocessing",
        "sec",
        "import multiprocessing\nmultiprocessing.Process(target=print).start()",
        POLICY,
    ),
    ("import_ctypes", "sec", "import ctypes\nctypes.CDLL(None).fork()", POLICY),
    (
        "asyncio_create_subprocess_exec",
        "sec",
        "import asyncio\nawait asyncio.create_subprocess_exec('touch', input['marker'])",
        POLICY,
    ),
    (
        "loop_subprocess_shell",
        "sec",
        "import asyncio\nloop = asyncio.get_running_loop()\nawait loop.subprocess_shell(asyncio.SubprocessProtocol, 'touch ' + input['marker'])",
        POLICY,
    ),
    (
        "getattr_built_create_subprocess",
        "sec",
        "import asyncio\nspawn = getattr(asyncio, 'create_subprocess_' + 'exec')\nawait spawn('touch', input['marker'])",
        RUNTIME,
    ),
    ("os_kill_zygote_policy", "sec", "import os\nos.kill(os.getppid(), 9)", POLICY),
    # -- with the modules allowed: RLIMIT_NPROC=0 for the worker's uid stops every new process --
    (
        "os_system",
        "os",
        _OS
        + "status = os.system('touch ' + marker)\nif status:\n    raise OSError(status, 'system failed')\n'spawned'",
        STOPPED,
    ),
    (
        "os_fork",
        "os",
        _OS
        + "if os.fork() == 0:\n    os.open(marker, 0o101)\n    os.kill(os.getpid(), 9)\n'forked'",
        STOPPED,
    ),
    (
        "os_forkpty",
        "os",
        _OS
        + "pid, fd = os.forkpty()\nif pid == 0:\n    os.open(marker, 0o101)\n    os.kill(os.getpid(), 9)\n'forked'",
        STOPPED,
    ),
    (
        "os_posix_spawnp",
        "os",
        _OS + "os.posix_spawnp('touch', ['touch', marker], {})\n'spawned'",
        STOPPED,
    ),
    ("fork_bomb", "os", _OS + "while True:\n    os.fork()", STOPPED),
    (
        "subprocess_run",
        "os",
        "import subprocess\nsubprocess.run(['touch', input['marker']], check=True)\n'spawned'",
        STOPPED,
    ),
    (
        "subprocess_popen_shell",
        "os",
        "import subprocess\nsubprocess.Popen('touch ' + input['marker'], shell=True).wait()\n'spawned'",
        STOPPED,
    ),
    (
        "asyncio_subprocess_via_subprocess_module",
        "os",
        "import asyncio\nimport subprocess\nproc = subprocess.Popen(['touch', input['marker']])\nawait asyncio.sleep(0.1)\n'spawned'",
        STOPPED,
    ),
    ("pty_spawn", "os", "import pty\npty.spawn(['touch', input['marker']])\n'spawned'", STOPPED),
    # Where the stdlib is unreadable to the worker's uid (under /root on this machine) its
    # fork helper cannot even be imported; elsewhere the fork fails. RUNTIME_ERROR either way.
    (
        "multiprocessing_process",
        "os",
        "import multiprocessing\nmultiprocessing.Process(target=print).start()\n'started'",
        STOPPED,
    ),
    (
        "ctypes_libc_fork",
        "os",
        "import ctypes\nlibc = ctypes.CDLL(None)\npid = libc.fork()\nif pid == 0:\n    libc.kill(libc.getpid(), 9)\nif pid < 0:\n    raise OSError('fork failed')\n'forked'",
        STOPPED,
    ),
    (
        "os_execv_replaces_worker",
        "os",
        _OS + "os.execv('/usr/bin/touch', ['touch', marker])",
        # The exec'd worker is gone: EXECUTOR_ERROR would then be the honest report of it.
        STOPPED,
    ),
    # -- signals and privileges ------------------------------------------------------------------
    ("kill_zygote", "os", "import os\nos.kill(os.getppid(), 9)\n'killed'", STOPPED),
    ("killpg_zygote", "os", "import os\nos.killpg(os.getpgid(os.getppid()), 9)\n'killed'", STOPPED),
    (
        "signal_gateway",
        "os",
        "import os\nos.kill(input['gateway'], input['signal'])\n'signalled'",
        STOPPED,
    ),
    ("setuid_root", "os", "import os\nos.setuid(0)\n'root'", STOPPED),
    (
        "raise_rlimit_nproc",
        "os",
        "import resource\nresource.setrlimit(resource.RLIMIT_NPROC, (100, 100))\n'raised'",
        STOPPED,
    ),
    # The worker ends with os._exit, so atexit handlers never run.
    (
        "atexit_handler",
        "os",
        _OS + "import atexit\natexit.register(os.open, marker, 0o101)\n'registered'",
        HARMLESS,
    ),
    # Holding ctypes, a guest can crash its own worker; the server must report it and go on.
    ("ctypes_segfault", "os", "import ctypes\nctypes.string_at(0)", {"EXECUTOR_ERROR", *STOPPED}),
)


@pytest.fixture
def sigusr2_received() -> Iterator[list[int]]:
    """Counts SIGUSR2 delivered to the test process while the test runs."""
    received: list[int] = []
    previous = signal.signal(signal.SIGUSR2, lambda signum, frame: received.append(signum))
    try:
        yield received
    finally:
        signal.signal(signal.SIGUSR2, previous)


@pytest.mark.parametrize(("gateway", "code", "expected"), PROCESS_ROUTES)
async def test_no_process_escapes(
    gateways: dict[str, Gateway],
    tmp_marker: Path,
    sigusr2_received: list[int],
    gateway: str,
    code: str,
    expected: set[str],
) -> None:
    zygotes = zygote_pids()
    assert zygotes, "the gateway's zygote is running"
    guest_input = {"marker": str(tmp_marker), "gateway": os.getpid(), "signal": signal.SIGUSR2}
    out = await attempt(gateways[gateway], code, input=guest_input)
    assert not os.path.lexists(tmp_marker), "a process spawned by the guest ran"
    assert not reached(out, "spawned") and not reached(out, "forked"), out
    assert sigusr2_received == [], "the guest signalled the server process"
    assert zygotes <= zygote_pids(), "the guest killed the zygote"
    assert error_type(out) in expected, out


_SIBLINGS = """import os
me, parent = os.getpid(), os.getppid()
siblings = []
for name in os.listdir('/proc'):
    if not name.isdigit() or int(name) == me:
        continue
    try:
        fd = os.open('/proc/' + name + '/stat', 0)
    except OSError:
        continue
    stat = os.read(fd, 1000).decode()
    os.close(fd)
    if int(stat.rsplit(')', 1)[1].split()[1]) == parent:
        siblings.append(int(name))
"""


async def _victim(gateway: Gateway, token: str) -> dict[str, object]:
    # The discovery call first: the executor retries a run whose worker died before making
    # any request, which would hide a killed worker.
    code = "import asyncio\nkept = input\nlist_servers()\nawait asyncio.sleep(1.0)\n'alive:' + kept"
    return (await gateway.execute(code, input=token, timeout_s=4)).to_json()


async def test_sibling_worker_memory_is_unreadable(os_gateway: Gateway) -> None:
    """A run cannot read a concurrent run's input out of its worker's /proc entries."""
    token = f"victim-{uuid.uuid4().hex}"
    victim = asyncio.create_task(_victim(os_gateway, token))
    await asyncio.sleep(0.3)  # the victim's worker is sleeping now
    spy = _SIBLINGS + (
        "found = []\nfor pid in siblings:\n    for part in ('mem', 'environ', 'cmdline'):\n"
        "        try:\n            fd = os.open('/proc/%d/%s' % (pid, part), 0)\n"
        "            found.append(os.read(fd, 1 << 20).decode('latin-1'))\n"
        "        except OSError:\n            pass\n[siblings, found]"
    )
    out = await attempt(os_gateway, spy, warm=False)
    assert not reached(out, token), "a run read another run's input"
    assert error_type(out) in HARMLESS, out
    if out["ok"]:
        assert out["result"][0], "the spy saw no concurrent worker; the test proves nothing"
    assert (await victim)["result"] == "alive:" + token


async def test_sibling_worker_cannot_be_killed(os_gateway: Gateway) -> None:
    """A run cannot end a concurrent run by signalling its worker (or the pool's idle ones)."""
    victim = asyncio.create_task(_victim(os_gateway, "ok"))
    await asyncio.sleep(0.3)
    killer = _SIBLINGS + (
        "killed = []\nfor pid in siblings:\n    try:\n        os.kill(pid, 9)\n"
        "        killed.append(pid)\n    except OSError:\n        pass\n[siblings, killed]"
    )
    out = await attempt(os_gateway, killer, warm=False)
    assert error_type(out) in HARMLESS, out
    if out["ok"]:
        siblings, killed = out["result"]
        assert siblings, "the killer saw no concurrent worker; the test proves nothing"
        assert killed == [], f"the guest signalled other workers: {killed}"
    victim_out = await victim
    assert victim_out["result"] == "alive:ok", f"the concurrent run was killed: {victim_out}"


async def test_a_wakeup_fd_cannot_be_set_and_clearing_none_is_a_no_op(os_gateway: Gateway) -> None:
    """`signal.set_wakeup_fd(-1)` while none is set changes nothing: it is the call asyncio's
    at-fork hook makes in every worker forked from the locked-down zygote on Python 3.12+
    (refused, it printed "Exception ignored in a finalizer" once per worker: outside attack
    136). Setting one stays refused."""
    code = (
        "import signal\nnoop = signal.set_wakeup_fd(-1)\n"
        "try:\n    signal.set_wakeup_fd(2)\n    set_one = 'set'\n"
        "except ValueError as e:\n    set_one = str(e)\n[noop, set_one]"
    )
    out = await attempt(os_gateway, code)
    assert out["result"] == [-1, "signal.set_wakeup_fd() is not allowed in the sandbox"], out
