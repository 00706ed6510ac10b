"""The shared-memory copy of a run's stdout and logs, as a worker writes and the host reads it."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from mcp_code_mode.sandbox.output_mirror import (
    MIRROR_BYTES,
    OutputMirror,
    create_mirror_fd,
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
