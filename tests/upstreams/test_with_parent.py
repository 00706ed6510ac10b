"""How a stdio upstream is launched so that it ends with the gateway (`upstreams/with_parent.py`),
driven as the transport drives it: the argv `_dying_with_us` makes, run from this process as
the gateway (outside attack 139 found the environment, the command lookup and the error of
a command that cannot run changed by the launcher)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mcp_code_mode.upstreams.process_group import end_group
from mcp_code_mode.upstreams.stdio import _dying_with_us

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")

BASE_ENV = {"PATH": "/usr/bin:/bin", "HOME": "/tmp"}


def launched(command: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    argv = _dying_with_us(command, [], env, cwd)
    assert argv[0] == sys.executable, "the launcher was not used"
    return subprocess.run(
        argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=60, start_new_session=True
    )


def script(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def test_the_environment_is_the_one_the_gateway_gave(tmp_path: Path) -> None:
    printing = script(tmp_path / "print_env", "#!/bin/sh\nenv\n")
    unset = launched(str(printing), BASE_ENV, tmp_path)
    assert unset.returncode == 0 and "PATH=/usr/bin:/bin" in unset.stdout
    assert "LC_CTYPE" not in unset.stdout  # Python's locale coercion added C.UTF-8
    given = launched(str(printing), {**BASE_ENV, "LC_CTYPE": "C"}, tmp_path)
    assert "LC_CTYPE=C\n" in given.stdout


def test_a_relative_path_entry_is_read_from_the_upstream_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, elsewhere, other = tmp_path / "config", tmp_path / "elsewhere", tmp_path / "other"
    script(folder / "bin" / "mcpsrv", "#!/bin/sh\necho from-config-folder\n")
    script(other / "mcpsrv", "#!/bin/sh\necho from-other\n")
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # the gateway runs from another folder, without a bin/
    ran = launched("mcpsrv", {**BASE_ENV, "PATH": f"bin:{other}:/usr/bin:/bin"}, folder)
    assert (ran.returncode, ran.stdout) == (0, "from-config-folder\n")


def test_a_command_that_cannot_run_says_why_in_one_line(tmp_path: Path) -> None:
    no_shebang = script(tmp_path / "server.txt", "print('hi')\n")
    ran = launched(str(no_shebang), BASE_ENV, tmp_path)
    assert ran.returncode == 126
    assert ran.stderr.strip() == f"{no_shebang}: Exec format error", ran.stderr


def test_a_command_not_found_is_not_wrapped(tmp_path: Path) -> None:
    assert _dying_with_us("no-such-mcp-server", ["x"], BASE_ENV, tmp_path) == [
        "no-such-mcp-server",
        "x",
    ]


GATEWAY = """
import subprocess, sys, time
from pathlib import Path
from mcp_code_mode.upstreams.process_group import end_group
from mcp_code_mode.upstreams.stdio import _dying_with_us
folder = Path(sys.argv[1])
env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp"}
subprocess.Popen(
    _dying_with_us(str(folder / "upstream"), [], env, folder), env=env, cwd=folder,
    start_new_session=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
)
while not (folder / "helper.pid").exists():
    time.sleep(0.05)
print("ready", flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


@pytest.mark.parametrize("attempt", range(3))
def test_a_helper_ends_with_a_gateway_killed_outright_when_the_upstream_dies_at_once(
    tmp_path: Path, attempt: int
) -> None:
    """The death signal ended an upstream (default SIGTERM) as the gateway's threads ended, a
    moment before the gateway's pidfd said so: the watcher took it for an upstream that went
    first and left its helper running, in 3 of 3 tries (outside attack 140)."""
    script(
        tmp_path / "upstream",
        "#!/bin/sh\nsleep 1000 &\necho $! > helper.tmp\nmv helper.tmp helper.pid\nwait\n",
    )
    gateway = subprocess.Popen(
        [sys.executable, "-c", GATEWAY, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert gateway.stdout is not None and gateway.stdout.readline() == "ready\n"
        helper = int((tmp_path / "helper.pid").read_text())
        assert _alive(helper)
        gateway.kill()
        gateway.wait()
        deadline = time.monotonic() + 15
        while _alive(helper) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(helper), "the upstream's helper outlived the gateway"
    finally:
        gateway.kill()
        gateway.wait()
        assert gateway.stdout is not None
        gateway.stdout.close()
        with contextlib.suppress(ProcessLookupError, FileNotFoundError, ValueError):
            os.kill(int((tmp_path / "helper.pid").read_text()), 9)


def test_a_group_left_with_zombies_is_ended_at_once() -> None:
    """The stop of an upstream waited for its process group to empty, and a zombie (the
    watcher's, or a helper's, until init reaps it: about once a second on some machines)
    held each stop 2-4 s: an idle HTTP gateway took 4-7 s to exit (outside attack 140)."""
    leader = subprocess.Popen(
        [sys.executable, "-c", "import time\ntime.sleep(60)"], start_new_session=True
    )
    try:
        began = time.monotonic()
        asyncio.run(end_group(leader.pid, 2.0))
        took = time.monotonic() - began
        assert _alive(leader.pid) is False  # a zombie: this test has not reaped it
        assert took < 1.5, f"{took:.1f} s for a group of one zombie"
    finally:
        leader.kill()
        leader.wait()


def test_the_watcher_leaves_the_upstream_group(tmp_path: Path) -> None:
    """The watcher was in the upstream's process group, which the gateway ends and waits
    for at each stop and restart (attack 140)."""
    waiting = script(tmp_path / "upstream", "#!/bin/sh\nexec sleep 30\n")
    argv = _dying_with_us(str(waiting), [], BASE_ENV, tmp_path)
    upstream = subprocess.Popen(argv, env=BASE_ENV, cwd=tmp_path, start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while "sleep 30" not in _cmdline(upstream.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        members = [pid for pid in _pids() if _group(pid) == upstream.pid and _alive(pid)]
        assert members == [upstream.pid], members
    finally:
        upstream.kill()
        upstream.wait()


def _pids() -> list[int]:
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]


def _group(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


def _cmdline(pid: int) -> str:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    return ""


SUBREAPER = """
import ctypes, os, subprocess, sys, time
from pathlib import Path
from mcp_code_mode.upstreams.process_group import WATCHER_NAME
from mcp_code_mode.upstreams.stdio import _dying_with_us
ctypes.CDLL(None).prctl(36, 1)  # PR_SET_CHILD_SUBREAPER: as a container's PID 1 reaps
folder, env = Path(sys.argv[1]), {"PATH": "/usr/bin:/bin"}

def zombies():
    found = 0
    for entry in os.listdir("/proc"):
        try:
            head, tail = open(f"/proc/{entry}/stat", "rb").read().rsplit(b")", 1)
        except (OSError, ValueError):
            continue
        fields = tail.split()
        found += fields[0] == b"Z" and int(fields[1]) == os.getpid() and WATCHER_NAME in str(head)
    return found

for _ in range(3):
    subprocess.run(_dying_with_us("true", [], env, folder), env=env, start_new_session=True)
time.sleep(4)  # each watcher outlives its upstream by 2 s, then ends
before = zombies()
subprocess.run(_dying_with_us("true", [], env, folder), env=env, start_new_session=True)
print(before, zombies(), flush=True)
"""


def test_a_gateway_that_reaps_orphans_reaps_the_watchers(tmp_path: Path) -> None:
    """Each upstream start left a zombie watcher in a gateway that is PID 1 (a container
    without an init) or a subreaper: asyncio reaps only what it started (attack 140)."""
    ran = subprocess.run(
        [sys.executable, "-c", SUBREAPER, str(tmp_path)], capture_output=True, text=True, timeout=60
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split() == ["3", "0"], ran.stdout
