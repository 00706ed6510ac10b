"""`runs`: runs recorded off the caller's thread into a real SQLite file, and read back.

Every test writes a real file under `tmp_path`; a second process reads what the first wrote;
a store made unwritable (a directory or garbage in its place, a newer schema) costs runs,
never an exception or a blocked caller.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import statistics
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_code_mode.errors import CodeModeError
from mcp_code_mode.runs import (
    MAX_CALL_CHARS,
    MAX_TEXT_CHARS,
    CallRecord,
    RunRecord,
    RunStore,
    RunStoreError,
    RunTrace,
    SQLiteRunBackend,
    clip,
    default_path,
)
from mcp_code_mode.runs_cli import show_runs
from mcp_code_mode.settings import Settings

LOGGER = "mcp_code_mode.runs.store"


def a_run(started: float, *, calls: int | list[CallRecord] = 0, **fields: Any) -> RunRecord:
    """A good `execute_code` run of 250 ms with these calls (or that many good ones)."""
    made = (
        calls
        if isinstance(calls, list)
        else [
            CallRecord(order=i, server="notes", tool="search", arguments=f'{{"q": {i}}}', ok=True)
            for i in range(calls)
        ]
    )
    run = RunRecord(
        kind="execute_code",
        started=started,
        ended=started + 0.25,
        client="claude-desktop",
        code="print(tools.notes.search(q='x'))",
        ok=True,
        calls=made,
    )
    return replace(run, **fields)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[RunStore]:
    opened = RunStore.open(tmp_path / "cache" / "runs.sqlite3", keep=1_000)
    yield opened
    opened.close()


# --- clip -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        ("short", 10, "short"),
        ("a\x00b", 10, "a\ufffdb"),
        ("lone \ud800 and \udfff", 40, "lone \ufffd and \ufffd"),
        ("x" * 100, 40, "x" * 13 + "… [87 more characters cut]"),
        ("x" * 100, 5, "… [10"),  # a limit under the marker's length still bounds the text
        ("", 0, ""),
        # a stub of a text clipped before counts both cuts (173 + 287 = 300, attack 111)
        ("x" * 173 + "… [127 more characters cut]", 40, "x" * 13 + "… [287 more characters cut]"),
    ],
)
def test_clip_bounds_text_says_how_much_was_cut_and_makes_it_storable(
    text: str, limit: int, expected: str
) -> None:
    assert clip(text, limit) == expected
    assert len(clip(text, limit)) <= limit


def test_clip_of_a_huge_text_costs_what_its_limit_costs() -> None:
    huge = "\ud800<script>\x00" * 5_000_000  # 50 M characters, every one a problem or markup
    started = time.perf_counter()
    clipped = clip(huge, 1_000)
    elapsed = time.perf_counter() - started
    kept, cut = clipped.split("… [")
    assert len(clipped) <= 1_000 and cut == f"{len(huge) - len(kept)} more characters cut]"
    assert elapsed < 0.5, elapsed  # cleaning all 50 M characters takes seconds
    assert "\x00" not in kept and kept.encode("utf-8")


# --- writing and reading ----------------------------------------------------------------


def test_a_run_with_25_calls_reads_back_whole_with_its_calls_in_order(store: RunStore) -> None:
    calls = [
        CallRecord(
            order=i,
            server="notes" if i % 2 else "time",
            tool=f"tool_{i}",
            arguments=json.dumps({"i": i, "q": "<b>é</b>"}),
            ok=i != 7,
            error="upstream said no" if i == 7 else None,
            started_ms=i * 10.5,
            ms=3.25,
            bytes_in=100 + i,
            bytes_out=2_000 + i,
            approval="asked: approved" if i == 3 else "auto: not asked",
        )
        for i in range(25)
    ]
    run = a_run(
        1_700_000_000.5,
        kind="run_task",
        input='{"task": "x"}',
        ok=False,
        error_type="TOOL_ERROR",
        error="ToolError: upstream said no",
        error_line=4,
        stdout="out\n",
        logs="log\n",
        result='{"n": 1}',
        calls=calls,
        tokens={"code": 12, "reply": 30, "upstream_results": 900},
    )
    store.record(run)
    assert store.flush()
    assert store.get(run.id) == run
    assert [c.order for c in store.get(run.id).calls] == list(range(25))  # type: ignore[union-attr]
    [summary] = store.list_runs()
    assert (summary.id, summary.kind, summary.ok, summary.error_type) == (
        run.id,
        "run_task",
        False,
        "TOOL_ERROR",
    )
    assert (summary.calls, summary.failed_calls, summary.tokens_saved) == (25, 1, 870)
    assert summary.duration_ms == pytest.approx(250.0)
    assert store.get("no-such-run") is None and store.dropped == 0


def test_a_run_recorded_again_replaces_the_first_and_its_calls(store: RunStore) -> None:
    first = a_run(10.0, calls=5)
    store.record(first)
    store.record(a_run(10.0, calls=2, id=first.id, ok=False))
    assert store.flush()
    again = store.get(first.id)
    assert again is not None and not again.ok and len(again.calls) == 2
    assert len(store.list_runs()) == 1


def test_runs_list_newest_first_and_filter_by_outcome_client_and_start(store: RunStore) -> None:
    runs = [
        a_run(100.0 + i, ok=i % 3 != 0, client="cursor" if i % 2 else "claude", calls=i % 4)
        for i in range(12)
    ]
    for run in reversed(runs):  # recorded oldest last: the order comes from `started`
        store.record(run)
    assert store.flush()
    newest_first = [r.id for r in reversed(runs)]
    assert [s.id for s in store.list_runs()] == newest_first
    assert [s.id for s in store.list_runs(3)] == newest_first[:3]
    assert [s.id for s in store.list_runs(ok=False)] == [r.id for r in reversed(runs) if not r.ok]
    assert [s.id for s in store.list_runs(client="cursor")] == [
        r.id for r in reversed(runs) if r.client == "cursor"
    ]
    page = store.list_runs(4, before=106.0, ok=True)
    assert [s.id for s in page] == [r.id for r in reversed(runs[:6]) if r.ok][:4]
    assert [s.calls for s in store.list_runs(3)] == [11 % 4, 10 % 4, 9 % 4]


def test_a_store_not_yet_written_reads_as_empty(tmp_path: Path) -> None:
    with_nothing = RunStore.open(tmp_path / "never" / "runs.sqlite3")
    try:
        assert with_nothing.list_runs() == [] and with_nothing.get("x") is None
    finally:
        with_nothing.close()


# --- retention --------------------------------------------------------------------------


def test_retention_keeps_exactly_the_newest_keep_runs_and_their_calls(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite3"
    store = RunStore.open(path, keep=20)
    runs = [a_run(1_000.0 + i, calls=3) for i in range(137)]
    for run in runs:
        store.record(run)
    assert store.flush()
    between = len(store.list_runs(1_000))
    store.close()
    reader = RunStore.open(path, keep=20)
    try:
        assert [s.id for s in reader.list_runs(1_000)] == [r.id for r in reversed(runs[-20:])]
        assert reader.get(runs[0].id) is None
    finally:
        reader.close()
    assert between == 20  # a flush prunes as well
    db = sqlite3.connect(path)  # `with` commits but does not close (3.13: ResourceWarning)
    try:
        assert db.execute("SELECT count(*) FROM calls").fetchone() == (20 * 3,)
    finally:
        db.close()


def test_keep_0_is_no_limit(tmp_path: Path) -> None:
    store = RunStore.open(tmp_path / "runs.sqlite3", keep=0)
    for i in range(30):
        store.record(a_run(float(i)))
    try:
        assert store.flush() and len(store.list_runs(100)) == 30
    finally:
        store.close()


def test_runs_older_than_keep_days_go(tmp_path: Path) -> None:
    store = RunStore.open(tmp_path / "runs.sqlite3", keep_days=1)
    old, new = a_run(time.time() - 3 * 86_400), a_run(time.time() - 3_600)
    store.record(old)
    store.record(new)
    assert store.flush()
    try:
        assert [s.id for s in store.list_runs()] == [new.id]
    finally:
        store.close()


# --- a broken store ---------------------------------------------------------------------


def _directory(path: Path) -> None:
    path.mkdir(parents=True)


def _garbage(path: Path) -> None:
    path.write_bytes(os.urandom(64 * 1024))


def _newer_schema(path: Path) -> None:
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        db.execute("INSERT INTO schema_version VALUES (99)")
    db.close()


@pytest.mark.parametrize("break_it", [_directory, _garbage, _newer_schema])
def test_a_broken_store_costs_runs_not_exceptions_and_is_logged_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, break_it: Callable[[Path], None]
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    path = tmp_path / "runs.sqlite3"
    break_it(path)
    store = RunStore(SQLiteRunBackend(path), retry_s=0)  # tried again at every run
    try:
        for batch in range(5):
            for i in range(10):
                store.record(a_run(float(batch * 10 + i), calls=2))
            assert store.flush()
        assert store.dropped == 0  # held for when it is back (attack 148)
    finally:
        store.close()
    assert store.dropped == 50  # it never came back
    warnings = [r for r in caplog.records if r.name == LOGGER]
    assert len(warnings) == 1 and "runs are not recorded" in warnings[0].getMessage()
    assert str(path) in warnings[0].getMessage()


def test_a_store_that_comes_back_is_written_again(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite3"
    path.mkdir()
    store = RunStore(SQLiteRunBackend(path), retry_s=0)
    try:
        for i in range(5):
            store.record(a_run(float(i)))
        assert store.flush() and store.dropped == 0
        path.rmdir()
        later = [a_run(10.0 + i) for i in range(5)]
        for run in later:
            store.record(run)
        assert store.flush() and store.dropped == 0
        # those made while it was down too: they were dropped (outside attack 148)
        assert len(store.list_runs()) == 10
    finally:
        store.close()


def test_malformed_runs_are_dropped_logged_once_and_the_rest_stored(
    store: RunStore, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    good = [a_run(float(i)) for i in range(3)]
    for run in good:
        store.record(a_run(0.5, tokens={"reply": float("nan")}))  # not a count
        store.record(run)
    assert store.flush() and store.dropped == 3
    assert [s.id for s in store.list_runs()] == [r.id for r in reversed(good)]
    assert len([r for r in caplog.records if r.name == LOGGER]) == 1


def test_reading_a_garbage_file_is_a_run_store_error(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite3"
    _garbage(path)
    store = RunStore.open(path)
    try:
        with pytest.raises(RunStoreError, match=r"runs\.sqlite3"):
            store.list_runs()
    finally:
        store.close()


def test_close_writes_what_is_queued_and_stops_the_writer(tmp_path: Path) -> None:
    def writers() -> set[threading.Thread]:
        return {t for t in threading.enumerate() if t.name == "mcp-code-mode-runs"}

    before = writers()
    path = tmp_path / "runs.sqlite3"
    store = RunStore.open(path)
    runs = [a_run(float(i), calls=3) for i in range(50)]
    for run in runs:
        store.record(run)
    started = time.perf_counter()
    store.close()
    assert time.perf_counter() - started < 5.0
    assert writers() - before == set()
    reader = RunStore.open(path)
    try:
        assert len(reader.list_runs(100)) == 50
    finally:
        reader.close()


def test_records_after_close_are_dropped_not_raised(store: RunStore) -> None:
    store.close()
    store.record(a_run(1.0))
    assert store.dropped == 1 and not store.flush(timeout_s=0.5)


# --- other processes --------------------------------------------------------------------


def _python(code: str) -> subprocess.CompletedProcess[str]:
    env = os.environ | {"FASTMCP_CHECK_FOR_UPDATES": "off", "FASTMCP_SHOW_SERVER_BANNER": "false"}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=True,
    )


def test_another_process_reads_what_a_running_writer_wrote(store: RunStore, tmp_path: Path) -> None:
    runs = [a_run(500.0 + i, calls=i) for i in range(3)]
    for run in runs:
        store.record(run)
    assert store.flush()
    path = tmp_path / "cache" / "runs.sqlite3"
    out = _python(f"""
        import json
        from pathlib import Path
        from mcp_code_mode.runs import RunStore
        store = RunStore.open(Path({str(path)!r}))
        rows = store.list_runs()
        newest = store.get(rows[0].id)
        print(json.dumps([[s.id for s in rows], [c.order for c in newest.calls]]))
        store.close()
    """)
    assert json.loads(out.stdout) == [[r.id for r in reversed(runs)], [0, 1]]
    store.record(a_run(600.0))  # the writer goes on after the reader
    assert store.flush() and len(store.list_runs()) == 4


def test_runs_recorded_just_before_exit_are_written(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite3"
    _python(f"""
        from pathlib import Path
        from mcp_code_mode.runs import RunRecord, RunStore
        store = RunStore.open(Path({str(path)!r}))
        for i in range(200):
            store.record(RunRecord(kind="execute_code", started=i, ended=i, client="c",
                                   code="x", ok=True))
    """)  # no flush, no close: the exit does it
    reader = RunStore.open(path)
    try:
        assert len(reader.list_runs(1_000)) == 200
    finally:
        reader.close()


# --- the caller's thread ----------------------------------------------------------------


def test_a_full_queue_drops_and_counts_runs_instead_of_blocking(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite3"
    store = RunStore(SQLiteRunBackend(path), max_queued=10, batch=5)
    assert store.flush()  # created
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")  # the writer waits for this lock
    try:
        started = time.perf_counter()
        for i in range(2_000):
            store.record(a_run(float(i)))
        elapsed = time.perf_counter() - started
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    try:
        assert elapsed < 1.0, elapsed
        assert store.dropped >= 2_000 - 10 - 5  # the queue holds 10, the writer a batch
        assert store.flush()
        assert store.dropped + len(store.list_runs(5_000)) == 2_000
    finally:
        store.close()


def test_record_costs_the_caller_little(store: RunStore) -> None:
    runs = [a_run(float(i), calls=20, stdout="x" * 50_000) for i in range(1_000)]
    costs = []
    for run in runs:
        started = time.perf_counter()
        store.record(run)
        costs.append(time.perf_counter() - started)
        if len(costs) % 200 == 0:
            assert store.flush()  # stay under the queue bound: this measures, not drops
    assert statistics.median(costs) < 0.005
    assert store.flush() and store.dropped == 0
    assert len(store.list_runs(2_000)) == 1_000


# --- hostile text -----------------------------------------------------------------------

NASTY = st.sampled_from(
    ["\ud800", "\udfff\ud83d", "\x00", "<script>alert(1)</script>", "</textarea>", "\x1b[2J", "é"]
)
TEXT = st.one_of(
    st.text(st.one_of(st.characters(), st.characters(categories=["Cs"]))),  # lone surrogates
    st.lists(st.one_of(NASTY, st.text(max_size=5))).map("".join),
    st.tuples(NASTY, st.integers(0, 60_000)).map(lambda p: p[0] * p[1]),  # huge
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(code=TEXT, stdout=TEXT, client=TEXT, arguments=TEXT, error=TEXT, key=TEXT)
def test_hostile_text_is_stored_bounded_and_read_back(
    tmp_path_factory: pytest.TempPathFactory,
    code: str,
    stdout: str,
    client: str,
    arguments: str,
    error: str,
    key: str,
) -> None:
    store = RunStore.open(tmp_path_factory.mktemp("hostile") / "runs.sqlite3")
    call = CallRecord(order=0, server=client, tool=key, arguments=arguments, ok=False, error=error)
    run = a_run(1.0, code=code, stdout=stdout, client=client, calls=[call], tokens={key: 1})
    try:
        store.record(run)
        assert store.flush() and store.dropped == 0
        back = store.get(run.id)
    finally:
        store.close()
    assert back is not None
    assert (back.code, back.stdout) == (clip(code, MAX_TEXT_CHARS), clip(stdout, MAX_TEXT_CHARS))
    assert back.calls[0].arguments == clip(arguments, MAX_CALL_CHARS)
    assert back.calls[0].error == clip(error, MAX_CALL_CHARS)
    for text in (back.code, back.stdout, back.client, back.calls[0].arguments, *back.tokens):
        text.encode("utf-8")  # no lone surrogate left
        assert "\x00" not in text and len(text) <= MAX_TEXT_CHARS
    if "<script>" in code and len(code) < MAX_TEXT_CHARS:
        assert "<script>" in back.code  # stored as written: escaping is the page's job


def test_a_runs_call_texts_are_bounded_in_all(store: RunStore) -> None:
    """Outside attacks 107 and 109: 999 failing calls of 5 KB arguments stored 2.3 MB for
    one run (10,000 runs kept: 23 GB); with emoji arguments and long names, 2.1 MB after a
    budget in characters. Past 200,000 bytes of names, arguments and errors in all, a call
    keeps 40 characters of each; every call is still there, in order."""
    calls = [
        CallRecord(
            order=i,
            server="s" * 300,
            tool="t" * 300,
            arguments="\U0001f600" * 5_000,
            ok=False,
            error="e" * 5_000,
        )
        for i in range(999)
    ]
    run = a_run(1.0, calls=calls)
    store.record(run)
    assert store.flush() and store.dropped == 0
    back = store.get(run.id)
    assert back is not None and [c.order for c in back.calls] == list(range(999))
    texts = [t for c in back.calls for t in (c.server, c.tool, c.arguments, c.error or "")]
    assert sum(len(t.encode()) for t in texts) <= 200_000 + 30_000 + 999 * 4 * 4 * 40
    assert back.calls[0].arguments == clip("\U0001f600" * 5_000, MAX_CALL_CHARS)
    assert len(back.calls[-1].arguments) == 40 and len(back.calls[-1].server) == 40


# --- where the store lives --------------------------------------------------------------


def test_default_path_is_in_the_cache_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert default_path(tmp_path) == tmp_path / "mcp-code-mode" / "runs.sqlite3"
    monkeypatch.setenv("MCP_CODE_CACHE_DIR", str(tmp_path / "env"))
    assert default_path() == tmp_path / "env" / "mcp-code-mode" / "runs.sqlite3"


class _CountingBackend(SQLiteRunBackend):
    """The real SQLite backend, counting its transactions."""

    writes: list[int]

    def write(self, runs: Sequence[RunRecord]) -> None:
        self.writes.append(len(runs))
        super().write(runs)


def test_runs_recorded_back_to_back_are_written_in_few_transactions(tmp_path: Path) -> None:
    backend = _CountingBackend(tmp_path / "runs.sqlite3")
    backend.writes = []
    store = RunStore(backend, keep=0, batch=100)
    try:
        for i in range(1_000):
            store.record(a_run(float(i), calls=2))
        assert store.flush() and store.dropped == 0
        assert sum(backend.writes) == 1_000 and len(store.list_runs(2_000)) == 1_000
        assert len(backend.writes) <= 1_000 // 100 + 5, backend.writes  # not one a run
        store.record(a_run(5_000.0))  # alone, it is written once the writer saw no other
        deadline = time.monotonic() + 10
        while len(store.list_runs(2_000)) < 1_001 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(store.list_runs(2_000)) == 1_001
    finally:
        store.close()


def test_runs_waiting_are_bounded_in_characters_too(tmp_path: Path) -> None:
    store = RunStore(SQLiteRunBackend(tmp_path / "runs.sqlite3"), max_pending_chars=1_000_000)
    assert store.flush()
    building = threading.Event()

    def slow_to_build() -> RunRecord:  # the writer holds it, and everything after waits
        building.wait(10)
        return a_run(0.0)

    try:
        store.record(slow_to_build, chars=300_000)
        for i in range(1, 10):
            store.record(a_run(float(i)), chars=300_000)
        assert store.dropped == 10 - 3  # 3 of 300,000 characters fit under 1,000,000
    finally:
        building.set()
    try:
        assert store.flush()
        assert store.dropped + len(store.list_runs(50)) == 10
        store.record(a_run(99.0), chars=300_000)  # what was waiting is settled: room again
        assert store.flush() and any(r.started == 99.0 for r in store.list_runs(50))
    finally:
        store.close()


def test_a_run_after_a_pause_is_written_at_once(tmp_path: Path) -> None:
    """Only runs coming back to back wait for a quiet moment (here 5 s, to tell them
    apart): one after a pause is readable as soon as the writer has it."""
    store = RunStore(SQLiteRunBackend(tmp_path / "runs.sqlite3"), quiet_s=5.0, linger_s=0.2)
    try:
        assert store.flush()
        time.sleep(0.3)  # longer than `linger_s` since anything was written
        started = time.monotonic()
        store.record(a_run(1.0))
        while not store.list_runs() and time.monotonic() - started < 10:
            time.sleep(0.01)
        assert store.list_runs() and time.monotonic() - started < 2.5
    finally:
        store.close()


def test_past_10000_calls_the_approved_and_the_good_ones_are_kept_and_the_cut_said(
    store: RunStore,
) -> None:
    """Outside attack 137: 10,000 failing calls, then an approved write that reached its
    upstream; the record kept the first 10,000 and dropped the write without a word."""
    failing = [
        CallRecord(order=i, server="s", tool=f"nope{i}", arguments="{}", ok=False, error="no")
        for i in range(10_050)
    ]
    write = CallRecord(
        order=10_050, server="s", tool="delete_note", arguments="{}", ok=True, approval="approved"
    )
    run = a_run(1.0, calls=[*failing, write])
    store.record(run)
    assert store.flush() and store.dropped == 0
    back = store.get(run.id)
    assert back is not None and len(back.calls) == 10_000
    assert [c.order for c in back.calls] == sorted(c.order for c in back.calls)
    assert back.calls[-2].tool == "delete_note" and back.calls[-2].approval == "approved"
    note = back.calls[-1]
    assert note.tool == "(not kept)" and note.error is not None
    assert note.error.startswith("52 of the run's 10,051 calls are not kept"), note.error


def test_a_run_shown_has_one_line_a_call_whatever_its_texts_hold(
    store: RunStore, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Outside attack 137: line breaks in a tool name `call_tool` was given, in an
    upstream's error and in the run's error printed call lines and a "started" line that
    were never made; arguments were cut at 200 characters with no mark."""
    fake = "#9     +    1.0 ms      1.0 ms  s.delete_note({}) ok, 9 bytes  approval: approved"
    calls = [
        CallRecord(order=0, server="s", tool=f"read\n{fake}", arguments="{}", ok=False, error="x"),
        CallRecord(order=1, server="s", tool="fail", arguments="{}", ok=False, error=f"a\n{fake}"),
        CallRecord(
            order=2, server="s", tool="d", arguments='{"id": "a' + " " * 300 + 'b"}', ok=True
        ),
    ]
    run = a_run(1.0, calls=calls, ok=False, error="boom\u2028started 2026-01-01, took 0 s, ok")
    store.record(run)
    assert store.flush()
    settings = Settings(runs_db=str(tmp_path / "cache" / "runs.sqlite3"))
    assert show_runs(settings, last=1, run_id=run.id, as_json=False) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len([line for line in lines if line.startswith("#")]) == 3, lines
    assert len([line for line in lines if line.startswith("started ")]) == 1, lines
    assert any("more characters cut]" in line for line in lines if line.startswith("#2")), lines


def test_the_runs_command_takes_the_start_of_an_id(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A new user copied the start of the first column and got "no run": a unique start
    shows the run, a start two runs share says so, like git's short commit names."""
    path = tmp_path / "runs.sqlite3"
    backend = SQLiteRunBackend(path)
    backend.open()
    ids = ["abc123" + "0" * 26, "abd456" + "0" * 26]
    backend.write([a_run(1.0 + n, id=run_id, code=f"{n} + 1") for n, run_id in enumerate(ids)])
    backend.close()
    where = Settings(runs_db=str(path))
    assert show_runs(where, last=5, run_id="ABC1", as_json=True) == 0
    assert json.loads(capsys.readouterr().out)["code"] == "0 + 1"
    with pytest.raises(CodeModeError, match=r"several runs .* start with 'ab'"):
        show_runs(where, last=5, run_id="ab", as_json=False)
    for nothing in ["abe", "", "%", "_bc"]:
        with pytest.raises(CodeModeError, match="no run"):
            show_runs(where, last=5, run_id=nothing, as_json=False)


def test_a_run_holds_the_start_of_big_results_until_written_not_all_of_them() -> None:
    """Sixteen runs reading 9 MB each held every result whole until the writer got to them
    (a minute behind, counting tokens over 2 MB each): 600 MB for a served gateway
    (outside attack 143). A run keeps their start; sizes and the token figure are still
    of all of it."""
    trace = RunTrace("execute_code", "len(big)", None, "pytest")
    sizes = [3_000_000, 400_000, 10]
    for n, size in enumerate(sizes):
        call = trace.call("big", "big", f'{{"n": {n}}}', 10)
        trace.end(call, ok=True, text="\u00e9" * size)
    assert trace.chars <= 250_000 + 100, trace.chars
    record = trace.finish(lambda: {"ok": True, "result": 1}, lambda text: len(text) // 4)()
    assert [c.bytes_out for c in record.calls] == [2 * size for size in sizes]
    assert record.tokens["upstream_results"] == pytest.approx(sum(sizes) / 4, rel=0.01)


def test_runs_made_while_the_store_is_locked_are_written_once_it_is_free(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A lock held past the busy wait marked the store broken for 30 s: the run made during
    the lock and those made for 30 s after it was let go were dropped, unsaid after the
    first outage (outside attack 148)."""
    caplog.set_level(logging.WARNING, logger=LOGGER)
    path = tmp_path / "runs.sqlite3"
    store = RunStore(SQLiteRunBackend(path))
    try:
        store.record(a_run(1.0))
        assert store.flush()
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN EXCLUSIVE")  # another process holds the store: 6 s
        store.record(a_run(2.0))
        time.sleep(6.0)
        other.execute("ROLLBACK")
        other.close()
        store.record(a_run(3.0))
        for _ in range(100):  # tried again within seconds, not 30
            if len(store.list_runs()) == 3:
                break
            time.sleep(0.1)
        assert [s.started for s in store.list_runs()] == [3.0, 2.0, 1.0]
        assert store.dropped == 0
    finally:
        store.close()
    said = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert len(said) == 2 and "recorded again" in said[1], said


def test_a_store_file_removed_while_open_is_made_again(tmp_path: Path) -> None:
    """Runs went on into the removed file: every reader found no runs (outside attack 148)."""
    path = tmp_path / "runs.sqlite3"
    store = RunStore(SQLiteRunBackend(path))
    try:
        store.record(a_run(1.0))
        assert store.flush()
        for stale in tmp_path.glob("runs.sqlite3*"):
            stale.unlink()
        store.record(a_run(2.0))
        for _ in range(100):
            store.flush()
            if _started_in(path):
                break
            time.sleep(0.1)
        assert _started_in(path) == [2.0] and store.dropped == 0
    finally:
        store.close()


def _started_in(path: Path) -> list[float]:
    """What the file at `path` holds, as another process reads it (none: no such file)."""
    if not path.exists():
        return []
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        try:
            return [row[0] for row in db.execute("SELECT started FROM runs")]
        except sqlite3.OperationalError:  # not made yet
            return []


def test_runs_held_while_the_store_is_down_are_bounded(tmp_path: Path) -> None:
    """Runs were held without bound between retries: 3,005 with a queue of 100 during a
    6 s outage (review 150). The newest `max_queued` are kept."""
    path = tmp_path / "runs.sqlite3"
    path.mkdir()  # not a file: the store is down
    store = RunStore(SQLiteRunBackend(path), max_queued=10, retry_s=0.5)
    try:
        for i in range(50):
            store.record(a_run(float(i)))
            if i % 5 == 4:
                assert store.flush()
        assert store.dropped == 40
        path.rmdir()  # back: tried again within half a second, with no run to wake it
        for _ in range(100):
            if len(store.list_runs(last=100)) == 10:
                break
            time.sleep(0.1)
        kept = [s.started for s in store.list_runs(last=100)]
    finally:
        store.close()
    assert kept == [float(i) for i in range(49, 39, -1)] and store.dropped == 40


def test_reading_a_store_of_another_schema_version_is_a_run_store_error(tmp_path: Path) -> None:
    """Reads never checked the version: `runs ID` ended in a traceback and the runs page
    answered 500 on a store another version wrote (outside attack 148)."""
    path = tmp_path / "runs.sqlite3"
    store = RunStore(SQLiteRunBackend(path))
    store.record(a_run(1.0))
    store.close()
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("UPDATE schema_version SET version = 99")
        db.execute("ALTER TABLE runs RENAME COLUMN stdout TO stdout_text")
        db.commit()
    reader = SQLiteRunBackend(path)
    for read in (
        lambda: reader.list_runs(5, ok=None, client=None, before=None),
        lambda: reader.get("x"),
    ):
        with pytest.raises(RunStoreError, match="schema 99"):
            read()
