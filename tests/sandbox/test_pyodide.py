"""The Pyodide executor's own layers: Deno permissions, kill on timeout, Wasm memory cap."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from mcp_code_mode.errors import CodeModeError
from mcp_code_mode.gateway import Gateway
from mcp_code_mode.sandbox.pyodide import PyodideLauncher
from mcp_code_mode.settings import DEFAULT_ALLOWED_IMPORTS

from ..conftest import require_pyodide
from ..security.conftest import OS_MODULES
from ..support import SECRET, TEST_SERVER, ConfigWriter, server_entry, start_gateway
from .test_local import _processes


@pytest_asyncio.fixture
async def js_gateway(write_config: ConfigWriter) -> AsyncIterator[Gateway]:
    """Pyodide with `js` deliberately allowed: only Deno's permissions stand in the way."""
    require_pyodide()
    gw = await start_gateway(
        write_config({"t": server_entry(TEST_SERVER)}),
        executor="pyodide",
        extra_imports="js",
        memory_mb=128,
        pool_size=1,
    )
    try:
        yield gw
    finally:
        await gw.aclose()


@pytest.mark.parametrize(
    ("code", "needle"),
    [
        ("import js\njs.Deno.env.get('MCP_CODE_TEST_SECRET')", "NotCapable"),
        ("import js\njs.Deno.env.toObject()", "NotCapable"),
        ("import js\njs.Deno.readTextFileSync('/etc/hostname')", "NotCapable"),
        ("import js\njs.Deno.writeTextFileSync('/tmp/mcp-pyodide-marker', 'x')", "NotCapable"),
        ("import js\njs.Deno.Command.new('/bin/sh').outputSync()", "NotCapable"),
        ("import js\njs.Deno.listen(js.Object.fromEntries([['port', 0]]))", "NotCapable"),
    ],
)
async def test_deno_permissions_hold_even_with_js(
    js_gateway: Gateway, code: str, needle: str
) -> None:
    out = (await js_gateway.execute(code, timeout_s=10)).to_json()
    assert not out["ok"], out
    assert needle in out["error"]["message"] or "PermissionDenied" in out["error"]["message"]
    assert SECRET not in str(out)
    assert not Path("/tmp/mcp-pyodide-marker").exists()
    assert (await js_gateway.execute("1+1")).result == 2


async def test_a_file_left_in_proc_does_not_outlive_a_run(reuse_gateway: Gateway) -> None:
    """/proc's directories are writable, in memory: a file left there counts as state the
    reset must not keep (outside attack 14 read one back in the next run)."""
    write = (
        "import os\nfd = os.open('/proc/self/mcp_left', os.O_CREAT | os.O_WRONLY)\n"
        "os.write(fd, b'left')\nos.close(fd)\n'mcp_left' in os.listdir('/proc/self')"
    )
    assert await _result(reuse_gateway, write) is True
    assert (
        await _result(reuse_gateway, "import os\n'mcp_left' in os.listdir('/proc/self')") is False
    )


async def test_no_web_storage_outlives_a_run(js_gateway: Gateway) -> None:
    """Deno keeps `localStorage` and `caches` on disk without any write permission, shared
    by every runner: a run that reached JS could leave data for later ones (outside attack
    13). No runner has them."""
    code = (
        "import js\n[str(js.eval(f'typeof globalThis.{n}')) "
        "for n in ('localStorage', 'sessionStorage', 'caches')]"
    )
    out = (await js_gateway.execute(code, timeout_s=10)).to_json()
    assert out["result"] == ["undefined"] * 3, out


async def test_js_is_not_importable_by_default(pyodide_gateway: Gateway) -> None:
    out = (await pyodide_gateway.execute("import js")).to_json()
    assert out["error"]["type"] == "POLICY_VIOLATION"
    out = (await pyodide_gateway.execute("import json\njson.loads('1')\nimport pyodide")).to_json()
    assert out["error"]["type"] == "POLICY_VIOLATION" and out["error"]["line"] == 3


async def test_timeout_kills_the_runner(pyodide_gateway: Gateway) -> None:
    deno = {pid for pid, (_, _, cmd) in _processes().items() if b"pyodide_runner.mjs" in cmd}
    started = time.perf_counter()
    out = (await pyodide_gateway.execute("while True:\n    pass", timeout_s=1.0)).to_json()
    assert out["error"]["type"] == "TIMEOUT"
    assert time.perf_counter() - started < 2.5
    await asyncio.sleep(0.2)
    alive = {pid for pid, (_, _, cmd) in _processes().items() if b"pyodide_runner.mjs" in cmd}
    assert len(deno - alive) >= 1  # the runner that ran the loop is gone
    assert (await pyodide_gateway.execute("1+1")).result == 2


async def test_wasm_memory_cap(js_gateway: Gateway) -> None:
    out = (await js_gateway.execute("x = bytearray(400 * 1024 * 1024)\nlen(x)")).to_json()
    assert out["error"]["type"] == "MEMORY_LIMIT", out
    assert (await js_gateway.execute("len(bytearray(8 * 1024 * 1024))")).result == 8 * 1024 * 1024


async def test_runner_has_no_server_environment(pyodide_gateway: Gateway) -> None:
    assert os.environ["MCP_CODE_TEST_SECRET"] == SECRET
    runners = [pid for pid, (_, _, cmd) in _processes().items() if b"pyodide_runner.mjs" in cmd]
    assert runners
    for pid in runners:
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue  # it finished meanwhile
        assert SECRET.encode() not in environ and b"MCP_CODE_TEST_SECRET" not in environ


async def test_deno_keeps_no_compiled_code_where_others_can_write(
    pyodide_gateway: Gateway,
) -> None:
    """Deno kept its caches in /tmp/.cache/deno, shared by every user, and read compiled
    code back from there: another user's code ran in place of the runner (attack 131)."""
    assert (await pyodide_gateway.execute("1 + 1")).result == 2
    homes = set()
    for pid in _runners():
        try:
            environ = dict(
                line.split(b"=", 1)
                for line in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
                if b"=" in line
            )
        except OSError:
            continue  # it finished meanwhile
        homes.add(environ[b"DENO_DIR"].decode())
        assert environ[b"HOME"] == environ[b"DENO_DIR"]
    assert homes
    for home in map(Path, homes):
        info = home.stat()
        assert info.st_uid == os.geteuid() and info.st_mode & 0o777 == 0o700
        assert not list(home.glob("v8_code_cache*"))  # nothing compiled is kept to read back


async def test_js_heap_is_capped_with_the_runner(js_gateway: Gateway) -> None:
    """Reaching the JS bridge (here allowed on purpose) grants no memory beyond the limit:
    RLIMIT_DATA on the Deno process caps JS objects as well as Wasm memory."""
    assert "deno_memory_cap" in js_gateway.sandbox_info()["layers"]
    code = "import js\nkept = [js.Uint8Array.new(256 * 1024 * 1024) for _ in range(8)]\nlen(kept)"
    out = (await js_gateway.execute(code, timeout_s=20)).to_json()
    assert not out["ok"], "2 GiB of JS memory under a 256 MB limit"
    assert out["error"]["type"] in {"MEMORY_LIMIT", "EXECUTOR_ERROR", "RUNTIME_ERROR"}, out
    assert (await js_gateway.execute("1+1")).result == 2


# --- Runner reuse: every run starts from the same fresh state, in the same process ---


@pytest_asyncio.fixture(scope="module")
async def reuse_gateway(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Gateway]:
    """One runner (pool of one), with the modules a guest needs to change the interpreter."""
    require_pyodide()
    path = tmp_path_factory.mktemp("cfg-reuse") / "mcp_servers.json"
    path.write_text('{"servers": {}}', encoding="utf-8")
    # The security suite's module list: the same Pyodide snapshot serves both.
    gw = await start_gateway(path, executor="pyodide", pool_size=1, extra_imports=OS_MODULES)
    try:
        yield gw
    finally:
        await gw.aclose()


def _runners() -> set[int]:
    """Live Pyodide runners started by this test process."""
    return {
        pid
        for pid, (ppid, _, cmd) in _processes().items()
        if ppid == os.getpid() and b"pyodide_runner.mjs" in cmd
    }


async def _serving(gateway: Gateway) -> int:
    """The pid of the runner that will serve the next run, once the pool of one has settled."""
    pool = gateway.executor.pool  # type: ignore[attr-defined]
    for _ in range(3000):  # no reset or start under way that could still swap the idle one
        if pool.idle_count == pool.size and not pool._resetting and not pool._starting:
            break
        await asyncio.sleep(0.01)
    (runner,) = pool._idle
    assert runner.pid in _runners()
    return int(runner.pid)


async def _result(gateway: Gateway, code: str) -> object:
    out = (await gateway.execute(code, timeout_s=10)).to_json()
    assert out["ok"], out
    return out["result"]


@pytest.mark.parametrize(
    ("change", "check", "fresh"),
    [
        # state inside a module our own runtime uses (attribute writes are refused: only
        # what a module holds can change)
        (
            "import json\njson.encoder.ESCAPE_DCT['a'] = 'b'",
            "import json\njson.encoder.ESCAPE_DCT.get('a')",
            None,
        ),
        (
            "import json\njson.decoder.BACKSLASH['n'] = 'N'",
            "import json\njson.decoder.BACKSLASH['n']",
            "\n",
        ),
        # modules, and state kept in them
        (
            "import sys\nsys.modules['leaky'] = sys",
            "import sys\n'leaky' in sys.modules",
            False,
        ),
        ("import sys\nsys.setrecursionlimit(60)", "import sys\nsys.getrecursionlimit()", 1000),
        (
            "import sys\nsys.path.insert(0, '/tmp/evil')",
            "import sys\n'/tmp/evil' in sys.path",
            False,
        ),
        # a global of the guest, and a function of the standard library replaced
        ("left = 'behind'", "'left' in dir()", False),
        (
            "import random\nrandom.seed(1)",
            "import random\nrandom.random() != random.Random(1).random()",
            True,
        ),
    ],
)
async def test_state_of_a_run_is_gone_in_the_next_on_the_same_runner(
    reuse_gateway: Gateway, change: str, check: str, fresh: object
) -> None:
    runner = await _serving(reuse_gateway)
    await _result(reuse_gateway, change)
    assert await _serving(reuse_gateway) == runner  # reset in place, not replaced
    assert await _result(reuse_gateway, check) == fresh
    assert await _serving(reuse_gateway) == runner


async def test_one_runner_serves_many_runs(reuse_gateway: Gateway) -> None:
    runner = await _serving(reuse_gateway)
    for n in range(20):
        assert await _result(reuse_gateway, f"x = {n}\nx * 2") == n * 2
    assert await _serving(reuse_gateway) == runner


@pytest.mark.parametrize(
    ("change", "check", "fresh"),
    [
        (
            "fd = os.open('/tmp/leak.txt', os.O_CREAT | os.O_WRONLY)\nos.write(fd, b's3cr3t')",
            "os.listdir('/tmp')",
            [],
        ),
        ("os.mkdir('/home/pyodide/d')", "os.listdir('/home/pyodide')", []),
        ("os.utime('/tmp', (1, 1))", "os.stat('/tmp').st_mtime > 1", True),
        ("os.chmod('/tmp', 0o500)", "oct(os.stat('/tmp').st_mode & 0o777)", "0o777"),
        ("os.set_blocking(0, False)", "os.get_blocking(0)", True),
        (
            "os.dup2(os.open('/dev/null', os.O_WRONLY), 1)",
            "os.fstat(1).st_ino == os.stat('/dev/null').st_ino",
            False,
        ),
    ],
)
async def test_file_system_changes_of_a_run_are_gone_in_the_next(
    reuse_gateway: Gateway, change: str, check: str, fresh: object
) -> None:
    """Files live in the JS side of Pyodide, which the memory copy does not cover: a run
    that changed them (or descriptors, timestamps, modes) retires its runner."""
    runner = await _serving(reuse_gateway)
    await _result(reuse_gateway, f"import os\n{change}\n1")
    assert await _result(reuse_gateway, f"import os\n{check}") == fresh
    assert runner not in _processes()


async def test_a_file_left_open_does_not_retire_the_runner(reuse_gateway: Gateway) -> None:
    runner = await _serving(reuse_gateway)
    opened = "import os\nfd = os.open('/dev/null', os.O_RDONLY)\nfd"
    first = await _result(reuse_gateway, opened)
    assert await _serving(reuse_gateway) == runner
    assert await _result(reuse_gateway, opened) == first  # the descriptor was closed


async def test_a_timed_out_run_takes_its_runner_with_it(reuse_gateway: Gateway) -> None:
    runner = await _serving(reuse_gateway)
    out = (await reuse_gateway.execute("while True:\n    pass", timeout_s=1.0)).to_json()
    assert out["error"]["type"] == "TIMEOUT"
    replacement = await _serving(reuse_gateway)
    assert replacement != runner and runner not in _processes()
    assert await _result(reuse_gateway, "1 + 1") == 2


async def test_a_run_that_reached_js_retires_its_runner(js_gateway: Gateway) -> None:
    """JS state (here a global of the Deno realm) is not in the memory copy: a run that
    called Pyodide's JS FFI is never followed by another on the same runner."""
    runner = await _serving(js_gateway)
    assert await _result(js_gateway, "import js\njs.globalThis.leaked = 's3cr3t'\n1") == 1
    assert await _result(js_gateway, "import js\nstr(getattr(js, 'leaked', None))") == "None"
    assert runner not in _processes()


@pytest.mark.parametrize(
    "plant",
    [
        "Array.prototype.filter = function () { return []; }",
        "Array.prototype.some = function () { return false; }",
        "Object.defineProperty(Object.getPrototypeOf(Uint32Array.prototype), 'length',"
        " { get() { return 0; } })",
        "const s = Uint8Array.prototype.set; Uint8Array.prototype.set = function () {}",
        # outside attack 4: the exit and the `retired` line swallowed, so the runner went on
        # to say `ready` with its token and served the next user from the planted state
        "Deno.exit = () => {}; const w = Deno.stdout.writeSync.bind(Deno.stdout);"
        " const d = new TextDecoder(); Deno.stdout.writeSync ="
        " (b) => d.decode(b).includes('retired') ? b.length : w(b)",
        "JSON.parse = () => ({ op: 'reset' }); Deno.exit = () => {}",
    ],
)
async def test_js_that_rewrites_the_runners_own_checks_still_retires_it(
    js_gateway: Gateway, plant: str
) -> None:
    """A run that reached JS can redefine the built-ins the runner's reset uses (outside
    attack: `Array.prototype.filter` made the JS check pass, and planted JS read and
    rewrote later users' runs). The check comes first and uses none of them."""
    runner = await _serving(js_gateway)
    code = f"import js\njs.globalThis.planted = 1\njs.eval({plant!r})\n1"
    await js_gateway.execute(code, timeout_s=10)  # Pyodide itself may trip over the change
    assert await _serving(js_gateway) != runner
    assert runner not in _processes()
    assert await _result(js_gateway, "import js\nstr(getattr(js, 'planted', None))") == "None"


_IMPLANT = r"""(() => {
  const td = new TextDecoder(), te = new TextEncoder();
  const realRead = Deno.stdin.readSync.bind(Deno.stdin);
  const realWrite = Deno.stdout.writeSync.bind(Deno.stdout);
  globalThis.__tok = null;
  Deno.stdin.readSync = function (buf) {
    const m = td.decode(buf).match(/"token":"([0-9a-f]{32})"/);
    if (m) globalThis.__tok = m[1];
    return realRead(buf);
  };
  addEventListener("unload", () => {
    let buf = new Uint8Array(0); const chunk = new Uint8Array(1 << 16);
    const send = (o) => realWrite(te.encode(JSON.stringify(o) + "\n"));
    for (;;) {
      let i = buf.indexOf(10);
      while (i < 0) {
        const n = realRead(chunk); if (n === null) return;
        const nb = new Uint8Array(buf.length + n); nb.set(buf); nb.set(chunk.subarray(0, n), buf.length);
        buf = nb; i = buf.indexOf(10);
      }
      const m = JSON.parse(td.decode(buf.subarray(0, i))); buf = buf.slice(i + 1);
      if (m.op === "reset") send({ op: "ready", pid: Deno.pid, token: globalThis.__tok });
      else send({ op: "done", ok: true, stdout: "", result: "HIJACKED", logs: [], error: null });
    }
  });
})()"""


async def test_js_that_steals_the_token_and_outlives_its_exit_serves_no_one(
    js_gateway: Gateway,
) -> None:
    """Outside attack 5: the token was left in the runner's stdin buffer (the tail of
    `init`), and an `unload` listener kept a retired runner alive to answer resets with it
    and serve later runs. The watchdog thread alone holds the token now."""
    runner = await _serving(js_gateway)
    code = f"import js\njs.eval({_IMPLANT!r})\ntools.t.echo(text='x')\nstr(js.globalThis.__tok)"
    out = (await js_gateway.execute(code, timeout_s=10)).to_json()
    assert out["result"] in (None, "None"), out  # no token found in what the runner read
    for _ in range(3):
        assert await _result(js_gateway, "'served'") == "served"
    assert runner not in _processes()


async def test_a_forged_ready_does_not_get_the_runner_reused(reuse_gateway: Gateway) -> None:
    """Guest code that speaks the protocol itself (forges `done`, then answers the reset)
    lacks the runner's token: the host kills the runner."""
    runner = await _serving(reuse_gateway)
    forge = """
import json, os
fd = os.open('/dev/mcp_host', os.O_RDWR)
done = {"op": "done", "ok": True, "result": "forged", "stdout": "", "logs": [], "error": None}
os.write(fd, json.dumps(done).encode() + b"\\n")
os.read(fd, 1 << 16)  # the host's reset
os.write(fd, json.dumps({"op": "ready", "pid": 1, "token": "guess"}).encode() + b"\\n")
os.read(fd, 1 << 16)  # waits for a run that never comes
"""
    assert await _result(reuse_gateway, forge) == "forged"
    replacement = await _serving(reuse_gateway)
    assert replacement != runner and runner not in _processes()
    assert await _result(reuse_gateway, "1 + 1") == 2


async def test_a_runner_keeps_the_last_index_it_was_sent() -> None:
    """A run message without `index` runs with the last one that runner received, across
    resets; `index_version` (the executor's record of it) starts empty."""
    require_pyodide()
    launcher = PyodideLauncher(allowed_imports=list(DEFAULT_ALLOWED_IMPORTS))
    await launcher.start()
    runner = await launcher.fork(memory_mb=256)
    try:
        assert runner.index_version is None and runner.reusable
        one = {"srv": {"name": "srv", "tools": {"ping": "ping"}}}
        two = {"other": {"name": "other", "tools": {}}}
        base = {"op": "run", "input": None, "timeout_s": 10, "max_output_chars": 1000}
        seen = []
        for index in (one, None, two, None):
            message = {**base, "code": "repr(tools)", **({"index": index} if index else {})}
            await runner.send(message)  # type: ignore[arg-type]  # `index` left out on purpose
            done = await runner.receive()
            assert done is not None and done["op"] == "done", done
            seen.append(done["result"])
            assert await runner.reset()
        assert seen == ["<tools: srv>", "<tools: srv>", "<tools: other>", "<tools: other>"]
        assert runner.pid in _runners()
    finally:
        await runner.dispose()
        await launcher.aclose()


def test_snapshots_in_use_are_not_pruned(tmp_path: Path) -> None:
    """Many configurations at once (several gateways, a test run beside a server): a
    snapshot used within the hour stays, however many there are; older ones beyond the
    three most recent go."""
    from mcp_code_mode.sandbox.pyodide_setup import prune_snapshots

    paths = [tmp_path / f"snapshot-{i}.bin" for i in range(6)]
    for i, path in enumerate(paths):
        path.write_bytes(b"x")
        os.utime(path, (time.time() - i, time.time() - i))
    prune_snapshots(paths[0])
    assert all(p.exists() for p in paths)
    for i, path in enumerate(paths[3:], start=3):
        os.utime(path, (time.time() - 7200 - i, time.time() - 7200 - i))
    prune_snapshots(paths[0])
    assert [p.exists() for p in paths] == [True, True, True, False, False, False]


async def test_a_runner_starts_after_its_snapshot_was_removed(write_config: ConfigWriter) -> None:
    """Another gateway may remove a snapshot this one uses: the next runner makes it again."""
    require_pyodide()
    gw = await start_gateway(
        write_config({"t": server_entry(TEST_SERVER)}),
        executor="pyodide",
        extra_imports="html",  # a configuration of its own: its snapshot is this test's
        pool_size=1,
    )
    try:
        snapshot = gw.executor.launcher._snapshot  # type: ignore[attr-defined]
        assert snapshot is not None and snapshot.is_file()
        snapshot.unlink()
        out = (await gw.execute("while True:\n    pass", timeout_s=1.0)).to_json()
        assert out["error"]["type"] == "TIMEOUT"  # its runner is gone; the next one starts
        assert (await gw.execute("import html\nhtml.escape('<')", timeout_s=60)).result == "&lt;"
        assert snapshot.is_file()
    finally:
        await gw.aclose()


@pytest.mark.parametrize("case", ["deno is a link", "another user's cache folder"])
def test_deno_keeps_its_caches_only_in_a_folder_of_the_users_own(tmp_path: Path, case: str) -> None:
    """A `deno` link, or a cache folder of another user's (`MCP_CODE_CACHE_DIR=/tmp`), let
    that user choose where Deno's caches go (attack 134)."""
    root = tmp_path / "mcp-code-mode"
    root.mkdir(mode=0o777)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o755)
    if case == "deno is a link":
        (root / "deno").symlink_to(elsewhere)
    elif os.geteuid() != 0:
        pytest.skip("giving a folder to another user needs root")
    else:
        os.chown(root, 65534, 65534)
    launcher = PyodideLauncher(allowed_imports=[], cache_dir=str(tmp_path))
    with pytest.raises(CodeModeError, match="not this user's own folder"):
        launcher._deno_home()
    assert elsewhere.stat().st_mode & 0o777 == 0o755  # not made 0700 through the link
