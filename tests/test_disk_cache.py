"""`disk_cache`: cache files written by one thread off the build's path, served until written."""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
from pathlib import Path

import numpy
import pytest

from mcp_code_mode import disk_cache
from mcp_code_mode.embeddings import EmbeddingStore


def test_a_value_is_served_while_its_file_is_written_then_read_from_disk(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "value.bin"
    release = threading.Event()

    def slow(value: bytes) -> bytes:
        assert release.wait(30)
        return value

    written = disk_cache.write_later(path, b"payload", slow, "test cache")
    assert disk_cache.pending(path) == b"payload" and not path.exists()
    release.set()
    assert written.result(30) is True
    assert disk_cache.pending(path) is None and path.read_bytes() == b"payload"
    assert [p.name for p in path.parent.iterdir()] == ["value.bin"]  # no partial file left


def test_a_failed_write_is_logged_and_later_writes_go_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    failed = disk_cache.write_later(blocker / "x.bin", b"1", bytes, "test cache")

    def broken(value: bytes) -> bytes:
        raise ValueError("cannot encode")

    crashed = disk_cache.write_later(tmp_path / "y.bin", b"2", broken, "test cache")
    fine = disk_cache.write_later(tmp_path / "z.bin", b"3", bytes, "test cache")
    assert (failed.result(30), crashed.result(30), fine.result(30)) == (False, False, True)
    assert "test cache not written" in caplog.text and "cannot encode" in caplog.text
    assert disk_cache.pending(blocker / "x.bin") is None  # nothing held for a failed write
    assert (tmp_path / "z.bin").read_bytes() == b"3"


def test_vectors_that_cannot_be_written_stay_in_memory(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    embedded: list[int] = []
    store = EmbeddingStore(blocker / "cache")
    real = store.embedder

    def counting():  # type: ignore[no-untyped-def]
        embedded.append(1)
        return real()

    store.embedder = counting
    first = store.vectors([[("read a file",)]])
    disk_cache.flush()
    again = store.vectors([[("read a file",)]])
    assert first is not None and again is not None and numpy.array_equal(first, again)
    assert len(embedded) == 1  # the second lookup found them in memory


def test_prune_runs_after_the_writes_handed_over_before_it(tmp_path: Path) -> None:
    for i in range(5):
        disk_cache.write_later(tmp_path / f"{i}.x", bytes([i]), bytes, "test cache")
    disk_cache.prune_later(tmp_path, "*.x", 2, "test cache")
    disk_cache.flush()
    assert len(list(tmp_path.glob("*.x"))) == 2


def test_a_write_handed_over_as_the_process_exits_is_dropped_quietly(tmp_path: Path) -> None:
    """A search index built after `exec` had ended wrote its cache as Python exited: a
    traceback of "cannot schedule new futures after interpreter shutdown" (attack 132)."""
    script = (
        "import sys, threading, time\n"
        "from pathlib import Path\n"
        "from mcp_code_mode import disk_cache\n"
        "def late():\n"
        "    time.sleep(0.5)\n"
        "    done = disk_cache.write_later(Path(sys.argv[1]), b'v', bytes, 'late')\n"
        "    disk_cache.prune_later(Path(sys.argv[1]).parent, '*.x', 1, 'late')\n"
        "    print('written:', done.result())\n"
        "threading.Thread(target=late).start()\n"
    )
    ran = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "late.bin")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert ran.returncode == 0 and "Traceback" not in ran.stderr, ran.stderr
    assert ran.stdout.strip() == "written: False"
    assert not (tmp_path / "late.bin").exists()
