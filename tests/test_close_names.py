"""`close_names.NameIndex`: the closest names, few, quickly among many."""

from __future__ import annotations

import time

import pytest

from mcp_code_mode.close_names import NameIndex

NAMES = ["read_file", "write_file", "list_directory", "move_file", "git_log", "git_status"]


@pytest.mark.parametrize(
    ("name", "closest"),
    [("readfile", "read_file"), ("git-log", "git_log"), ("list_dir", "list_directory")],
)
def test_closest_of_a_few(name: str, closest: str) -> None:
    assert NameIndex(NAMES).closest(name)[0] == closest


def test_nothing_close_gives_nothing() -> None:
    assert NameIndex(NAMES).closest("zzzzqqqq") == []
    assert NameIndex([]).closest("x") == []
    assert NameIndex(NAMES).closest("x" * 1_000_000) == []


def test_among_ten_thousand_the_shortlist_finds_what_difflib_would() -> None:
    import difflib

    names = [
        f"{verb}_{noun}_{i}"
        for i in range(1250)
        for verb, noun in [
            ("get", "issue"),
            ("list", "issues"),
            ("create", "pull_request"),
            ("delete", "branch"),
            ("update", "label"),
            ("search", "code"),
            ("merge", "pull_request"),
            ("fork", "repo"),
        ]
    ]
    index = NameIndex(names)
    for query in ("create_pul_request_77", "serch_code_1200", "forkrepo_5"):
        started = time.perf_counter()
        found = index.closest(query, 5)
        assert time.perf_counter() - started < 0.5
        assert found[0] == difflib.get_close_matches(query, names, n=1, cutoff=0.5)[0]
        assert len(found) <= 5
