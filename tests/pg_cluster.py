"""A throwaway PostgreSQL cluster for the tests: the system's PostgreSQL (Debian's `postgresql`
package), `initdb` into a temp dir and `pg_ctl start` on a free loopback port with its unix
socket in that dir, trust auth on 127.0.0.1 only. As root the server runs as the `postgres`
user (PostgreSQL refuses root). Without PostgreSQL the tests skip; in CI (`CI` set) they fail.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PASSWORD = "pg-pass-9d4e1c"  # in every URL: trust auth ignores it, messages must never show it
_OWNER = "postgres"


@dataclass(frozen=True)
class Cluster:
    """A running cluster on 127.0.0.1:`port`."""

    port: int

    def url(self, database: str = "postgres", *, password: str = PASSWORD) -> str:
        return f"postgresql://postgres:{password}@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """The URL of a new, empty database."""
        import psycopg

        name = f"runs_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


def _bin_dir() -> Path | None:
    """Debian keeps the server binaries in /usr/lib/postgresql/<major>/bin (not on PATH)."""
    found = [p.parent for p in Path("/usr/lib/postgresql").glob("*/bin/pg_ctl")]
    if found:
        return max(found, key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0)
    pg_ctl = shutil.which("pg_ctl")
    return Path(pg_ctl).resolve().parent if pg_ctl else None


def _require_postgres() -> Path:
    bin_dir = _bin_dir()
    reason = None
    if bin_dir is None or not (bin_dir / "initdb").exists():
        reason = "PostgreSQL is not installed (apt-get install postgresql)"
    elif os.geteuid() == 0 and not _user_exists(_OWNER):
        reason = f"running as root and there is no {_OWNER!r} user to run PostgreSQL as"
    if reason is not None:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the PostgreSQL tests: {reason}")
        pytest.skip(reason)
    assert bin_dir is not None
    return bin_dir


def _user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def running_cluster() -> Iterator[Cluster]:
    """Start a cluster in a new temp dir; stop it and remove the dir at exit."""
    bin_dir = _require_postgres()
    # In /tmp, not pytest's root-only tmp dir: the server's user must reach it, and a unix
    # socket path is limited to ~100 characters.
    root = Path(tempfile.mkdtemp(prefix="mcp-pg-", dir="/tmp"))
    as_owner: list[str] = []
    if os.geteuid() == 0:
        owner = pwd.getpwnam(_OWNER)
        os.chown(root, owner.pw_uid, owner.pw_gid)
        as_owner = ["setpriv", f"--reuid={_OWNER}", f"--regid={_OWNER}", "--init-groups"]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "HOME": str(root)}
    data, log = root / "data", root / "server.log"

    def run(*command: str) -> None:
        ran = subprocess.run(
            [*as_owner, *command], cwd=root, env=env, capture_output=True, text=True, timeout=120
        )
        if ran.returncode != 0:
            server_log = log.read_text(errors="replace") if log.exists() else ""
            pytest.fail(f"{command[0]} failed: {ran.stdout}{ran.stderr}{server_log}")

    port = _free_port()
    options = (
        f"-k {root} -c listen_addresses=127.0.0.1 -p {port}"
        " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    )
    pg_ctl = str(bin_dir / "pg_ctl")
    try:
        initdb = str(bin_dir / "initdb")
        run(initdb, "-D", str(data), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync")
        run(pg_ctl, "-D", str(data), "-l", str(log), "-w", "-t", "60", "-o", options, "start")
        yield Cluster(port)
    finally:
        if (data / "postmaster.pid").exists():
            subprocess.run(
                [*as_owner, pg_ctl, "-D", str(data), "-m", "immediate", "-w", "stop"],
                cwd=root,
                env=env,
                capture_output=True,
                timeout=60,
                check=False,
            )
        shutil.rmtree(root, ignore_errors=True)
