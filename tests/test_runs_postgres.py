"""Runs in PostgreSQL (MCP_CODE_RUNS_DB=postgresql://...): a real throwaway cluster
(`pg_cluster`), a new database per test. The backend keeps what SQLite keeps, two processes
share one history, a broken URL costs runs (logged once, password never shown), and a real
gateway's run is listed by `mcp-code-mode runs` from another process."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from mcp_code_mode.runs import (
    CallRecord,
    PostgresRunBackend,
    RunStore,
    RunStoreError,
    SQLiteRunBackend,
    open_backend,
    shown_location,
)
from mcp_code_mode.runs.records import as_stored

from .pg_cluster import PASSWORD, Cluster, running_cluster
from .support import TEST_SERVER, ConfigWriter, server_entry, start_gateway
from .test_run_store import a_run

LOGGER = "mcp_code_mode.runs.store"


@pytest.fixture(scope="session")
def postgres() -> Iterator[Cluster]:
    with running_cluster() as cluster:
        yield cluster


@pytest.fixture
def pg_url(postgres: Cluster) -> str:
    return postgres.new_database()


def _calls(count: int) -> list[CallRecord]:
    """`count` calls, the 8th failing, the 12th asked for approval, timings all different."""
    return [
        CallRecord(
            order=i,
            server="notes",
            tool="search",
            arguments=json.dumps({"q": i}),
            ok=i != 7,
            error="it broke" if i == 7 else None,
            started_ms=i * 1.25,
            ms=3.5 + i / 3,
            bytes_in=10 + i,
            bytes_out=100 + i,
            approval="asked: approved" if i == 11 else None,
        )
        for i in range(count)
    ]


def test_the_url_picks_postgres_and_its_password_is_never_shown(pg_url: str) -> None:
    backend = open_backend(pg_url)
    assert isinstance(backend, PostgresRunBackend)
    assert isinstance(open_backend("/tmp/runs.sqlite3"), SQLiteRunBackend)
    assert PASSWORD not in shown_location(pg_url) + repr(backend)
    assert shown_location(pg_url).startswith("postgresql://postgres:***@127.0.0.1:")


def test_a_run_with_25_calls_round_trips_in_order(pg_url: str) -> None:
    run = a_run(1_700_000_000.123456, calls=_calls(25), ok=False, error_type="RUNTIME_ERROR")
    run = replace(run, error_line=3, tokens={"code": 40, "reply": 10, "upstream_results": 900})
    backend = PostgresRunBackend(pg_url)
    backend.open()
    try:
        backend.write([run])
        backend.open()  # again: the schema is there, its version checked
        assert backend.get(run.id) == run
        (summary,) = backend.list_runs(10, ok=None, client=None, before=None)
        assert (summary.calls, summary.failed_calls, summary.tokens_saved) == (25, 1, 890)
        assert summary.duration_ms == pytest.approx(250.0)
        shorter = replace(run, calls=_calls(2), ok=True)
        backend.write([shorter])  # recorded again: it replaces the first, calls and all
        assert backend.get(run.id) == shorter
        assert [s.calls for s in backend.list_runs(10, ok=None, client=None, before=None)] == [2]
    finally:
        backend.close()
    assert PostgresRunBackend(pg_url).get("0" * 32) is None


def test_reads_before_anything_is_written_find_nothing(pg_url: str) -> None:
    backend = PostgresRunBackend(pg_url)
    assert backend.list_runs(10, ok=None, client=None, before=None) == []
    assert backend.get("0" * 32) is None


def test_retention_keeps_the_newest_runs_and_drops_old_ones(pg_url: str) -> None:
    now = time.time()
    store = RunStore.open(pg_url, keep=20)
    runs = [a_run(now - 50 + i) for i in range(50)]
    for run in runs:
        store.record(run)
    assert store.flush()
    assert [s.id for s in store.list_runs(100)] == [r.id for r in reversed(runs[-20:])]
    store.close()
    by_age = RunStore.open(pg_url, keep=0, keep_days=1)  # pruned at start: 1 day, no count
    for days in (3, 2):
        by_age.record(a_run(now - days * 86_400))
    assert by_age.flush() and len(by_age.list_runs(100)) == 20
    by_age.close()


def test_list_filters_and_order_match_sqlite(pg_url: str, tmp_path: Path) -> None:
    runs = [
        a_run(1_000.0 + i // 2, ok=i % 3 != 0, client=("alpha", "beta")[i % 2], calls=i % 4)
        for i in range(12)  # pairs start at the same second: newest written first
    ]
    sqlite, postgres = SQLiteRunBackend(tmp_path / "runs.sqlite3"), PostgresRunBackend(pg_url)
    for backend in (sqlite, postgres):
        backend.open()
        for run in runs:
            backend.write([run])
        backend.close()
    for last, ok, client, before in [
        (50, None, None, None),
        (3, None, None, None),
        (50, False, None, None),
        (50, True, "beta", None),
        (50, None, "alpha", 1_003.0),
        (0, None, None, None),
        (50, None, "nobody", None),
    ]:
        expected = sqlite.list_runs(last, ok=ok, client=client, before=before)
        assert postgres.list_runs(last, ok=ok, client=client, before=before) == expected
    for run in runs:  # the page after each run: the one started at the same time included
        expected = sqlite.list_runs(50, ok=None, client=None, before=run.started, before_id=run.id)
        got = postgres.list_runs(50, ok=None, client=None, before=run.started, before_id=run.id)
        assert got == expected and run.id not in [r.id for r in got]
    assert [postgres.get(r.id) for r in runs] == [sqlite.get(r.id) for r in runs]


def test_hostile_text_is_stored_cleaned_and_bounded(pg_url: str) -> None:
    hostile = "<script>alert(1)</script>\x00\ud800\udfff' OR 1=1; --" + "x" * 100_000
    calls = [CallRecord(order=0, server="s\x00", tool="\ud83d", arguments=hostile, ok=True)]
    run = a_run(time.time(), calls=calls, code=hostile, client=hostile, stdout=hostile)
    run = replace(run, tokens={"\x00code": 5})
    store = RunStore.open(pg_url)
    store.record(run)
    assert store.flush() and store.dropped == 0
    kept = store.get(run.id)
    store.close()
    assert kept == as_stored(run)
    assert kept is not None and kept.code.startswith("<script>alert(1)</script>\ufffd\ufffd\ufffd'")
    assert len(kept.code) <= 20_000 and kept.calls[0].tool == "\ufffd"
    # What `as_stored` cleans is what PostgreSQL refuses: the error is ours, without the
    # password, and the backend writes again after it.
    backend = PostgresRunBackend(pg_url)
    backend.open()
    try:
        with pytest.raises(RunStoreError) as refused:
            backend.write([a_run(1.0, code="a\x00b")])
        assert PASSWORD not in str(refused.value) and "***" in str(refused.value)
        backend.write([a_run(2.0)])
    finally:
        backend.close()


def test_a_broken_url_is_logged_once_and_costs_only_runs(
    postgres: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    wrong_port = postgres.url().replace(f":{postgres.port}/", ":1/")
    store = RunStore(PostgresRunBackend(wrong_port), retry_s=0)  # tried again at every run
    for i in range(3):
        store.record(a_run(float(i)))
    assert store.flush()
    assert store.dropped == 0  # held for its return (attack 148)
    store.close()
    assert store.dropped == 3  # it never came
    warnings = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert len(warnings) == 1 and "cannot open the run store" in warnings[0]
    assert "postgresql://postgres:***@127.0.0.1:1/" in warnings[0]
    with pytest.raises(RunStoreError) as reading:
        PostgresRunBackend(wrong_port).list_runs(10, ok=None, client=None, before=None)
    assert PASSWORD not in warnings[0] + str(reading.value)


_WRITER = """
import sys, time
from mcp_code_mode.runs import CallRecord, RunRecord, RunStore

url, keep, client, count = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
print("ready", flush=True)
sys.stdin.readline()  # both processes open the new database's store at the same moment
store = RunStore.open(url, keep=keep)
for i in range(count):
    now = time.time()
    calls = [CallRecord(order=n, server="s", tool="t", arguments="{}", ok=True) for n in range(5)]
    store.record(RunRecord(kind="execute_code", started=now, ended=now + 0.01, client=client,
                           code=f"run {i}", ok=True, calls=calls))
    time.sleep(0.002)
assert store.flush(60)
store.close()
print(store.dropped, flush=True)
"""


@pytest.mark.parametrize("keep", [1_000, 10])
def test_two_processes_share_one_history(pg_url: str, keep: int) -> None:
    writer = [sys.executable, "-c", textwrap.dedent(_WRITER), pg_url, str(keep)]
    with subprocess.Popen(
        [*writer, "other", "60"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as other:
        try:
            assert other.stdout is not None and other.stdin is not None
            assert other.stdout.readline().strip() == "ready"
            other.stdin.write("go\n")
            other.stdin.flush()
            here = subprocess.run(
                [*writer, "here", "60"], input="go\n", capture_output=True, text=True, timeout=80
            )
            assert here.returncode == 0, here.stderr
            assert here.stdout.split() == ["ready", "0"]
            assert other.wait(timeout=80) == 0
            assert other.stdout.read().strip() == "0"  # nothing dropped: no lock or schema race
        finally:
            if other.poll() is None:
                other.kill()
    runs = RunStore.open(pg_url, keep=keep)
    try:
        listed = runs.list_runs(500)
    finally:
        runs.close()
    if keep == 10:
        assert len(listed) == 10
    else:
        assert sorted(r.client for r in listed) == ["here"] * 60 + ["other"] * 60
        assert all(r.calls == 5 for r in listed)
        assert [r.started for r in listed] == sorted((r.started for r in listed), reverse=True)


def test_importing_the_package_does_not_import_psycopg() -> None:
    code = "import sys, mcp_code_mode.runs; print('psycopg' in sys.modules)"
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert ran.stdout.strip() == "False", ran.stderr


async def test_a_gateway_records_into_postgres_and_the_runs_command_lists_it(
    pg_url: str, write_config: ConfigWriter, tmp_path: Path
) -> None:
    config = write_config({"testsrv": server_entry(TEST_SERVER)})
    gateway = await start_gateway(config, runs_db=pg_url)
    try:
        code = 'for i in range(3):\n    tools.testsrv.echo(text=f"hi {i}")\n42'
        assert (await gateway.execute(code, client="pg-client")).ok
    finally:
        await gateway.aclose()  # writes what is queued
    assert gateway.recorder.path == pg_url
    env = {
        **os.environ,
        "MCP_CODE_RUNS_DB": pg_url,
        "MCP_CODE_CACHE_DIR": str(tmp_path),
        "FASTMCP_CHECK_FOR_UPDATES": "off",
        "FASTMCP_SHOW_SERVER_BANNER": "false",
    }
    command = [str(Path(sys.executable).parent / "mcp-code-mode"), "runs"]

    def runs(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*command, *args], env=env, capture_output=True, text=True, timeout=60
        )

    listed = runs("--json")
    (row,) = json.loads(listed.stdout)
    assert row["ok"] is True and row["calls"] == 3 and row["client"] == "pg-client"
    shown = runs(row["id"])
    assert shown.returncode == 0 and "testsrv.echo(" in shown.stdout
    assert runs(row["id"][:6]).stdout == shown.stdout  # the start of an id will do
    missing = runs("0" * 32)
    assert missing.returncode == 2 and "no run" in missing.stderr
    assert "postgresql://postgres:***@" in missing.stderr
    assert PASSWORD not in listed.stderr + shown.stdout + shown.stderr + missing.stderr


async def test_a_gateway_with_an_unreachable_database_still_runs(
    postgres: Cluster, write_config: ConfigWriter, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    wrong_port = postgres.url().replace(f":{postgres.port}/", ":1/")
    gateway = await start_gateway(write_config({}), runs_db=wrong_port)
    try:
        for n in range(3):
            assert (await gateway.execute(f"{n} + 1")).result == n + 1
    finally:
        await gateway.aclose()
    warnings = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert len(warnings) == 1 and PASSWORD not in warnings[0]
