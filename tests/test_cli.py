"""The `mcp-code-mode` command line, run as a real subprocess against the bundled demo config."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .servers.stub_lm import chat_reply, serve_stub
from .support import ROOT, TEST_SERVER, server_entry

pytestmark = pytest.mark.slow  # whole commands in subprocesses

SCRIPT = Path(sys.executable).parent / "mcp-code-mode"


def cli(
    *args: str,
    stdin: str | None = None,
    cwd: Path = ROOT,
    timeout: float = 90,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MCP_CODE_POOL_SIZE": "1", **(env or {})}
    return subprocess.run(
        [str(SCRIPT), *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=timeout,
    )


def test_exec_demo_readme_example() -> None:
    proc = cli(
        "exec",
        "--code",
        "orders = tools.data.list_orders(status='refunded')\n"
        "len([o for o in orders if o['amount'] > 850])",
    )
    assert proc.returncode == 0, proc.stderr
    # On a busy machine a note on the wait for the upstreams' start comes first, as logs.
    assert int(proc.stdout.split("--- result ---\n")[-1].strip()) > 0, proc.stdout
    assert "1 tool call" in proc.stderr


def test_exec_json_output_and_input() -> None:
    proc = cli(
        "exec",
        "--json",
        "--input",
        '{"tag": "work"}',
        "--code",
        "print('checking')\n[n['id'] for n in tools.notes.list_notes(tag=input['tag'])]",
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["ok"] is True and data["result"] == [1, 3]
    assert data["stdout"] == "checking\n"
    assert data["tool_calls"][0]["server"] == "notes"


def test_exec_failure_exits_1(tmp_path: Path) -> None:
    snippet = tmp_path / "snippet.py"
    snippet.write_text("x = 1\nimport os\n")
    proc = cli("exec", "--json", "--file", str(snippet))
    assert proc.returncode == 1
    data = json.loads(proc.stdout)
    assert data["error"]["type"] == "POLICY_VIOLATION" and data["error"]["line"] == 2
    readable = cli("exec", "-", stdin="1/0\n")
    assert readable.returncode == 1
    assert "RUNTIME_ERROR (line 1)" in readable.stderr and "ZeroDivisionError" in readable.stderr


@pytest.mark.timeout(300)  # five gateway starts: past 90 s beside a CI run and two hogs
def test_tools_listing_search_and_json() -> None:
    listing = cli("tools", "--server", "data")
    assert listing.returncode == 0, listing.stderr
    assert "tools.data.order_stats() -> dict" in listing.stdout
    found = cli("tools", "--search", "convert timezone", "--limit", "1")
    assert found.stdout.startswith("tools.time.convert_time(")
    assert cli("tools", "--search", "list", "--limit", "1").stdout.startswith("tools.notes.")
    in_data = cli("tools", "--search", "list", "--server", "data", "--limit", "1")
    assert in_data.returncode == 0, in_data.stderr
    assert in_data.stdout.startswith("tools.data.list_")  # filtered before the limit, not after
    nothing = cli("tools", "--search", "zzqx frobnicate")  # it printed nothing at all (M)
    assert nothing.returncode == 0 and nothing.stdout == "", nothing.stdout
    assert "no tool fits 'zzqx frobnicate'" in nothing.stderr, nothing.stderr
    data = json.loads(cli("tools", "--json").stdout)
    assert {t["server"] for t in data["tools"]} == {"notes", "data", "time"}
    assert data["sandbox"]["executor"] == "local" and "worker_process" in data["sandbox"]["layers"]


def test_bad_setting_is_a_clear_error() -> None:
    env = {**os.environ, "MCP_EXECUTOR": "bogus"}
    proc = subprocess.run(
        [str(SCRIPT), "exec", "--code", "1"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    assert "MCP_EXECUTOR='bogus'" in proc.stderr and "Traceback" not in proc.stderr


def test_an_unguarded_module_in_the_allowlist_is_a_warning() -> None:
    """`inspect` hands guest code real modules (outside attack 36): allowed, it is said;
    and so is a module nobody checked (`weakref`), but not one that was (`time`)."""
    proc = cli("exec", "--code", "1 + 1", env={"MCP_CODE_ALLOWED_IMPORTS": "time,inspect,weakref"})
    assert proc.returncode == 0 and proc.stdout.startswith("2"), proc.stderr
    assert "inspect is not guarded by the sandbox's Python layer" in proc.stderr
    assert "weakref has not been checked against the sandbox's Python layer" in proc.stderr
    assert "time " not in proc.stderr  # checked: nothing said


def test_an_allowed_package_brings_its_submodules() -> None:
    """`xml` allowed: `xml.etree.ElementTree` imports in a worker whose uid may not read the
    interpreter's files (here a Python beneath /root), because the zygote loaded it."""
    code = (
        "import xml.etree.ElementTree as ET\nfrom xml.dom import minidom\n"
        "[ET.fromstring('<a><b/></a>')[0].tag, minidom.parseString('<x/>').documentElement.tagName]"
    )
    proc = cli("exec", "--json", "--code", code, env={"MCP_CODE_ALLOWED_IMPORTS": "xml"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["result"] == ["b", "x"]


def test_bad_config_is_a_clear_error(tmp_path: Path) -> None:
    config = tmp_path / "bad.json"
    config.write_text(json.dumps({"servers": {"x": {"comand": "python"}}}))
    proc = cli("exec", "--config", str(config), "--code", "1")
    assert proc.returncode == 2
    assert str(config) in proc.stderr and "'x'" in proc.stderr and "'comand'" in proc.stderr
    missing = cli("tools", "--config", str(tmp_path / "nope.json"))
    assert missing.returncode == 2 and "file not found" in missing.stderr


def test_down_server_is_a_warning_not_a_failure(tmp_path: Path) -> None:
    config = tmp_path / "mcp_servers.json"
    config.write_text(
        json.dumps(
            {
                "servers": {
                    "t": server_entry(TEST_SERVER),
                    "gone": {"command": "/nonexistent/cmd"},
                }
            }
        )
    )
    code = "try:\n    tools.gone.anything()\nexcept ToolError:\n    pass\ntools.t.echo(text='fine')"
    proc = cli("exec", "--code", code, cwd=tmp_path)
    # the result's line: a wait past 5 s for the upstream to start puts a note above it
    assert proc.returncode == 0 and proc.stdout.strip().splitlines()[-1] == "fine"
    assert "warning: server 'gone'" in proc.stderr and "/nonexistent/cmd" in proc.stderr


def test_exec_starts_only_the_servers_its_code_uses(tmp_path: Path) -> None:
    """`exec` reads which upstreams the code names; the others never start (issue 19)."""

    def marking(name: str) -> dict[str, object]:
        # A stdio "server" that only leaves a mark that it was started.
        touch = f"import pathlib; pathlib.Path({name!r}).touch()"
        return {"command": "python", "args": ["-c", touch], "timeout_s": 5}

    config = tmp_path / "mcp_servers.json"
    config.write_text(
        json.dumps(
            {
                "servers": {
                    "t": server_entry(TEST_SERVER),
                    "a": marking("a.started"),
                    "b": marking("b.started"),
                }
            }
        )
    )
    plain = cli("exec", "--code", "1+1", cwd=tmp_path)
    assert plain.returncode == 0 and plain.stdout.strip() == "2"
    assert plain.stderr.count("warning") == 0
    named = cli("exec", "--code", "tools.t.echo(text='x')", cwd=tmp_path)
    assert named.returncode == 0 and named.stdout.strip().splitlines()[-1] == "x"
    assert not (tmp_path / "a.started").exists() and not (tmp_path / "b.started").exists()
    # A server named only at run time starts on its call; so does every one when the code
    # reaches servers dynamically.
    dynamic = cli("exec", "--code", "call_tool('a' + '', 'x', {})", cwd=tmp_path)
    assert dynamic.returncode == 1 and "ToolError" not in dynamic.stdout
    assert (tmp_path / "a.started").exists() and (tmp_path / "b.started").exists()


def test_settings_beside_the_config_hold_when_launched_from_root(tmp_path: Path) -> None:
    """Claude Desktop starts the command from `/` with `--config`: the `.env` beside the
    config still sets the run's limits."""
    config = tmp_path / "mcp_servers.json"
    config.write_text(json.dumps({"servers": {}}), encoding="utf-8")
    (tmp_path / ".env").write_text("MCP_CODE_TIMEOUT_S=1.5\n", encoding="utf-8")
    proc = cli("exec", "--config", str(config), "--code", "while True:\n    pass", cwd=Path("/"))
    assert proc.returncode == 1 and "1.5s time limit" in proc.stdout + proc.stderr


def test_setup_pyodide_says_what_is_missing(tmp_path: Path) -> None:
    """No Node.js or npm on the PATH and nothing installed yet: told so, not "ready"."""
    env = {**os.environ, "PATH": str(tmp_path / "empty"), "MCP_CODE_CACHE_DIR": str(tmp_path)}
    proc = subprocess.run(
        [str(SCRIPT), "setup", "pyodide"], capture_output=True, text=True, env=env, timeout=60
    )
    assert proc.returncode == 2 and "ready" not in proc.stdout
    assert "Node.js and npm" in proc.stderr and "Traceback" not in proc.stderr


def test_check_the_demo_config() -> None:
    proc = cli("check")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert "notes: ok 7 tools" in lines and "data: ok 4 tools" in lines
    assert any(line.startswith("sandbox local: ") for line in lines)
    assert any(line.startswith("runs: ok ") for line in lines), lines


def test_check_fails_on_a_run_store_it_cannot_open(tmp_path: Path) -> None:
    """Runs that could not be recorded were found out only by `runs` and `exec`: `check`
    said nothing and exited 0 (outside attack 129)."""
    config = tmp_path / "mcp_servers.json"
    config.write_text(json.dumps({"servers": {"t": server_entry(TEST_SERVER)}}), encoding="utf-8")
    unusable = {"MCP_CODE_RUNS_DB": "/dev/null/runs.sqlite3"}  # under a file: never a folder
    proc = cli("check", "--config", str(config), "--json", env=unusable)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    runs = json.loads(proc.stdout)["runs"]
    assert runs["status"] == "error" and runs["location"] == unusable["MCP_CODE_RUNS_DB"], runs
    assert runs["error"], runs
    shown = cli("check", "--config", str(config), env=unusable).stdout
    runs_line = next(line for line in shown.splitlines() if line.startswith("runs:"))
    assert runs_line.count(unusable["MCP_CODE_RUNS_DB"]) == 1, runs_line
    listed = cli("runs", env=unusable)
    assert "none can be: /dev/null is not a folder" in listed.stderr, listed.stderr
    off = cli("check", "--config", str(config), "--json", env={**unusable, "MCP_CODE_RUNS": "off"})
    assert off.returncode == 0 and json.loads(off.stdout)["runs"]["status"] == "off", off.stdout


def test_check_says_where_settings_came_from_and_what_is_down(tmp_path: Path) -> None:
    config = tmp_path / "mcp_servers.json"
    broken = {"command": str(tmp_path / "no-such-program")}
    servers = {"t": server_entry(TEST_SERVER), "broken": broken}
    config.write_text(json.dumps({"servers": servers}), encoding="utf-8")
    # As a copy of .env.example beside the config would: it cannot rename the config.
    dotenv = "MCP_CODE_TIMEOUT_S=3\nMCP_SERVERS_CONFIG=mcp_servers.json\n"
    dotenv += "DSPY_API_BASE=http://me:PWSECRET@127.0.0.1:9/v1?api_key=QSECRET\n"  # (attack 129)
    (tmp_path / ".env").write_text(dotenv, encoding="utf-8")
    unset = {"MCP_CODE_RUNS_DB": "", "MCP_CODE_CACHE_DIR": "", "XDG_CACHE_HOME": str(tmp_path)}
    proc = cli("check", "--config", str(config), "--json", cwd=Path("/"), env=unset)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "PWSECRET" not in proc.stdout + proc.stderr and "QSECRET" not in proc.stdout
    report = json.loads(proc.stdout)
    sources = {row["name"]: (row["value"], row["from"]) for row in report["settings"]}
    shown = "http://***@127.0.0.1:9/v1?api_key=***"
    assert sources["DSPY_API_BASE"] == (shown, str(tmp_path / ".env"))
    assert sources["MCP_CODE_TIMEOUT_S"] == ("3.0", str(tmp_path / ".env"))
    assert sources["MCP_CODE_MEMORY_MB"] == ("256", "default")  # every setting is reported
    assert sources["MCP_SERVERS_CONFIG"] == (str(config), "the command line")
    assert sources["MCP_CODE_WHEELHOUSE"] == ("(unset)", "default")  # it printed None
    cache = tmp_path / "mcp-code-mode"
    assert sources["MCP_CODE_CACHE_DIR"][0] == f"{cache} (unset: XDG_CACHE_HOME or ~/.cache)"
    where = f"{cache / 'runs.sqlite3'} (unset: runs.sqlite3 in the cache folder)"
    assert sources["MCP_CODE_RUNS_DB"] == (where, "default")
    starts = sources["MCP_CODE_MAX_CONCURRENT_STARTS"][0]
    assert int(starts.split()[0]) >= 8 and "CPU count" in starts
    status = {row["name"]: row["status"] for row in report["servers"]}
    assert status == {"t": "ok", "broken": "error"}


def test_check_of_a_broken_config_exits_1(tmp_path: Path) -> None:
    (tmp_path / "mcp_servers.json").write_text('{"servers": {"x": {}}}', encoding="utf-8")
    for args in (["check"], ["check", "--config", str(tmp_path / "missing.json")]):
        proc = cli(*args, cwd=tmp_path)
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
        assert proc.stderr.startswith("mcp-code-mode: ")


def test_an_upstreams_stderr_is_kept_in_its_log_file(tmp_path: Path) -> None:
    """All of a failing upstream's stderr in `<cache>/mcp-code-mode/logs/`, its path in the
    error `check` (and `list_servers`) shows."""
    script = "import sys\nfor i in range(40):\n    print(f'line {i}', file=sys.stderr)\nsys.exit(3)"
    config = tmp_path / "mcp_servers.json"
    crashy = {"command": sys.executable, "args": ["-c", script]}
    config.write_text(json.dumps({"servers": {"crashy": crashy}}), encoding="utf-8")
    env = {**os.environ, "MCP_CODE_POOL_SIZE": "1", "MCP_CODE_CACHE_DIR": str(tmp_path / "c")}
    proc = subprocess.run(
        [str(SCRIPT), "check", "--config", str(config), "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=90,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (row,) = json.loads(proc.stdout)["servers"]
    (log,) = (tmp_path / "c" / "mcp-code-mode" / "logs").glob("crashy-*.log")
    assert f"(all of it: {log})" in row["error"] and "line 39" in row["error"]
    assert log.read_text().splitlines()[:40] == [f"line {i}" for i in range(40)]
    # the user's alone: an upstream's stderr may hold its secrets, the runs its arguments;
    # both were readable by every local user (attack 136)
    root = tmp_path / "c" / "mcp-code-mode"
    assert root.stat().st_mode & 0o777 == 0o700
    assert log.stat().st_mode & 0o777 == 0o600
    assert (root / "logs").stat().st_mode & 0o777 == 0o700


def test_exec_without_a_config_runs_with_no_servers(tmp_path: Path) -> None:
    proc = cli("exec", "--code", "1+1", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.strip() == "2"
    assert "no mcp_servers.json here" in proc.stderr
    named = cli("exec", "--config", "missing.json", "--code", "1+1", cwd=tmp_path)
    assert named.returncode == 2 and "missing.json" in named.stderr  # a named one must exist


def test_log_level(tmp_path: Path) -> None:
    chatty = cli("exec", "--log-level", "debug", "--code", "1+1", cwd=tmp_path)
    assert chatty.returncode == 0 and chatty.stdout.strip() == "2"
    assert len(chatty.stderr) > len(cli("exec", "--code", "1+1", cwd=tmp_path).stderr)
    wrong = cli("exec", "--log-level", "loud", "--code", "1+1", cwd=tmp_path)
    assert wrong.returncode == 2 and "--log-level" in wrong.stderr


def test_exec_on_a_terminal_says_which_upstream_it_waits_for(tmp_path: Path) -> None:
    board = server_entry(str(ROOT / "tests" / "servers" / "approvals_upstream.py"))
    board["env"] = {**board.get("env", {}), "BOARD_START_DELAY_S": "3"}
    config = tmp_path / "mcp_servers.json"
    config.write_text(json.dumps({"servers": {"board": board}}), encoding="utf-8")
    controller, terminal = os.openpty()
    try:
        proc = subprocess.Popen(
            [
                str(SCRIPT),
                "exec",
                "--config",
                str(config),
                "--code",
                "len(tools.board.read_posts())",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=terminal,
            env={**os.environ, "MCP_CODE_POOL_SIZE": "1"},
        )
        os.close(terminal)
        stdout, _ = proc.communicate(timeout=90)
        shown = b""
        with contextlib.suppress(OSError):  # EIO once the terminal's other end is closed
            while chunk := os.read(controller, 65536):
                shown += chunk
    finally:
        os.close(controller)
    # the result last; a start past 5 s is also said in the run's logs above it
    assert proc.returncode == 0 and stdout.decode().strip().endswith("0"), stdout
    assert "starting upstream board" in shown.decode(errors="replace")


def test_version() -> None:
    proc = cli("--version")
    assert proc.returncode == 0 and proc.stdout.startswith("mcp-code-mode ")


def test_run_without_an_lm_is_a_clear_error() -> None:
    env_lm = {k: v for k, v in os.environ.items() if k.startswith("DSPY_")}
    assert not env_lm, "this test expects no DSPY_* variables in the environment"
    proc = cli("run", "do something")
    assert proc.returncode == 2 and "DSPY_LM" in proc.stderr and "Traceback" not in proc.stderr


def test_run_as_the_readme_says_against_a_local_server_with_no_key() -> None:
    """README "Agent": `openai/<model>` and DSPY_API_BASE, OPENAI_API_KEY left unset."""
    replies = [
        chat_reply(answer="OK"),  # the one-call check before the gateway starts
        chat_reply(
            reasoning="Count the refunded orders.",
            code="orders = tools.data.list_orders(status='refunded')\nlen(orders)",
            finished="True",
        ),
        chat_reply(answer="There are 40 refunded orders."),
    ]
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    with serve_stub(replies) as stub:
        env |= {"DSPY_LM": "openai/local-model", "DSPY_API_BASE": stub.api_base}
        proc = subprocess.run(
            [str(SCRIPT), "run", "How many orders were refunded?"],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env={**env, "MCP_CODE_POOL_SIZE": "1"},
            timeout=120,
        )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "--- answer ---\nThere are 40 refunded orders." in proc.stdout
    assert "finished: 1 step(s), 1 tool call(s)" in proc.stderr
    assert len(stub.requests) == 3
    for body in stub.requests[1:]:  # every agent call bounded in both spellings
        assert body["max_tokens"] == body["max_completion_tokens"] == 4000


def _board_config(tmp_path: Path) -> Path:
    """A config of one upstream whose `post_message` needs approval."""
    board = str(ROOT / "tests" / "servers" / "approvals_upstream.py")
    config = tmp_path / "mcp_servers.json"
    config.write_text(json.dumps({"servers": {"board": server_entry(board)}}), encoding="utf-8")
    return config


POST_THEN_COUNT = (
    "try:\n    tools.board.post_message(text='hello')\nexcept ToolError:\n    pass\n"
    "len(tools.board.read_posts())"
)


def _answered_on_a_terminal(args: list[str], answer: str, env: dict[str, str]) -> tuple[str, str]:
    """Run the CLI with stdin a terminal on which `answer` is typed; its stdout and stderr."""
    controller, terminal = os.openpty()
    try:
        proc = subprocess.Popen(
            [str(SCRIPT), *args],
            stdin=terminal,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**env, "MCP_CODE_POOL_SIZE": "1"},
        )
        os.close(terminal)
        os.write(controller, f"{answer}\n".encode())
        return proc.communicate(timeout=120)
    finally:
        os.close(controller)


@pytest.mark.parametrize(("answer", "posted"), [("y", True), ("n", False)])
def test_exec_asks_on_a_terminal(tmp_path: Path, answer: str, posted: bool) -> None:
    """With stdin a terminal, a call that needs approval is asked about there (contract §8)."""
    code = POST_THEN_COUNT.replace("len(", "tools.board.post_message.__name__\nlen(")
    args = ["exec", "--config", str(_board_config(tmp_path)), "--code", code]
    stdout, stderr = _answered_on_a_terminal(args, answer, dict(os.environ))
    assert "Approve board.post_message for this run? [y/N]" in stderr + stdout
    assert stdout.strip().splitlines()[-1] == ("1" if posted else "0"), stdout + stderr


@pytest.mark.parametrize(("answer", "posted"), [("y", True), ("n", False)])
def test_run_asks_on_a_terminal(tmp_path: Path, answer: str, posted: bool) -> None:
    """`run` gave the agent no way to ask: the model's writes ran unasked under `auto`
    (outside attack 129). On a terminal it asks, as `exec` does."""
    replies = [
        chat_reply(answer="OK"),
        chat_reply(reasoning="Post it.", code=POST_THEN_COUNT, finished="True"),
        chat_reply(answer="Done."),
    ]
    with serve_stub(replies) as stub:
        env = {**os.environ, "DSPY_LM": "openai/local-model", "DSPY_API_BASE": stub.api_base}
        args = ["run", "--config", str(_board_config(tmp_path)), "Post hello to the board."]
        stdout, stderr = _answered_on_a_terminal(args, answer, env)
    assert "Approve board.post_message for this run? [y/N]" in stderr + stdout
    assert f"=> {1 if posted else 0}\n" in stdout, stdout + stderr


@pytest.mark.parametrize("port", ["99999", "-1", "http"])
def test_serve_refuses_a_port_out_of_range(port: str) -> None:
    """A port past 65535 would wrap around to another port: it is refused, named."""
    done = subprocess.run(
        [sys.executable, "-m", "mcp_code_mode.cli", "serve", "--transport", "http", "--port", port],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "--port" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("address", [["--port", "18999"], ["--host", "127.0.0.1"]])
def test_serve_with_an_address_but_not_http_says_so(address: list[str]) -> None:
    """`serve --port N` served stdio without a word: it waited on stdin and nothing listened
    on the port (a new user's first hour, attack 149)."""
    done = subprocess.run(
        [sys.executable, "-m", "mcp_code_mode.cli", "serve", *address],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert done.returncode == 2 and "--transport http" in done.stderr, done.stderr


def test_serve_help_gives_the_default_port() -> None:
    """The README's 8765 was nowhere in `serve --help` (outside attack 136)."""
    done = subprocess.run(
        [sys.executable, "-m", "mcp_code_mode.cli", "serve", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and "default 8765" in done.stdout, done.stdout + done.stderr


def test_check_names_a_misspelt_setting(tmp_path: Path) -> None:
    """`MCP_CODE_TIMEOUT=5` (the setting is MCP_CODE_TIMEOUT_S) was ignored without a word,
    in the environment as in `.env` (outside attack 136)."""
    config = tmp_path / "mcp_servers.json"
    config.write_text(json.dumps({"servers": {}}), encoding="utf-8")
    (tmp_path / ".env").write_text("MCP_CODE_POOL_SZE=2\nDSPY_CACHEDIR=/tmp\n", encoding="utf-8")
    proc = cli("check", "--config", str(config), "--json", env={"MCP_CODE_TIMEOUT": "5"})
    unknown = {row["name"]: row for row in json.loads(proc.stdout)["unknown_settings"]}
    assert unknown["MCP_CODE_TIMEOUT"]["closest"] == "MCP_CODE_TIMEOUT_S", unknown
    assert unknown["MCP_CODE_TIMEOUT"]["from"] == "the environment"
    assert unknown["MCP_CODE_POOL_SZE"]["closest"] == "MCP_CODE_POOL_SIZE", unknown
    assert unknown["MCP_CODE_POOL_SZE"]["from"] == str(tmp_path / ".env")
    assert "DSPY_CACHEDIR" not in unknown, "dspy's own variables are not ours to judge"
    text = cli("check", "--config", str(config), env={"MCP_CODE_TIMEOUT": "5"}).stdout
    assert "MCP_CODE_TIMEOUT (from the environment); did you mean MCP_CODE_TIMEOUT_S?" in text


def test_check_reads_setting_names_in_any_case_and_shows_dotenv_names_cleaned(
    tmp_path: Path,
) -> None:
    """Outside attack 139: `MCP_CODE_Timeout_S` is honoured (names are read in any case) but
    `check` called it no setting and said the value came from the command line; a lowercase
    misspelling went unnamed; a `.env` name with terminal escapes was printed raw."""
    config = tmp_path / "mcp_servers.json"
    config.write_text(json.dumps({"servers": {}}), encoding="utf-8")
    (tmp_path / ".env").write_text("MCP_CODE_\x1b[2JX=1\n", encoding="utf-8")
    env = {"MCP_CODE_Timeout_S": "7", "mcp_code_max_tool_callz": "3"}
    proc = cli("check", "--config", str(config), "--json", env=env)
    report = json.loads(proc.stdout)
    unknown = {row["name"]: row for row in report["unknown_settings"]}
    assert "MCP_CODE_Timeout_S" not in unknown
    assert unknown["mcp_code_max_tool_callz"]["closest"] == "MCP_CODE_MAX_TOOL_CALLS"
    (timeout,) = [row for row in report["settings"] if row["name"] == "MCP_CODE_TIMEOUT_S"]
    assert (timeout["value"], timeout["from"]) == ("7.0", "the environment"), timeout
    text = cli("check", "--config", str(config), env=env).stdout
    assert "\x1b" not in text and "not a setting, ignored: MCP_CODE_" in text


def test_a_dotenv_that_is_not_utf8_is_named_in_one_line(tmp_path: Path) -> None:
    """A `.env` with a byte that is not UTF-8 made every command end in a traceback from
    dotenv (outside attack 140)."""
    (tmp_path / "mcp_servers.json").write_text('{"servers": {}}')
    (tmp_path / ".env").write_bytes(b"MCP_CODE_TIMEOUT_S=5\nX\xff=1\n")
    for command, status in ((["check"], 1), (["exec", "--code", "1+1"], 2)):
        proc = cli(*command, cwd=tmp_path)
        assert proc.returncode == status, proc.stderr
        assert "Traceback" not in proc.stderr, proc.stderr
        said = f"mcp-code-mode: {tmp_path / '.env'}: not UTF-8 text"
        assert proc.stderr.startswith(said), proc.stderr


def test_check_names_the_variables_whose_values_are_plain_words(tmp_path: Path) -> None:
    """`LEVEL=customer` in `.env` hid `customer` in every result (`${LEVEL}_id`) and nothing
    said why (a new user's first hour, M); `check` now names such variables, never values."""
    entry = {**server_entry(TEST_SERVER), "env": {"L": "${LEVEL}", "K": "${KEY}", "R": "${R}"}}
    (tmp_path / "mcp_servers.json").write_text(json.dumps({"servers": {"t": entry}}))
    (tmp_path / ".env").write_text("LEVEL=customer\nKEY=sk-9f8e7d6c5b4a3\nR=us-east-1\n")
    report = json.loads(cli("check", "--json", cwd=tmp_path).stdout)
    assert sorted(report["plain_words"]) == ["${LEVEL}", "${R}"], report["plain_words"]
    text = cli("check", cwd=tmp_path).stdout
    assert "note: ${LEVEL} is a plain word or number" in text, text
    assert "customer" not in text and "us-east-1" not in text and "sk-9f8e" not in text


def test_an_upstreams_log_file_shows_secrets_as_their_names(tmp_path: Path) -> None:
    """The error said `${SVC_KEY}`, but the log file it points to held the key as the
    upstream printed it (a new user's first hour, M; contract §7)."""
    script = "import os, sys\nprint('auth failed for key', os.environ['API_KEY'], file=sys.stderr)"
    crash = {"command": sys.executable, "args": ["-c", script + "\nsys.exit(3)"]}
    crash["env"] = {"API_KEY": "${SVC_KEY}"}
    (tmp_path / "mcp_servers.json").write_text(json.dumps({"servers": {"crash": crash}}))
    (tmp_path / ".env").write_text("SVC_KEY=sk-live-9f8e7d6c5b4a\n")
    proc = cli("check", cwd=tmp_path, env={"MCP_CODE_CACHE_DIR": str(tmp_path / "c")})
    assert proc.returncode == 1 and "${SVC_KEY}" in proc.stdout, proc.stdout
    (log,) = (tmp_path / "c" / "mcp-code-mode" / "logs").glob("crash-*.log")
    lines = set(log.read_text().splitlines())  # a start retried on a busy machine: twice
    assert lines == {"auth failed for key ${SVC_KEY}"}, log.read_text()


def test_a_terminal_that_cannot_show_a_runs_text_gets_it_replaced(tmp_path: Path) -> None:
    """`runs` and `exec` ended in a UnicodeEncodeError traceback when stdout could not
    encode a run's text (outside attack 148)."""
    env = {**os.environ, "MCP_CODE_CACHE_DIR": str(tmp_path), "MCP_CODE_RUNS_DB": ""}
    made = cli("exec", "--code", 'print("é…")', cwd=tmp_path, env=env)
    assert made.returncode == 0, made.stderr
    ascii_env = {**env, "PYTHONIOENCODING": "ascii"}
    shown = cli("runs", "--last", "1", cwd=tmp_path, env=ascii_env)
    run_id = shown.stdout.split()[0]
    one = cli("runs", run_id, cwd=tmp_path, env=ascii_env)
    again = cli("exec", "--code", 'print("é…")', cwd=tmp_path, env=ascii_env)
    for done in (shown, one, again):
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert "?" in one.stdout and "?" in again.stdout
