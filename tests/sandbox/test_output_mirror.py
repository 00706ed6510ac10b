"""The shared-memory copy of a run's stdout and logs, as a worker writes and the host reads it."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from mcp_code_mode.sandbox.child.output_mirror import (
    MIRROR_BYTES,
    OutputMirror,
    create_mirror_fd,
    read_logs,
    read_mirror,
)


@pytest.fixture
def fd() -> Iterator[int]:
    created = create_mirror_fd()
    if created is None:
        pytest.skip("no memfd_create on this system")
    yield created
    os.close(created)


def test_a_fresh_mirror_is_empty(fd: int) -> None:
    assert read_mirror(fd) == ("", [])


def test_stdout_and_logs_come_back_in_order(fd: int) -> None:
    mirror = OutputMirror(fd)
    for piece in ("a", "b", "\n"):
        mirror.stdout(piece)
    mirror.log("first")
    mirror.stdout("c\ud800é\n")
    mirror.log("")
    assert read_mirror(fd) == ("ab\nc\ud800é\n", ["first", ""])


def test_reset_forgets_the_previous_run(fd: int) -> None:
    mirror = OutputMirror(fd)
    mirror.stdout("old\n")
    mirror.log("old")
    mirror.reset()
    mirror.stdout("new")
    assert read_mirror(fd) == ("new", [])


def test_a_full_mirror_keeps_what_fit(fd: int) -> None:
    mirror = OutputMirror(fd)
    chunk = "x" * 1024 * 1024
    for _ in range(4):  # 4 MiB of stdout into 3 MiB: the writes that fit are kept whole
        mirror.stdout(chunk)
    mirror.stdout("later")  # would fit, but would leave a gap: nothing after a full region
    mirror.log("small enough")
    mirror.log(chunk)
    mirror.log("later")
    stdout, logs = read_mirror(fd)
    assert stdout == chunk * 2 and logs == ["small enough"]
    assert len(stdout) < MIRROR_BYTES


def test_logs_read_while_the_run_works_come_in_bounded_reads_each_line_once(fd: int) -> None:
    mirror = OutputMirror(fd)
    written = [f"line {i}" if i % 7 else "" for i in range(20_000)] + ["é" * 5_000]
    offset, seen, reads = 0, [], 0

    def read() -> list[str]:
        nonlocal offset, reads
        lines, offset = read_logs(fd, offset, 4_096)
        reads += 1
        # The work of one read is bounded: 4,096 bytes of records, or one longer line.
        assert len(lines) <= 1 or sum(len(x.encode()) + 4 for x in lines) <= 4_096
        return lines

    for i, line in enumerate(written):
        mirror.log(line)
        if i % 3_000 == 0:  # the host looks while the worker still writes
            seen += read()
    while lines := read():
        seen += lines
    assert seen[:-1] == written[:-1] and reads > 20
    assert seen[-1] == "é" * 2_046  # a line longer than a read comes cut, then is skipped
    assert read_logs(fd, offset, 4_096) == ([], offset)
