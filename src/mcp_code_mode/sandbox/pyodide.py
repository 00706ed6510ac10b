"""`MCP_EXECUTOR=pyodide`: guest code in CPython compiled to WebAssembly, inside Deno.

Each runner is a Deno process with its own Pyodide interpreter (kept warm in the pool).
Every run starts from the same fresh interpreter state: after a run that ended with `done`,
the runner writes back the copy of Wasm memory it took when it first became ready (and
refuses, so that it is killed and replaced, when the run left state that copy does not
cover; see `pyodide_runner.mjs`). A run that timed out, crashed or was killed takes its
process with it. Deno grants read access to the Pyodide files only: no environment,
network, file writes or subprocesses. Wasm memory is capped with V8's
`--wasm-max-mem-pages`; a timeout kills the process group. The guest API is the same as the
local executor's: the runner loads our guest runtime (`sandbox/child/`) into Pyodide
and bridges tool calls to the host over stdin/stdout.

What a runner needs on disk (Pyodide, Deno, snapshots) comes from `pyodide_setup`.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import logging
import os
import resource
import secrets
import signal
import stat
from importlib import resources
from pathlib import Path

from ..errors import CodeModeError, WorkerCrashed
from ..settings import Settings, cache_root
from .base import GuestIndex
from .channel import LINE_LIMIT, Channel
from .protocol import ChildMessage, HostMessage, RunnerInitMessage
from .pyodide_setup import (
    NO_DENO,
    PYODIDE_VERSION,
    deno_binary,
    prune_snapshots,
    pyodide_dir,
)

__all__ = ["PyodideLauncher", "PyodideRunner", "v8_flags"]

logger = logging.getLogger(__name__)

_START_TIMEOUT_S = 60.0
_RESET_TIMEOUT_S = 2.0  # a reset takes milliseconds; a caller may wait this long for one
_MAX_RUNS = 1000  # per runner, then it is replaced: bounds whatever slowly accumulates
_SHARED_FILES = ("__init__.py", "protocol.py")  # of `sandbox/`; `sandbox/child/` goes whole


def _guest_sources() -> dict[str, str]:
    """What a runner imports, by path: `sandbox/child/` whole and the two files it shares."""
    package = resources.files("mcp_code_mode.sandbox")
    files = {f"mcp_code_mode/sandbox/{n}": package.joinpath(n).read_text() for n in _SHARED_FILES}
    child = package.joinpath("child")
    files.update(
        {
            f"mcp_code_mode/sandbox/child/{item.name}": item.read_text()
            for item in child.iterdir()
            if item.name.endswith(".py")
        }
    )
    return files


_STACK_KB = 4000
"""Half the 8 MB a main thread's stack usually has (`ulimit -s`): V8 must stop short of it."""


def v8_flags(memory_mb: int, *, js_allowed: bool = False) -> str:
    """V8's flags for a runner: Wasm memory capped at `memory_mb`, and no JavaScript made
    from strings (`eval`, `Function(text)`): JS that guest code might reach through a
    proxy (outside attack 46 had JS's `Function` from a JavaScript error) cannot run text
    it chose. Pyodide itself needs neither once loaded. Not when the operator allowed the
    `js` module: guest code then has JavaScript (`js.eval` included) by their choice.

    Stacks of `_STACK_KB`, the JS one and those Wasm runs on under JSPI: with V8's ~1 MB,
    data nested 6,000 deep (`repr`, `json.dumps`) overflowed them before Python's C
    recursion limit (10,000) could raise, and the runner died (outside attack 112)."""
    pages = max(memory_mb * 16, 256)  # 64 KiB Wasm pages
    flags = (
        f"--wasm-max-mem-pages={pages},--stack-size={_STACK_KB},"
        f"--wasm-stack-switching-stack-size={_STACK_KB}"
    )
    return flags if js_allowed else f"{flags},--disallow-code-generation-from-strings"


class PyodideRunner:
    """One Deno + Pyodide process serving run after run, each from the same fresh state."""

    reusable = True

    def __init__(self, proc: asyncio.subprocess.Process, *, token: str) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        self.proc = proc
        self.pid = proc.pid
        self.workdir = ""
        self.index_version: int | None = None  # the runner keeps the last index it was sent
        self.token = token  # only the host and the runner's JS know it, never guest code
        self._disposed = False
        # Guest code can reach Deno's stdout: the channel checks every line.
        self._channel = Channel(proc.stdout, proc.stdin, peer="runner")

    async def send(self, message: HostMessage) -> None:
        await self._channel.send(message)

    async def receive(self) -> ChildMessage | None:
        return await self._channel.receive()

    def exited(self) -> bool:
        return self.proc.returncode is not None

    async def reset(self) -> bool:
        """After a run that ended with `done`: restore the state runs start from.

        False when the runner could not (it retired: the run reached JS, changed files,
        grew memory; or it did not answer with its token in time): dispose of it then.
        """
        try:
            await self._channel.send({"op": "reset"})
            async with asyncio.timeout(_RESET_TIMEOUT_S):
                answer = await self._channel.receive()
        except (ConnectionError, TimeoutError, WorkerCrashed):
            return False
        if answer is not None and answer["op"] == "retired":
            logger.debug("Pyodide runner %d retired: %s", self.pid, answer["reason"])
            return False
        # Guest code can write raw lines, but it never has the token (see the runner).
        return (
            answer is not None
            and answer["op"] == "ready"
            and secrets.compare_digest(str(answer.get("token", "")).encode(), self.token.encode())
        )

    def produced(self) -> tuple[str, list[str]]:
        return "", []  # no shared memory with a Deno process: a killed runner's output is lost

    def logs_since(self, offset: int) -> tuple[list[str], int]:
        return [], offset  # the same: its log lines come with its `done`

    def kill(self) -> None:
        if not self.exited():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)

    async def dispose(self) -> None:
        if self._disposed:
            return
        self._disposed = True
        self.kill()
        with contextlib.suppress(ConnectionError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        await asyncio.shield(self.proc.wait())


class PyodideLauncher:
    """Starts warm Pyodide runners; plays the zygote's part for the worker pool."""

    name = "pyodide"
    sessions = True  # a session holds a runner, never reset, until it ends; other runs reset it

    def __init__(
        self,
        *,
        allowed_imports: list[str] | tuple[str, ...],
        wheelhouse: str | None = None,
        cache_dir: str | None = None,
    ) -> None:
        self._cache_dir = cache_dir
        self._allowed_imports = list(allowed_imports)
        self._wheelhouse = Path(wheelhouse).expanduser() if wheelhouse else None
        self.layers: dict[str, bool] = {}
        self._files: dict[str, str] = {}
        self._deno: str | None = None
        self._dir: Path | None = None
        self._snapshot: Path | None = None
        self._wheels: dict[str, str] = {}

    @classmethod
    def from_settings(cls, settings: Settings) -> PyodideLauncher:
        return cls(
            allowed_imports=settings.allowed_imports,
            wheelhouse=settings.wheelhouse,
            cache_dir=settings.cache_dir,
        )

    async def start(self) -> None:
        self._deno = deno_binary()
        self._dir = pyodide_dir(self._cache_dir)
        if self._deno is None:
            raise CodeModeError(f"MCP_EXECUTOR=pyodide needs {NO_DENO}")
        if not (self._dir / "pyodide.mjs").is_file():
            raise CodeModeError(
                "MCP_EXECUTOR=pyodide needs Pyodide: run `mcp-code-mode setup pyodide` first"
            )
        root = "/home/pyodide/mcp"
        self._files = {f"{root}/mcp_code_mode/__init__.py": ""}
        self._files.update({f"{root}/{path}": text for path, text in _guest_sources().items()})
        self._root = root
        self._wheels = self._read_wheels()
        self._snapshot = await self._ensure_snapshot()
        self.layers = {
            "wasm_sandbox": True,
            "deno_permissions_read_only": True,
            "no_env": True,
            "no_network": True,
            "wasm_memory_cap": True,
            "kill_on_timeout": True,
            "deno_memory_cap": _can_cap_memory(),
        }

    async def _spawn(
        self, *, memory_mb: int, args: list[str], allow_write: str = ""
    ) -> PyodideRunner:
        assert self._deno is not None and self._dir is not None
        runner_js = str(resources.files("mcp_code_mode.sandbox").joinpath("pyodide_runner.mjs"))
        home = self._deno_home()
        readable = ",".join([str(self._dir), *([str(self._snapshot)] if self._snapshot else [])])
        writable = [f"--allow-write={allow_write}"] if allow_write else []
        proc = await asyncio.create_subprocess_exec(
            self._deno,
            "run",
            "--quiet",
            "--no-prompt",
            "--no-config",
            "--no-lock",
            "--no-remote",
            "--no-code-cache",  # compiled code is never read back from disk (attack 131)
            "--unstable-detect-cjs",
            f"--allow-read={readable}",
            *writable,
            f"--v8-flags={v8_flags(memory_mb, js_allowed='js' in self._allowed_imports)}",
            runner_js,
            str(self._dir),
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,  # guest code that reached Deno may write there
            cwd=home,
            env={
                "PATH": os.defpath,
                "HOME": home,
                "DENO_DIR": home,
                "NO_COLOR": "1",
                "DENO_NO_UPDATE_CHECK": "1",
            },
            start_new_session=True,
            limit=LINE_LIMIT,
        )
        return PyodideRunner(proc, token=secrets.token_hex(16))

    def _deno_home(self) -> str:
        """Deno's own folder (its caches), this user's alone: one in /tmp was shared by
        every user, and code compiled there ran in place of the runner (attack 131)."""
        root = cache_root(self._cache_dir)
        home = root / "deno"
        home.mkdir(mode=0o700, parents=True, exist_ok=True)
        # neither it nor the folder holding it another's, writable by others, or (it) a link
        for folder, info in ((root, root.stat()), (home, home.lstat())):
            if info.st_uid != os.geteuid() or info.st_mode & 0o002 or stat.S_ISLNK(info.st_mode):
                raise CodeModeError(
                    f"{folder} is not this user's own folder: set MCP_CODE_CACHE_DIR to one"
                )
        home.chmod(0o700)
        return str(home)

    async def _ensure_snapshot(self) -> Path | None:
        """A memory snapshot of a prepared interpreter, made once per runtime version."""
        digest = hashlib.sha256(
            json.dumps([PYODIDE_VERSION, self._files, self._allowed_imports, self._wheels]).encode()
        ).hexdigest()[:16]
        path = cache_root(self._cache_dir) / f"pyodide-{PYODIDE_VERSION}" / f"snapshot-{digest}.bin"
        if path.is_file():
            with contextlib.suppress(OSError):
                os.utime(path)  # recently used: kept by `prune_snapshots`
            return path
        self._snapshot = None
        logger.warning(
            "mcp-code-mode: preparing the Pyodide snapshot for this configuration "
            "(once; about 20 s, then each runner starts in about 0.4 s)"
        )
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        maker = await self._spawn(
            memory_mb=1024, args=["--make-snapshot", str(partial)], allow_write=str(partial)
        )
        try:
            await maker.send(self._init_message(maker))
            async with asyncio.timeout(_START_TIMEOUT_S):
                done = await maker.receive()
        finally:
            await maker.dispose()
        if done is None or done["op"] != "snapshot" or not partial.is_file():
            partial.unlink(missing_ok=True)
            return None  # runners then load Pyodide from scratch: slower, same behaviour
        partial.replace(path)
        prune_snapshots(path)
        return path

    def _read_wheels(self) -> dict[str, str]:
        """Pure-Python wheels of MCP_CODE_WHEELHOUSE, base64 by file name (no network)."""
        if self._wheelhouse is None:
            return {}
        if not self._wheelhouse.is_dir():
            raise CodeModeError(f"MCP_CODE_WHEELHOUSE={self._wheelhouse} is not a directory")
        wheels = {}
        for wheel in sorted(self._wheelhouse.glob("*.whl")):
            if not wheel.name.endswith("-none-any.whl"):
                raise CodeModeError(
                    f"{wheel.name}: only pure-Python wheels (*-none-any.whl) load in Pyodide"
                )
            wheels[wheel.name] = base64.b64encode(wheel.read_bytes()).decode()
        return wheels

    def _init_message(self, runner: PyodideRunner) -> RunnerInitMessage:
        return {
            "op": "init",
            "files": self._files,
            "root": self._root,
            "allowed_imports": self._allowed_imports,
            "wheels": self._wheels,
            "token": runner.token,
            "max_runs": _MAX_RUNS,
        }

    async def fork(self, *, memory_mb: int) -> PyodideRunner:
        if self._snapshot is not None and not self._snapshot.is_file():
            # Another gateway pruned it (many configurations at once): make it again.
            self._snapshot = await self._ensure_snapshot()
        args = [str(self._snapshot)] if self._snapshot else []
        runner = await self._spawn(memory_mb=memory_mb, args=args)
        try:
            await runner.send(self._init_message(runner))
            async with asyncio.timeout(_START_TIMEOUT_S):
                ready = await runner.receive()
            if ready is None or ready["op"] != "ready":
                raise WorkerCrashed(f"Pyodide runner did not start (exit {runner.proc.returncode})")
            if self.layers.get("deno_memory_cap"):
                _cap_process_memory(runner.proc.pid, memory_mb)
        except BaseException:
            await runner.dispose()
            raise
        return runner

    def use_index(self, index: GuestIndex) -> None:
        """Runners start without an index: each gets it with its first run."""

    async def aclose(self) -> None:
        return None


_MEMORY_SLACK_MB = 128  # beyond the Wasm memory limit, for the JS side of a run


def _data_kb(pid: int) -> int | None:
    """The process's private writable memory (`VmData`), which RLIMIT_DATA counts."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmData:"):
            return int(line.split()[1])
    return None


def _can_cap_memory() -> bool:
    return hasattr(resource, "prlimit") and _data_kb(os.getpid()) is not None


def _cap_process_memory(pid: int, memory_mb: int) -> None:
    """Cap a started runner's whole memory: what it holds now, plus the Wasm limit, plus a
    little. `--wasm-max-mem-pages` caps only Wasm memory; JS objects (a guest that reached
    the JS bridge could make 8 x 256 MiB `Uint8Array`s) would grow without this. RLIMIT_AS
    cannot serve: V8 reserves tens of GB of address space it never touches; RLIMIT_DATA
    counts only memory made writable. Past it, allocations fail and the runner dies."""
    used_kb = _data_kb(pid)
    if used_kb is None:
        return
    limit = (used_kb // 1024 + memory_mb + _MEMORY_SLACK_MB) * 1024 * 1024
    with contextlib.suppress(OSError, ValueError):
        resource.prlimit(pid, resource.RLIMIT_DATA, (limit, limit))
