"""Run the npm package `@modelcontextprotocol/server-everything` over streamable HTTP, for tests.

Install (done by `ensure_installed()` on first use, then reused from the cache):

    npm install --no-audit --no-fund --prefix ~/.cache/mcp-code-mode-tests/server-everything/2026.8.31 \
        @modelcontextprotocol/server-everything@2026.8.31

Command line the server is started with (it has no host option: it listens on every
interface, IPv4 and IPv6; it reads its port from the PORT environment variable, default 3001):

    PORT=<port> node <cache>/node_modules/@modelcontextprotocol/server-everything/dist/index.js streamableHttp

The MCP endpoint is http://127.0.0.1:<port>/mcp. Works on Node 20 (tested v20.20.2).

Usage:

    async with EverythingServer() as srv:           # free loopback port, waits until it answers
        ... StreamableHttpTransport(srv.url) ...
        await srv.restart()                          # SIGKILL, then the same command on the same port
        await srv.stop()                             # optional; the context manager stops it too

As a pytest-asyncio fixture (asyncio_mode = "auto"):

    @pytest.fixture
    async def everything():
        if shutil.which("node") is None or shutil.which("npm") is None:
            pytest.skip("node/npm not installed")
        async with EverythingServer() as srv:
            yield srv

Only the standard library is used.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

from .npm_packages import cache_root, installed

__all__ = [
    "EVERYTHING_VERSION",
    "EverythingServer",
    "cache_dir",
    "ensure_installed",
    "free_port",
    "server_command",
]

EVERYTHING_VERSION = "2026.8.31"
PACKAGE = "@modelcontextprotocol/server-everything"


ENTRY = "node_modules/@modelcontextprotocol/server-everything/dist/index.js"


def cache_dir() -> Path:
    """Where the package is installed (`npm_packages.cache_root()`)."""
    return cache_root() / "server-everything" / EVERYTHING_VERSION


def ensure_installed(timeout_s: float = 300.0) -> Path:
    """The package's dist/index.js, installed from the npm registry on first use."""
    name = f"server-everything/{EVERYTHING_VERSION}"
    return installed(name, [f"{PACKAGE}@{EVERYTHING_VERSION}"], ENTRY, timeout_s)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_command(entry: Path | None = None) -> list[str]:
    """argv of the server (PORT goes in the environment)."""
    node = shutil.which("node")
    if node is None:
        raise RuntimeError("node is not installed")
    return [node, str(entry or ensure_installed()), "streamableHttp"]


class EverythingServer:
    """server-everything over streamable HTTP on a loopback port; restartable on that port."""

    def __init__(
        self,
        port: int | None = None,
        *,
        startup_timeout_s: float = 30.0,
        env: dict[str, str] | None = None,
    ) -> None:
        self.port = port or free_port()
        self.startup_timeout_s = startup_timeout_s
        self._extra_env = env or {}
        self.process: asyncio.subprocess.Process | None = None
        self.last_start_s = 0.0  # seconds from spawn until the port accepted a connection
        fd, log_path = tempfile.mkstemp(prefix="server-everything-", suffix=".log")
        os.close(fd)
        self.log_path = Path(log_path)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    async def start(self) -> None:
        argv = server_command(await asyncio.to_thread(ensure_installed))
        env = {**os.environ, **self._extra_env, "PORT": str(self.port)}
        deadline = time.monotonic() + self.startup_timeout_s
        while True:
            t0 = time.monotonic()
            with open(self.log_path, "ab") as log:
                self.process = await asyncio.create_subprocess_exec(
                    *argv,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=log,
                    start_new_session=True,  # its own process group: signals reach only it
                )
            if await self._wait_listening(deadline):
                self.last_start_s = time.monotonic() - t0
                return
            # It exited (e.g. EADDRINUSE while the old socket lingers): try again until the deadline.
            if time.monotonic() >= deadline:
                await self.stop()
                raise RuntimeError(
                    f"server-everything did not listen on port {self.port} within "
                    f"{self.startup_timeout_s}s; log:\n{self.log_path.read_text(errors='replace')[-2000:]}"
                )
            await asyncio.sleep(0.1)

    async def _wait_listening(self, deadline: float) -> bool:
        assert self.process is not None
        while time.monotonic() < deadline:
            if self.process.returncode is not None:
                return False
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", self.port)
            except OSError:
                await asyncio.sleep(0.02)
                continue
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
            return True
        return False

    async def stop(self, sig: int = signal.SIGKILL) -> None:
        """Send `sig` (default SIGKILL, as a crash) and wait until the process is gone."""
        proc, self.process = self.process, None
        if proc is None or proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(sig)
        try:
            await asyncio.wait_for(proc.wait(), 10)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()

    async def restart(self, sig: int = signal.SIGKILL) -> None:
        """Kill the server and start it again on the same port (all sessions are lost)."""
        await self.stop(sig)
        await self.start()

    async def __aenter__(self) -> EverythingServer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()
        with contextlib.suppress(OSError):
            self.log_path.unlink()
