"""MCP names → Python identifiers (contract §4): one rule, deterministic and reversible."""

from __future__ import annotations

import keyword

import pytest

from mcp_code_mode.naming import assign_identifiers, to_identifier


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("get_user", "get_user"),  # already an identifier: unchanged
        ("get-user", "get_user"),
        ("my-server", "my_server"),
        ("files.read", "files_read"),
        ("a b/c:d@e", "a_b_c_d_e"),
        ("readFile", "readFile"),  # case is kept
        ("HTTPServer", "HTTPServer"),
        ("--x--", "__x__"),
        ("1st", "_1st"),  # leading digit gets a `_` prefix
        ("42", "_42"),
        ("9-lives", "_9_lives"),
        ("class", "class_"),  # keyword gets a `_` suffix
        ("import", "import_"),
        ("None", "None_"),
        ("True", "True_"),
        ("Class", "Class"),  # keywords are case-sensitive
        ("match", "match"),  # soft keywords are usable as attribute names
        ("café", "caf_"),  # non-ASCII letters are outside [A-Za-z0-9_]
        ("naïve-tool", "na_ve_tool"),
        ("日本", "__"),  # one `_` per character
        ("tool🙂", "tool_"),
        ("_private", "_private"),
    ],
)
def test_to_identifier(name: str, expected: str) -> None:
    assert to_identifier(name) == expected
    assert expected.isidentifier()
    assert not keyword.iskeyword(expected)


@pytest.mark.parametrize("name", ["", "-", "...", "0", "if", "a-b-c", "🙂🙂", "x y", "def"])
def test_to_identifier_always_gives_a_usable_identifier(name: str) -> None:
    ident = to_identifier(name)
    assert ident.isidentifier()
    assert not keyword.iskeyword(ident)
    assert ident.isascii()


def test_distinct_names_keep_their_plain_identifiers() -> None:
    names = ["read_file", "write-file", "list.dir", "class", "2fa"]
    assert assign_identifiers(names) == {
        "read_file": "read_file",
        "write-file": "write_file",
        "list.dir": "list_dir",
        "class": "class_",
        "2fa": "_2fa",
    }


def test_first_name_in_order_keeps_the_plain_identifier_later_ones_are_numbered() -> None:
    mapping = assign_identifiers(["get-user", "get_user", "get.user", "get user"])
    assert mapping == {
        "get-user": "get_user",
        "get_user": "get_user_2",
        "get.user": "get_user_3",
        "get user": "get_user_4",
    }


def test_order_decides_who_keeps_the_plain_identifier() -> None:
    assert assign_identifiers(["get_user", "get-user"]) == {
        "get_user": "get_user",
        "get-user": "get_user_2",
    }
    assert assign_identifiers(["get-user", "get_user"]) == {
        "get-user": "get_user",
        "get_user": "get_user_2",
    }


def test_keyword_clash_is_numbered_after_the_suffix() -> None:
    assert assign_identifiers(["class", "class_"]) == {"class": "class_", "class_": "class__2"}


def test_numbered_identifier_never_collides_with_a_literal_name() -> None:
    names = ["a-b", "a.b", "a_b_2", "a_b", "a b"]
    mapping = assign_identifiers(names)
    assert mapping["a-b"] == "a_b"
    assert len(set(mapping.values())) == len(names)


def test_mapping_is_deterministic() -> None:
    names = ["x-y", "x_y", "x.y", "class", "1a", "_1a", "y"]
    first = assign_identifiers(names)
    assert all(assign_identifiers(names) == first for _ in range(5))
    assert list(first) == names  # keys keep the given order
    assert assign_identifiers(iter(names)) == first  # any iterable, e.g. a generator


def test_mapping_is_reversible() -> None:
    names = [
        "get-user",
        "get_user",
        "get.user",
        "class",
        "class_",
        "1st",
        "_1st",
        "café",
        "caf_",
        "my-server",
        "my_server",
        "",
        "-",
        "_",
    ]
    mapping = assign_identifiers(names)
    assert set(mapping) == set(names)
    reverse = {ident: name for name, ident in mapping.items()}
    assert len(reverse) == len(names)  # identifiers are unique
    assert all(reverse[mapping[name]] == name for name in names)
    for ident in mapping.values():
        assert ident.isidentifier(), ident
        assert not keyword.iskeyword(ident), ident


def test_repeated_name_maps_once() -> None:
    assert assign_identifiers(["a-b", "a-b", "a_b"]) == {"a-b": "a_b", "a_b": "a_b_2"}


def test_empty_input() -> None:
    assert assign_identifiers([]) == {}
