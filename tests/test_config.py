"""`load_config` (contract §2): both shapes, transports, `${VAR}`, local paths, clear errors."""

from __future__ import annotations

import json
import re
import sys
import urllib.parse
from pathlib import Path
from typing import Any

import pytest
from fastmcp.client.transports import SSETransport, StdioTransport, StreamableHttpTransport

from mcp_code_mode.config import GatewayConfig, load_config
from mcp_code_mode.errors import CodeModeError, ConfigError
from mcp_code_mode.server_config import ServerConfig

from .support import ConfigWriter


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run from an empty folder that is not the config's, so no stray `.env` is read."""
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return cwd


def write_text(tmp_path: Path, text: str, name: str = "mcp_servers.json") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def write_json(tmp_path: Path, data: Any, name: str = "mcp_servers.json") -> Path:
    return write_text(tmp_path, json.dumps(data), name)


def only(config: GatewayConfig) -> ServerConfig:
    (server,) = config.servers.values()
    return server


# --- shapes and transports ---------------------------------------------------------------


def test_servers_shape_from_the_contract(write_config: ConfigWriter) -> None:
    path = write_config(
        {
            "fs": {
                "command": "npx",
                "args": ["-y", "@modelcontextprotocol/server-filesystem", "/data"],
                "description": "Local files",
                "env": {"X": "${X}"},
                "timeout_s": 30,
            }
        }
    )
    config = load_config(path, env={"X": "ex"})
    fs = config.servers["fs"]
    assert fs.transport == "stdio"
    assert fs.command == "npx"
    assert fs.args == ("-y", "@modelcontextprotocol/server-filesystem", "/data")
    assert fs.description == "Local files"
    assert fs.env == {"X": "ex"}
    assert fs.timeout_s == 30
    assert fs.enabled is True
    assert config.path == path.resolve()


def test_mcp_servers_shape_from_the_contract(write_config: ConfigWriter) -> None:
    path = write_config(
        {
            "web": {
                "url": "http://127.0.0.1:9000/mcp",
                "headers": {"Authorization": "Bearer ${TOKEN}"},
            }
        },
        shape="mcpServers",
    )
    web = load_config(path, env={"TOKEN": "t0k"}).servers["web"]
    assert web.transport == "http"
    assert web.url == "http://127.0.0.1:9000/mcp"
    assert web.headers == {"Authorization": "Bearer t0k"}
    assert web.command is None
    assert web.timeout_s is None  # falls back to MCP_CODE_TIMEOUT_S at the manager


def test_servers_keep_file_order(write_config: ConfigWriter) -> None:
    names = ["zeta", "alpha", "mid", "beta"]
    path = write_config({n: {"command": "echo"} for n in names})
    assert list(load_config(path, env={}).servers) == names


def test_extra_top_level_keys_are_tolerated(tmp_path: Path) -> None:
    # Claude Desktop / VS Code files carry other top-level keys next to mcpServers.
    path = write_json(tmp_path, {"mcpServers": {"a": {"command": "echo"}}, "inputs": []})
    assert list(load_config(path, env={}).servers) == ["a"]


def test_empty_servers_object(write_config: ConfigWriter) -> None:
    assert load_config(write_config({}), env={}).servers == {}


@pytest.mark.parametrize(
    ("entry", "transport"),
    [
        ({"command": "npx"}, "stdio"),
        ({"url": "http://h:1/mcp"}, "http"),
        ({"url": "http://h:1/"}, "http"),
        ({"url": "https://h/api/sse-tools"}, "http"),
        ({"url": "http://h:1/sse"}, "sse"),
        ({"url": "http://h:1/sse/"}, "sse"),
        ({"url": "http://h:1/x/sse"}, "sse"),
        ({"command": "npx", "transport": "stdio"}, "stdio"),
        ({"url": "http://h:1/sse", "transport": "http"}, "http"),  # explicit beats inferred
        ({"url": "http://h:1/mcp", "transport": "sse"}, "sse"),
        ({"url": "http://h:1/mcp", "transport": "streamable-http"}, "http"),
        ({"url": "http://h:1/mcp", "type": "streamable-http"}, "http"),  # Claude Code / VS Code
        ({"url": "http://h:1/mcp", "type": "http"}, "http"),
        ({"url": "http://h:1/sse", "type": "sse"}, "sse"),
        ({"command": "npx", "type": "stdio"}, "stdio"),
        ({"url": "http://h:1/mcp", "type": "HTTP"}, "http"),
    ],
)
def test_transport(write_config: ConfigWriter, entry: dict[str, Any], transport: str) -> None:
    assert only(load_config(write_config({"s": entry}), env={})).transport == transport


def test_to_transport_stdio(write_config: ConfigWriter, tmp_path: Path) -> None:
    path = write_config({"fs": {"command": "npx", "args": ["-y", "srv"], "env": {"K": "v"}}})
    transport = only(load_config(path, env={})).to_transport()
    assert isinstance(transport, StdioTransport)
    assert transport.command == "npx"
    assert transport.args == ["-y", "srv"]
    assert transport.env is not None
    assert transport.env["K"] == "v"
    assert transport.cwd == str(tmp_path.resolve())


def test_to_transport_http(write_config: ConfigWriter) -> None:
    path = write_config({"web": {"url": "http://h:1/mcp", "headers": {"Authorization": "B x"}}})
    transport = only(load_config(path, env={})).to_transport()
    assert isinstance(transport, StreamableHttpTransport)
    assert transport.url == "http://h:1/mcp"
    assert transport.headers == {"Authorization": "B x"}


def test_to_transport_sse(write_config: ConfigWriter) -> None:
    path = write_config({"ev": {"url": "http://h:1/sse"}})
    transport = only(load_config(path, env={})).to_transport()
    assert isinstance(transport, SSETransport)
    assert transport.url == "http://h:1/sse"


def test_to_transport_is_fresh_each_time(write_config: ConfigWriter) -> None:
    server = only(load_config(write_config({"fs": {"command": "npx"}}), env={}))
    assert server.to_transport() is not server.to_transport()


def test_stdio_env_holds_only_what_is_configured(
    write_config: ConfigWriter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-gateway-secret")
    transport = only(load_config(write_config({"fs": {"command": "npx"}}))).to_transport()
    assert isinstance(transport, StdioTransport)
    assert "OPENAI_API_KEY" not in (transport.env or {})
    assert "sk-gateway-secret" not in json.dumps(transport.env)


# --- ${VAR} --------------------------------------------------------------------------------


def test_variables_from_the_env_argument(write_config: ConfigWriter) -> None:
    path = write_config(
        {
            "fs": {
                "command": "${CMD}",
                "args": ["--root", "${ROOT}/sub", "${A}${B}"],
                "env": {"KEY": "pre-${KEY}-post"},
                "description": "files under ${ROOT}",
            }
        }
    )
    fs = only(load_config(path, env={"CMD": "npx", "ROOT": "/d", "A": "1", "B": "2", "KEY": "k"}))
    assert fs.command == "npx"
    assert fs.args == ("--root", "/d/sub", "12")
    assert fs.env == {"KEY": "pre-k-post"}
    assert fs.description == "files under /d"


def test_env_argument_replaces_the_process_environment(
    write_config: ConfigWriter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ONLY_IN_PROCESS", "x")
    path = write_config({"fs": {"command": "npx", "env": {"K": "${ONLY_IN_PROCESS}"}}})
    with pytest.raises(ConfigError):
        load_config(path, env={})


def test_variables_from_the_process_environment(
    write_config: ConfigWriter, monkeypatch: pytest.MonkeyPatch, elsewhere: Path
) -> None:
    monkeypatch.setenv("CODE_MODE_TEST_TOKEN", "from-process")
    path = write_config(
        {"web": {"url": "http://h/mcp", "headers": {"A": "${CODE_MODE_TEST_TOKEN}"}}}
    )
    assert only(load_config(path)).headers == {"A": "from-process"}


def test_variables_from_dotenv_next_to_the_config(
    write_config: ConfigWriter, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, elsewhere: Path
) -> None:
    monkeypatch.delenv("CODE_MODE_TEST_TOKEN", raising=False)
    (tmp_path / ".env").write_text("CODE_MODE_TEST_TOKEN=from-dotenv\n", encoding="utf-8")
    path = write_config(
        {"web": {"url": "http://h/mcp", "headers": {"A": "${CODE_MODE_TEST_TOKEN}"}}}
    )
    assert only(load_config(path)).headers == {"A": "from-dotenv"}


def test_variables_from_dotenv_in_the_working_directory(
    write_config: ConfigWriter, monkeypatch: pytest.MonkeyPatch, elsewhere: Path
) -> None:
    monkeypatch.delenv("CODE_MODE_TEST_TOKEN", raising=False)
    (elsewhere / ".env").write_text("CODE_MODE_TEST_TOKEN=from-cwd\n", encoding="utf-8")
    path = write_config(
        {"web": {"url": "http://h/mcp", "headers": {"A": "${CODE_MODE_TEST_TOKEN}"}}}
    )
    assert only(load_config(path)).headers == {"A": "from-cwd"}


def test_process_environment_wins_over_dotenv(
    write_config: ConfigWriter, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, elsewhere: Path
) -> None:
    (tmp_path / ".env").write_text("CODE_MODE_TEST_TOKEN=from-dotenv\n", encoding="utf-8")
    monkeypatch.setenv("CODE_MODE_TEST_TOKEN", "from-process")
    path = write_config(
        {"web": {"url": "http://h/mcp", "headers": {"A": "${CODE_MODE_TEST_TOKEN}"}}}
    )
    assert only(load_config(path)).headers == {"A": "from-process"}


def test_a_server_left_off_needs_no_value_for_its_variables(write_config: ConfigWriter) -> None:
    """One unset `${VAR}` stopped every server, even with its own server disabled (a new
    user's first hour, M); the error says how to go on."""
    gh = {"command": "npx", "env": {"T": "${GITHUB_TOKEN}"}}
    path = write_config({"gh": {**gh, "enabled": False}, "fs": {"command": "npx"}})
    config = load_config(path, env={})
    assert set(config.servers) == {"gh", "fs"} and not config.servers["gh"].enabled
    with pytest.raises(ConfigError, match=r"\$\{GITHUB_TOKEN:-\} for an empty default"):
        load_config(write_config({"gh": gh, "fs": {"command": "npx"}}), env={})


def test_variable_default(write_config: ConfigWriter) -> None:
    path = write_config(
        {"fs": {"command": "npx", "args": ["${ROOT:-/srv/data}", "${SET:-unused}", "${E:-}"]}}
    )
    assert only(load_config(path, env={"SET": "given"})).args == ("/srv/data", "given", "")


def test_variable_default_applies_to_an_empty_variable(write_config: ConfigWriter) -> None:
    path = write_config({"fs": {"command": "npx", "args": ["${PORT:-8080}"]}})
    assert only(load_config(path, env={"PORT": ""})).args == ("8080",)


def test_text_without_variables_is_left_alone(write_config: ConfigWriter) -> None:
    path = write_config({"fs": {"command": "npx", "args": ["$HOME", "${", "$(x)", "{A}", "50%"]}})
    assert only(load_config(path, env={})).args == ("$HOME", "${", "$(x)", "{A}", "50%")


# --- local paths ---------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["python", "python3"])
def test_python_command_runs_this_interpreter(write_config: ConfigWriter, command: str) -> None:
    server = only(load_config(write_config({"p": {"command": command, "args": ["s.py"]}}), env={}))
    assert server.command == sys.executable
    assert server.args == ("s.py",)


def test_other_commands_are_kept(write_config: ConfigWriter) -> None:
    path = write_config({"a": {"command": "python3.11"}, "b": {"command": "/usr/bin/python"}})
    servers = load_config(path, env={}).servers
    assert servers["a"].command == "python3.11"
    assert servers["b"].command == "/usr/bin/python"


def test_stdio_cwd_defaults_to_the_config_folder(
    write_config: ConfigWriter, tmp_path: Path, elsewhere: Path
) -> None:
    server = only(load_config(write_config({"p": {"command": "npx"}}), env={}))
    assert Path(server.cwd or "") == tmp_path.resolve()


def test_relative_cwd_resolves_against_the_config_folder(
    write_config: ConfigWriter, tmp_path: Path, elsewhere: Path
) -> None:
    server = only(load_config(write_config({"p": {"command": "npx", "cwd": "srv/data"}}), env={}))
    assert Path(server.cwd or "") == tmp_path.resolve() / "srv" / "data"


def test_absolute_cwd_is_kept(write_config: ConfigWriter, tmp_path: Path) -> None:
    target = tmp_path / "abs"
    server = only(load_config(write_config({"p": {"command": "npx", "cwd": str(target)}}), env={}))
    assert Path(server.cwd or "") == target


def test_relative_config_path_is_resolved(
    write_config: ConfigWriter, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_config({"p": {"command": "npx"}})
    monkeypatch.chdir(tmp_path)
    config = load_config("mcp_servers.json", env={})
    assert config.path == tmp_path.resolve() / "mcp_servers.json"
    assert only(config).cwd == str(tmp_path.resolve())


def test_http_servers_have_no_cwd(write_config: ConfigWriter) -> None:
    assert only(load_config(write_config({"w": {"url": "http://h/mcp"}}), env={})).cwd is None


# --- enabled, allow/deny -------------------------------------------------------------------


def test_disabled_servers_are_kept_but_not_enabled(write_config: ConfigWriter) -> None:
    path = write_config(
        {
            "a": {"command": "npx"},
            "b": {"command": "npx", "enabled": False},
            "c": {"url": "http://h/mcp", "enabled": True},
        }
    )
    config = load_config(path, env={})
    assert list(config.servers) == ["a", "b", "c"]
    assert list(config.enabled) == ["a", "c"]
    assert config.servers["b"].enabled is False


@pytest.mark.parametrize(
    ("allow", "deny", "exposed", "hidden"),
    [
        ([], [], ["read_file", "delete_file", "anything"], []),
        (["read_*", "list_*"], [], ["read_file", "list_dir"], ["delete_file", "xread_file"]),
        ([], ["delete_*", "*_secret"], ["read_file", "secret_info"], ["delete_file", "get_secret"]),
        (["*_file"], ["delete_*"], ["read_file", "write_file"], ["delete_file", "list_dir"]),
        (["get_?"], [], ["get_a"], ["get_ab", "get_"]),
        (["read_[ab]"], [], ["read_a", "read_b"], ["read_c"]),
        (["Read*"], [], ["ReadFile"], ["readFile"]),  # case-sensitive
        (["exact"], [], ["exact"], ["exact_not"]),
    ],
)
def test_allow_and_deny_globs(
    write_config: ConfigWriter,
    allow: list[str],
    deny: list[str],
    exposed: list[str],
    hidden: list[str],
) -> None:
    path = write_config({"s": {"command": "npx", "allow_tools": allow, "deny_tools": deny}})
    server = only(load_config(path, env={}))
    assert server.allow_tools == tuple(allow)
    assert server.deny_tools == tuple(deny)
    assert [t for t in exposed if server.exposes(t)] == exposed
    assert [t for t in hidden if server.exposes(t)] == []


def test_server_config_is_frozen(write_config: ConfigWriter) -> None:
    server = only(load_config(write_config({"s": {"command": "npx"}}), env={}))
    with pytest.raises(ValueError, match="frozen"):
        server.command = "rm"  # type: ignore[misc]


# --- errors --------------------------------------------------------------------------------


def assert_names(
    error: ConfigError, file: Path | str, server: str | None, field: str | None
) -> None:
    text = str(error)
    assert error.file is not None
    assert Path(error.file).name == Path(file).name
    assert Path(file).name in text
    assert error.server == server
    assert error.field == field
    if server is not None:
        assert repr(server) in text
    if field is not None:
        assert repr(field) in text


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.json"
    with pytest.raises(ConfigError) as info:
        load_config(path, env={})
    assert_names(info.value, path, None, None)
    assert "not found" in str(info.value)


def test_invalid_json_names_the_line(tmp_path: Path) -> None:
    path = write_text(tmp_path, '{\n  "servers": {\n    "a": {"command": "npx",}\n  }\n}\n')
    with pytest.raises(ConfigError) as info:
        load_config(path, env={})
    assert_names(info.value, path, None, None)
    assert "line 3" in str(info.value)
    assert "JSON" in str(info.value)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            '{"servers": {"a": {"command": "x", "args": ' + "[" * 100_000 + "]" * 100_000 + "}}}",
            "nested too deep",
        ),
        (
            '{"servers": {"a": {"command": "x", "approve_tools": ["*"], "approve_tools": []}}}',
            'the key "approve_tools" is given twice',
        ),
    ],
    ids=["deep", "duplicate key"],
)
def test_json_python_reads_otherwise_is_a_clear_error(tmp_path: Path, text: str, said: str) -> None:
    """A config nested 100,000 deep ended `serve` and `check` in a RecursionError's
    traceback; a key given twice kept the last silently, so a second `approve_tools`
    turned approval off (outside attack 123)."""
    path = write_text(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(path, env={})
    assert_names(info.value, path, None, None)
    assert said in str(info.value)


SERVER_PROBLEMS = [
    pytest.param(
        {"command": "npx", "transport": "websocket"},
        "transport",
        "websocket",
        id="unknown-transport",
    ),
    pytest.param({"url": "http://h/mcp", "type": "grpc"}, "transport", "grpc", id="unknown-type"),
    pytest.param({"args": ["server.js"]}, "command", "command", id="stdio-without-command"),
    pytest.param(
        {"transport": "stdio", "url": "http://h/mcp"}, "command", "command", id="stdio-with-url"
    ),
    pytest.param({"transport": "sse"}, "url", "url", id="sse-without-url"),
    pytest.param({"comand": "npx"}, "comand", "unknown key", id="typo"),
    pytest.param(
        {"command": "npx", "url": "http://h/mcp"}, "url", "not both", id="command-and-url"
    ),
    pytest.param(
        {"command": "npx", "timeout_s": 0}, "timeout_s", "greater than 0", id="timeout-zero"
    ),
    pytest.param(
        {"command": "npx", "timeout_s": -5}, "timeout_s", "greater than 0", id="timeout-negative"
    ),
    pytest.param({"command": "npx", "args": "server.js"}, "args", "", id="args-not-a-list"),
    pytest.param({"command": "npx", "enabled": "maybe"}, "enabled", "", id="enabled-not-bool"),
    pytest.param({"command": "npx", "env": {"K": 1}}, "env.K", "", id="env-value-not-string"),
    pytest.param(
        {"command": "npx", "transport": "stdio", "type": "stdio"},
        "transport",
        "not both",
        id="transport-and-type",
    ),
]


@pytest.mark.parametrize(("entry", "field", "says"), SERVER_PROBLEMS)
@pytest.mark.parametrize("shape", ["servers", "mcpServers"])
def test_bad_server_entry(
    write_config: ConfigWriter, shape: str, entry: dict[str, Any], field: str, says: str
) -> None:
    path = write_config({"good": {"command": "npx"}, "bad-one": entry}, shape=shape)
    with pytest.raises(ConfigError) as info:
        load_config(path, env={})
    assert_names(info.value, path, "bad-one", field)
    assert says in str(info.value)


def test_unknown_key_lists_the_allowed_keys(write_config: ConfigWriter) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(write_config({"s": {"comand": "npx"}}), env={})
    assert "command" in str(info.value).split("unknown key", 1)[1]


@pytest.mark.parametrize(
    ("entry", "field"),
    [
        ({"command": "npx", "env": {"KEY": "${UNDEFINED_VAR_XYZ}"}}, "env.KEY"),
        (
            {"url": "http://h/mcp", "headers": {"Authorization": "Bearer ${UNDEFINED_VAR_XYZ}"}},
            "headers.Authorization",
        ),
        ({"command": "${UNDEFINED_VAR_XYZ}"}, "command"),
        ({"command": "npx", "args": ["-y", "${UNDEFINED_VAR_XYZ}"]}, "args"),
    ],
)
def test_undefined_variable(
    write_config: ConfigWriter,
    monkeypatch: pytest.MonkeyPatch,
    elsewhere: Path,
    entry: dict[str, Any],
    field: str,
) -> None:
    monkeypatch.delenv("UNDEFINED_VAR_XYZ", raising=False)
    path = write_config({"srv": entry})
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert_names(info.value, path, "srv", field)
    assert "UNDEFINED_VAR_XYZ" in str(info.value)


@pytest.mark.parametrize(
    "data",
    [
        {"tools": {"a": {"command": "npx"}}},
        {},
        {"servers": {}, "mcpServers": {}},
        [],
        "servers",
    ],
)
def test_file_without_a_servers_object(tmp_path: Path, data: Any) -> None:
    path = write_json(tmp_path, data)
    with pytest.raises(ConfigError) as info:
        load_config(path, env={})
    assert_names(info.value, path, None, "servers")


def test_servers_not_an_object_names_the_field(tmp_path: Path) -> None:
    path = write_json(tmp_path, {"servers": ["a", "b"]})
    with pytest.raises(ConfigError) as info:
        load_config(path, env={})
    assert_names(info.value, path, None, "servers")


@pytest.mark.parametrize("entry", ["npx -y server", ["npx"], 3, None])
def test_server_entry_not_an_object(write_config: ConfigWriter, entry: Any) -> None:
    path = write_config({"fs": entry})
    with pytest.raises(ConfigError) as info:
        load_config(path, env={})
    assert info.value.file is not None
    assert Path(info.value.file).name == path.name
    assert info.value.server == "fs"
    assert path.name in str(info.value)
    assert "'fs'" in str(info.value)


def test_config_error_is_a_code_mode_error() -> None:
    error = ConfigError("boom", file="f.json", server="s", field="x")
    assert isinstance(error, CodeModeError)
    assert str(error) == "f.json: server 's': field 'x': boom"
    assert str(ConfigError("boom")) == "boom"


@pytest.mark.parametrize(
    "secret",
    ['sk-Abc"q\\uote/<b>x</b>-SECRET123', "clé-ünïcode-42", "it's-a-secret-9", 'Zq9 s/é+v"x'],
)
def test_redact_catches_a_secret_as_json_and_repr_spell_it(secret: str) -> None:
    """A value with quotes, backslashes or non-ASCII is escaped in a JSON result or a repr,
    and percent-encoded in a URL an HTTP library logs (outside attack 123): each spelling
    is redacted, not only the raw one."""
    config = GatewayConfig(servers={}, secrets=((secret, "${KEY}"),))
    for text in (
        secret,
        json.dumps({"k": secret}),
        json.dumps({"k": secret}, ensure_ascii=False),
        repr(secret),
        repr([secret]),
        f"GET /v1?key={urllib.parse.quote(secret, safe='')}&x=1",
        f"GET /v1?{urllib.parse.urlencode({'key': secret})}",
        f"GET /a/{urllib.parse.quote(secret)}/b",
        "GET /v1?key="  # hex in lower case, as some encoders write it
        + re.sub("%[0-9A-F]{2}", lambda h: h.group().lower(), urllib.parse.quote(secret, safe="")),
    ):
        redacted = config.redact(text)
        assert secret not in redacted and "${KEY}" in redacted, (text, redacted)
        for form in (json.dumps(secret)[1:-1], repr(secret)[1:-1]):
            assert form not in redacted


def test_rows_are_redacted_in_their_text_not_their_names() -> None:
    """search_tools' hits and list_servers' rows show a `${VAR}` value as `${VAR}` in their
    descriptions and errors (outside attack 123); names stay, as code calls tools by them
    and a short value (`root`) may be part of one."""
    config = GatewayConfig(servers={}, secrets=(("root", "${USER}"),))
    rows = [{"tool": "root_dir", "description": "runs as root", "score": 1.0, "error": None}]
    assert config.redact_rows(rows, "description", "error") == [
        {"tool": "root_dir", "description": "runs as ${USER}", "score": 1.0, "error": None}
    ]
    assert GatewayConfig(servers={}).redact_rows(rows, "description") is rows


def test_vs_codes_env_variables_are_read_and_its_prompts_refused(
    write_config: ConfigWriter,
) -> None:
    """`${env:TOKEN}` from a pasted VS Code or Cursor config went to the upstream as written
    (`Bearer ${env:TOKEN}`), `check` saying ok (a new user's first hour, attack 149)."""
    entry = {"url": "http://h/mcp", "headers": {"Authorization": "Bearer ${env:TOKEN}"}}
    config = load_config(write_config({"web": entry}), env={"TOKEN": "s3cret-value"})
    assert config.servers["web"].headers == {"Authorization": "Bearer s3cret-value"}
    assert config.redact("s3cret-value") == "${TOKEN}"
    prompted = {"command": "npx", "env": {"KEY": "${input:api-key}"}}
    path = write_config({"srv": prompted})
    with pytest.raises(ConfigError) as info:
        load_config(path, env={})
    assert_names(info.value, path, "srv", "env.KEY")
    assert "${input:api-key}" in str(info.value) and ".env" in str(info.value)


def test_a_missing_config_says_where_it_looked_and_a_bom_is_read(tmp_path: Path) -> None:
    """Started from a desktop client's folder, "mcp_servers.json: file not found" did not
    say which folder; a file Notepad saved with a BOM was invalid JSON (attack 149)."""
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path / "nowhere" / "mcp_servers.json", env={})
    assert str(tmp_path / "nowhere" / "mcp_servers.json") in str(info.value)
    path = tmp_path / "mcp_servers.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"servers": {}}).encode())
    assert load_config(path, env={}).servers == {}
