"""How a stdio upstream is launched so that it ends with the gateway (`upstreams/with_parent.py`),
driven as the transport drives it: the argv `_dying_with_us` makes, run from this process as
the gateway (outside attack 139 found the environment, the command lookup and the error of
a command that cannot run changed by the launcher)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

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
