"""Settings from the environment and `.env` (contract §5)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from mcp_code_mode.errors import ConfigError
from mcp_code_mode.settings import DEFAULT_ALLOWED_IMPORTS, Settings

from .support import ROOT

# Contract §5, in its order.
CONTRACT_IMPORTS = (
    "json",
    "math",
    "re",
    "datetime",
    "collections",
    "itertools",
    "functools",
    "statistics",
    "random",
    "string",
    "textwrap",
    "decimal",
    "fractions",
    "typing",
    "dataclasses",
    "enum",
    "uuid",
    "hashlib",
    "base64",
    "asyncio",
)

SETTING_NAMES = (
    "MCP_EXECUTOR",
    "MCP_CODE_TIMEOUT_S",
    "MCP_CODE_MAX_TIMEOUT_S",
    "MCP_CODE_MEMORY_MB",
    "MCP_CODE_MAX_TOOL_CALLS",
    "MCP_CODE_MAX_OUTPUT_CHARS",
    "MCP_CODE_POOL_SIZE",
    "MCP_CODE_STARTUP_TIMEOUT_S",
    "MCP_CODE_MAX_CONCURRENT_CALLS",
    "MCP_CODE_MAX_UPSTREAM_CALLS",
    "MCP_CODE_MAX_CALL_BYTES",
    "MCP_CODE_CACHE_DIR",
    "MCP_CODE_APPROVAL",
    "MCP_CODE_APPROVAL_TIMEOUT_S",
    "MCP_CODE_MAX_CHARS",
    "MCP_CODE_MAX_LINES",
    "MCP_CODE_ALLOWED_IMPORTS",
    "MCP_SERVERS_CONFIG",
    "MCP_CODE_HTTP_TOKEN",
    "MCP_CODE_HTTP_ALLOWED_HOSTS",
    "MCP_CODE_HTTP_ALLOWED_ORIGINS",
    "MCP_CODE_HTTP_STATELESS",
    "MCP_CODE_HTTP_MAX_REQUESTS",
    "MCP_CODE_HTTP_MAX_HELD_MB",
    "MCP_CODE_RUNS",
    "MCP_CODE_RUNS_DB",
    "MCP_CODE_RUNS_KEEP",
    "MCP_CODE_RUNS_ARGUMENTS",
    "MCP_CODE_OTEL_CONTENT",
    "DSPY_LM",
    "DSPY_API_BASE",
    "DSPY_MAX_STEPS",
    "DSPY_TEMPERATURE",
    "DSPY_MAX_TOKENS",
)


# Contract §5 defaults by field name.
DEFAULTS = {
    "executor": "local",
    "timeout_s": 30.0,
    "max_timeout_s": 300.0,
    "max_concurrent_starts": None,
    "memory_mb": 256,
    "startup_timeout_s": 60.0,
    "max_tool_calls": 1000,
    "max_concurrent_calls": 16,
    "max_upstream_calls": 16,
    "max_call_bytes": 1_000_000,
    "max_result_bytes": 10_000_000,
    "approval": "auto",
    "approval_timeout_s": 120.0,
    "max_output_chars": 100_000,
    "pool_size": 2,
    "max_chars": 8000,
    "max_lines": 400,
    "extra_imports": "",
    "wheelhouse": None,
    "cache_dir": None,
    "servers_config": "mcp_servers.json",
    "http_token": None,
    "http_allowed_hosts": "",
    "http_allowed_origins": "",
    "http_stateless": False,
    "http_state_key": None,
    "http_instance_url": "",
    "http_max_requests": 32,
    "http_max_held_mb": 1024,
    "runs": "on",
    "runs_db": None,
    "runs_keep": 10_000,
    "runs_arguments": "clipped",
    "otel_content": "off",
    "dspy_lm": None,
    "dspy_api_base": None,
    "dspy_max_steps": 8,
    "dspy_temperature": 0.0,
    "dspy_max_tokens": 4000,
    "dspy_adapter": "chat",
    "dspy_timeout_s": 120.0,
    "dspy_num_retries": 2,
    "dspy_tool_context_tokens": 3000,
    "dspy_trajectory_tokens": 4000,
}


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """No MCP_*/DSPY_* variables, and an empty working directory (no stray `.env`)."""
    for name in {*SETTING_NAMES, *os.environ}:
        if name.upper().startswith(("MCP_", "DSPY_")):
            monkeypatch.delenv(name, raising=False)
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    return monkeypatch


def test_defaults_match_the_contract(clean_env: pytest.MonkeyPatch) -> None:
    s = Settings(_env_file=None)  # type: ignore[call-arg]
    assert s.executor == "local"
    assert s.timeout_s == 30
    assert s.max_timeout_s == 300
    assert s.memory_mb == 256
    assert s.max_tool_calls == 1000
    assert s.max_concurrent_calls == 16
    assert s.max_result_bytes == 10_000_000
    assert s.max_call_bytes == 1_000_000
    assert s.max_output_chars == 100_000
    assert s.pool_size == 2
    assert s.max_chars == 8000
    assert s.max_lines == 400
    assert s.allowed_imports == CONTRACT_IMPORTS
    assert DEFAULT_ALLOWED_IMPORTS == CONTRACT_IMPORTS
    assert s.servers_config == "mcp_servers.json"
    assert s.dspy_lm is None
    assert s.dspy_api_base is None
    assert s.dspy_max_steps == 8
    assert s.dspy_temperature == 0.0
    assert s.dspy_max_tokens == 4000
    assert s.model_dump() == DEFAULTS


def test_defaults_without_env_file_argument_in_an_empty_folder(
    clean_env: pytest.MonkeyPatch,
) -> None:
    assert Settings() == Settings(_env_file=None)  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("variable", "value", "field", "expected"),
    [
        ("MCP_EXECUTOR", "pyodide", "executor", "pyodide"),
        ("MCP_CODE_TIMEOUT_S", "5", "timeout_s", 5.0),
        ("MCP_CODE_TIMEOUT_S", "2.5", "timeout_s", 2.5),
        ("MCP_CODE_MAX_TIMEOUT_S", "60", "max_timeout_s", 60.0),
        ("MCP_CODE_MEMORY_MB", "512", "memory_mb", 512),
        ("MCP_CODE_MAX_TOOL_CALLS", "7", "max_tool_calls", 7),
        ("MCP_CODE_MAX_OUTPUT_CHARS", "1234", "max_output_chars", 1234),
        ("MCP_CODE_POOL_SIZE", "0", "pool_size", 0),
        ("MCP_CODE_MAX_CHARS", "100", "max_chars", 100),
        ("MCP_CODE_MAX_LINES", "10", "max_lines", 10),
        ("MCP_SERVERS_CONFIG", "/etc/gw.json", "servers_config", "/etc/gw.json"),
        ("DSPY_LM", "openai/gpt-4o-mini", "dspy_lm", "openai/gpt-4o-mini"),
        ("DSPY_LM", "", "dspy_lm", None),  # blank means unset
        ("DSPY_API_BASE", "http://127.0.0.1:8000/v1", "dspy_api_base", "http://127.0.0.1:8000/v1"),
        ("DSPY_MAX_STEPS", "3", "dspy_max_steps", 3),
        ("DSPY_TEMPERATURE", "0.7", "dspy_temperature", 0.7),
        ("DSPY_MAX_TOKENS", "100", "dspy_max_tokens", 100),
    ],
)
def test_environment_overrides_a_default(
    clean_env: pytest.MonkeyPatch, variable: str, value: str, field: str, expected: object
) -> None:
    clean_env.setenv(variable, value)
    s = Settings(_env_file=None)  # type: ignore[call-arg]
    assert s.model_dump() == {**DEFAULTS, field: expected}  # nothing else changed


def test_extra_imports_are_added_to_the_defaults(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("MCP_CODE_ALLOWED_IMPORTS", "time, os")
    s = Settings(_env_file=None)  # type: ignore[call-arg]
    assert s.allowed_imports == (*CONTRACT_IMPORTS, "time", "os")


def test_extra_imports_tolerate_blanks_and_duplicates(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("MCP_CODE_ALLOWED_IMPORTS", " ,json,, time ,time, ")
    s = Settings(_env_file=None)  # type: ignore[call-arg]
    assert s.allowed_imports == (*CONTRACT_IMPORTS, "time")


def test_dotenv_in_the_working_directory_is_read(clean_env: pytest.MonkeyPatch) -> None:
    Path(".env").write_text(
        "MCP_CODE_TIMEOUT_S=12\n"
        "MCP_EXECUTOR=pyodide\n"
        "MCP_CODE_ALLOWED_IMPORTS=time\n"
        "DSPY_LM=openai/gpt-4o-mini\n"
        "OPENAI_API_KEY=sk-not-a-setting\n",  # provider keys live here too: ignored
        encoding="utf-8",
    )
    s = Settings()
    assert s.timeout_s == 12
    assert s.executor == "pyodide"
    assert s.allowed_imports[-1] == "time"
    assert s.dspy_lm == "openai/gpt-4o-mini"
    assert s.memory_mb == 256  # untouched values keep their defaults


def test_environment_wins_over_dotenv(clean_env: pytest.MonkeyPatch) -> None:
    Path(".env").write_text("MCP_CODE_TIMEOUT_S=12\nMCP_CODE_MEMORY_MB=128\n", encoding="utf-8")
    clean_env.setenv("MCP_CODE_TIMEOUT_S", "9")
    s = Settings()
    assert s.timeout_s == 9
    assert s.memory_mb == 128


def test_the_dotenv_beside_the_config_is_read_first(
    clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """As a desktop client launches it: from another folder, with --config."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "mcp_servers.json").write_text('{"servers": {}}', encoding="utf-8")
    (project / ".env").write_text(
        "MCP_CODE_TIMEOUT_S=3\nDSPY_LM=openai/local\nMCP_CODE_MEMORY_MB=64\n", encoding="utf-8"
    )
    Path(".env").write_text("MCP_CODE_TIMEOUT_S=12\nMCP_CODE_POOL_SIZE=5\n", encoding="utf-8")
    clean_env.setenv("MCP_CODE_MEMORY_MB", "128")
    s = Settings.load(project / "mcp_servers.json")
    assert s.timeout_s == 3  # beside the config, over the working directory's
    assert s.dspy_lm == "openai/local"
    assert s.pool_size == 5  # the working directory's, where the config's is silent
    assert s.memory_mb == 128  # the environment over both
    assert s.servers_config == str(project / "mcp_servers.json")
    clean_env.setenv("MCP_SERVERS_CONFIG", str(project / "mcp_servers.json"))
    assert Settings.load().timeout_s == 3  # the config named by the environment: the same


def test_the_working_directorys_dotenv_names_the_config(
    clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """MCP_SERVERS_CONFIG in the working directory's `.env` finds the config, and the `.env`
    beside that config (a copy of .env.example says `MCP_SERVERS_CONFIG=mcp_servers.json`)
    cannot point it elsewhere: it was found through the config."""
    project = tmp_path / "project"
    project.mkdir()
    config = project / "mcp_servers.json"
    config.write_text('{"servers": {}}', encoding="utf-8")
    (project / ".env").write_text(
        "MCP_SERVERS_CONFIG=mcp_servers.json\nMCP_CODE_TIMEOUT_S=3\n", encoding="utf-8"
    )
    Path(".env").write_text(f"MCP_SERVERS_CONFIG={config}\n", encoding="utf-8")
    s = Settings.load()
    assert s.servers_config == str(config)
    assert s.timeout_s == 3  # and the `.env` beside it is read
    assert Settings.load(config).servers_config == str(config)  # --config: the same


def test_env_file_none_ignores_dotenv(clean_env: pytest.MonkeyPatch) -> None:
    Path(".env").write_text("MCP_CODE_TIMEOUT_S=12\n", encoding="utf-8")
    assert Settings(_env_file=None).timeout_s == 30  # type: ignore[call-arg]


def test_keywords_by_field_name(clean_env: pytest.MonkeyPatch) -> None:
    s = Settings(_env_file=None, timeout_s=4, pool_size=1)  # type: ignore[call-arg]
    assert (s.timeout_s, s.pool_size) == (4, 1)


@pytest.mark.parametrize(
    ("requested", "expected"),
    [
        (None, 30.0),  # no request: the configured timeout
        (5, 5.0),
        (299.5, 299.5),
        (300, 300.0),
        (301, 300.0),  # capped at MCP_CODE_MAX_TIMEOUT_S
        (10_000, 300.0),
    ],
)
def test_clamp_timeout_defaults(
    clean_env: pytest.MonkeyPatch, requested: float | None, expected: float
) -> None:
    assert Settings(_env_file=None).clamp_timeout(requested) == expected  # type: ignore[call-arg]


def test_clamp_timeout_uses_configured_values(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("MCP_CODE_TIMEOUT_S", "5")
    clean_env.setenv("MCP_CODE_MAX_TIMEOUT_S", "20")
    s = Settings(_env_file=None)  # type: ignore[call-arg]
    assert s.clamp_timeout(None) == 5
    assert s.clamp_timeout(15) == 15
    assert s.clamp_timeout(21) == 20


def test_clamp_timeout_caps_the_default_too(clean_env: pytest.MonkeyPatch) -> None:
    s = Settings(_env_file=None, timeout_s=500, max_timeout_s=60)  # type: ignore[call-arg]
    assert s.clamp_timeout(None) == 60


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("MCP_CODE_TIMEOUT_S", "abc"),
        ("MCP_CODE_TIMEOUT_S", "0"),
        ("MCP_CODE_TIMEOUT_S", "-1"),
        ("MCP_EXECUTOR", "docker"),
        ("MCP_CODE_MEMORY_MB", "lots"),
        ("MCP_CODE_MAX_TOOL_CALLS", "-1"),
        ("MCP_CODE_POOL_SIZE", "1.5"),
        ("DSPY_MAX_STEPS", "0"),
        ("MCP_CODE_APPROVAL_TIMEOUT_S", "inf"),  # a drain that never ended (attack 146)
        ("MCP_CODE_MAX_TIMEOUT_S", "1e400"),
    ],
)
def test_invalid_values_raise(clean_env: pytest.MonkeyPatch, variable: str, value: str) -> None:
    clean_env.setenv(variable, value)
    with pytest.raises(ValidationError) as info:
        Settings(_env_file=None)  # type: ignore[call-arg]
    assert variable in str(info.value)


def test_load_names_the_bad_variable(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("MCP_CODE_TIMEOUT_S", "abc")
    with pytest.raises(
        ConfigError, match=r"MCP_CODE_TIMEOUT_S='abc': Input should be a valid number"
    ):
        Settings.load()


def test_empty_values_keep_their_defaults(clean_env: pytest.MonkeyPatch) -> None:
    Path(".env").write_text("MCP_CODE_MAX_TOOL_CALLS=\nMCP_CODE_TIMEOUT_S=\n", encoding="utf-8")
    clean_env.setenv("MCP_CODE_POOL_SIZE", "")
    s = Settings.load()
    assert (s.max_tool_calls, s.timeout_s, s.pool_size) == (1000, 30.0, 2)


def test_invalid_value_in_dotenv_raises(clean_env: pytest.MonkeyPatch) -> None:
    Path(".env").write_text("MCP_EXECUTOR=docker\n", encoding="utf-8")
    with pytest.raises(ValidationError):
        Settings()


def test_settings_are_frozen(clean_env: pytest.MonkeyPatch) -> None:
    s = Settings(_env_file=None)  # type: ignore[call-arg]
    with pytest.raises(ValidationError):
        s.timeout_s = 1  # type: ignore[misc]
    with pytest.raises(ValidationError):
        s.executor = "pyodide"  # type: ignore[misc]
    assert s.timeout_s == 30
    assert hash(s) == hash(Settings(_env_file=None))  # type: ignore[call-arg]


def test_env_example_lists_every_setting_with_its_default() -> None:
    """`.env.example`: every setting, set to its default or only in commented examples
    when it has none (a copied file must change nothing)."""
    text = (ROOT / ".env.example").read_text(encoding="utf-8")
    defaults = Settings(_env_file=None)  # type: ignore[call-arg]
    for name, info in Settings.model_fields.items():
        env = info.validation_alias.choices[0]  # type: ignore[union-attr]
        lines = re.findall(rf"^(#\s*)?{env}=(.*)$", text, re.MULTILINE)
        assert lines, f"{env} is not in .env.example"
        active = [value for commented, value in lines if not commented]
        assert len(active) <= 1, f"{env} is set {len(active)} times"
        if not active:
            continue  # examples only: no default to state
        value = active[0]
        parsed = Settings(_env_file=None, **{name: value} if value else {})  # type: ignore[call-arg]
        assert getattr(parsed, name) == getattr(defaults, name), f"{env}={value} is not the default"
