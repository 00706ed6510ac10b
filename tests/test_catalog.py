"""`Catalog` on plain `mcp.types.Tool` lists: identifiers, lookup errors, ranked search, docs."""

from __future__ import annotations

import re
from typing import Any

import pytest
from mcp import types

from mcp_code_mode.catalog import Catalog, SearchHit
from mcp_code_mode.errors import UnknownToolError
from mcp_code_mode.ranking import Ranking, tokenize

STR = {"type": "string"}
INT = {"type": "integer"}


def tool(
    name: str,
    description: str | None = None,
    properties: dict[str, Any] | None = None,
    required: tuple[str, ...] = (),
    output: dict[str, Any] | None = None,
) -> types.Tool:
    return types.Tool(
        name=name,
        description=description,
        input_schema={"type": "object", "properties": properties or {}, "required": list(required)},
        output_schema=output,
    )


TOOLS: dict[str, list[types.Tool]] = {
    "files": [
        tool("readFile", "Read the complete contents of a text file.", {"path": STR}, ("path",)),
        tool(
            "write_file",
            "Create a new file or overwrite an existing one with new content.",
            {"path": STR, "content": STR},
            ("path", "content"),
        ),
        tool("list-directory", "List the entries of a folder.", {"path": STR}, ("path",)),
        tool(
            "move_file",
            "Move or rename a file.",
            {"source": STR, "destination": STR},
            ("source", "destination"),
        ),
        tool(
            "search_files",
            "Find files whose names match a glob pattern.",
            {"pattern": STR, "root": STR},
            ("pattern",),
        ),
        tool(
            "get_file_info", "Size, permissions and timestamps of a path.", {"path": STR}, ("path",)
        ),
    ],
    "git": [
        tool("git_status", "Show the working tree status.", {"repo_path": STR}, ("repo_path",)),
        tool(
            "git_log",
            "Show the commit history of a repository.",
            {"repo_path": STR, "max_count": INT},
            ("repo_path",),
        ),
        tool(
            "git_diff",
            "Show changes between commits or the working tree.",
            {"repo_path": STR, "target": STR},
            ("repo_path",),
        ),
        tool(
            "git_commit",
            "Record staged changes with a message.",
            {"repo_path": STR, "message": STR},
            ("repo_path", "message"),
        ),
        tool(
            "git_branch",
            "List or create branches.",
            {"repo_path": STR, "name": STR},
            ("repo_path",),
        ),
    ],
    "issues": [
        tool(
            "create_issue",
            "Open a new issue in the tracker.",
            {"title": STR, "body": STR, "labels": {"type": "array", "items": STR}},
            ("title",),
        ),
        tool("get_issue", "Fetch one issue by number.", {"number": INT}, ("number",)),
        tool(
            "list_issues",
            "List open issues, optionally filtered by label.",
            {"label": STR, "state": {"enum": ["open", "closed"]}},
        ),
        tool(
            "add_comment", "Comment on an issue.", {"number": INT, "body": STR}, ("number", "body")
        ),
        tool("close_issue", "Close an issue as done.", {"number": INT}, ("number",)),
    ],
    "calendar": [
        tool(
            "list_events",
            "Upcoming events between two dates.",
            {"start": STR, "end": STR},
            ("start", "end"),
        ),
        tool(
            "create_event",
            "Schedule a meeting.",
            {"title": STR, "start": STR, "end": STR, "attendees": {"type": "array", "items": STR}},
            ("title", "start", "end"),
        ),
        tool("delete_event", "Cancel an event.", {"event_id": STR}, ("event_id",)),
        tool(
            "find_free_slot",
            "Find a free slot of the given length.",
            {"duration_minutes": INT},
            ("duration_minutes",),
        ),
    ],
    "mail": [
        tool(
            "send_email",
            "Send an email message.",
            {"to": STR, "subject": STR, "body": STR},
            ("to", "subject", "body"),
        ),
        tool(
            "search_inbox",
            "Search received messages by sender or text.",
            {"query": STR, "sender": STR},
            ("query",),
        ),
        tool("read_message", "Read one message by id.", {"message_id": STR}, ("message_id",)),
        tool("list_folders", "Mailbox folders.", {}),
        tool(
            "mark_read",
            "Mark messages as read.",
            {"message_ids": {"type": "array", "items": STR}},
            ("message_ids",),
        ),
    ],
}

DESCRIPTIONS = {
    "files": "Local files on disk",
    "git": "Version control for repositories",
    "issues": "Bug tracker",
    "calendar": "Meetings and appointments",
    "mail": "Electronic correspondence",
}


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return Catalog(TOOLS, DESCRIPTIONS)


def names(hits: list[SearchHit]) -> list[tuple[str, str]]:
    return [(h.server, h.tool) for h in hits]


def suggestions(message: str) -> list[str]:
    found = re.search(r"did you mean (.*?)\?\)", message)
    return re.findall(r"'([^']*)'", found.group(1)) if found else []


# --- identifiers ---------------------------------------------------------------------------

CLASHING = Catalog(
    {
        "my-server": [
            tool("get-user", "a"),
            tool("get_user", "b"),
            tool("class", "c"),
            tool("2fa", "d"),
        ],
        "my_server": [tool("x", "y")],
        "import": [tool("list", "z")],
    }
)


def test_identifiers_for_dashed_clashing_and_keyword_names() -> None:
    assert CLASHING.server_ids == {
        "my-server": "my_server",
        "my_server": "my_server_2",
        "import": "import_",
    }
    assert [(e.tool, e.tool_id) for e in CLASHING.tools_of("my-server")] == [
        ("get-user", "get_user"),
        ("get_user", "get_user_2"),
        ("class", "class_"),
        ("2fa", "_2fa"),
    ]
    assert CLASHING.get("my-server", "get_user").tool_id == "get_user_2"
    assert CLASHING.get("my_server", "x").server_id == "my_server_2"


def test_guest_index_maps_identifiers_to_original_names() -> None:
    assert CLASHING.guest_index() == {
        "my_server": {
            "name": "my-server",
            "tools": {
                "get_user": "get-user",
                "get_user_2": "get_user",
                "class_": "class",
                "_2fa": "2fa",
            },
        },
        "my_server_2": {"name": "my_server", "tools": {"x": "x"}},
        "import_": {"name": "import", "tools": {"list": "list"}},
    }


def test_guest_index_of_the_realistic_catalog(catalog: Catalog) -> None:
    index = catalog.guest_index()
    assert list(index) == ["files", "git", "issues", "calendar", "mail"]
    assert index["files"]["name"] == "files"
    assert index["files"]["tools"]["readFile"] == "readFile"
    assert index["files"]["tools"]["list_directory"] == "list-directory"
    assert sum(len(s["tools"]) for s in index.values()) == len(catalog.entries) == 25
    for ident, server in index.items():
        assert ident.isidentifier()
        assert all(t.isidentifier() for t in server["tools"])


def test_entries_keep_config_and_tools_list_order(catalog: Catalog) -> None:
    assert catalog.servers == list(TOOLS)
    assert [(e.server, e.tool) for e in catalog.entries] == [
        (server, t.name) for server, tools in TOOLS.items() for t in tools
    ]


def test_tool_identifiers_are_per_server() -> None:
    c = Catalog({"a": [tool("get-x")], "b": [tool("get_x"), tool("get-x")]})
    assert c.get("a", "get-x").tool_id == "get_x"
    assert c.get("b", "get_x").tool_id == "get_x"
    assert c.get("b", "get-x").tool_id == "get_x_2"


def test_empty_catalog() -> None:
    c = Catalog({})
    assert c.entries == ()
    assert c.search("anything") == []
    assert c.guest_index() == {}
    with pytest.raises(UnknownToolError, match="none"):
        c.get("x", "y")


def test_a_name_with_its_case_ranks_first() -> None:
    """`get-user` and `Get-User` both match `Get-User` in any case; the one spelt as asked
    comes first, whatever the catalog order (attack 133)."""
    c = Catalog({"s": [tool("get-user", "One user."), tool("Get-User", "The same.")]})
    assert names(c.search("Get-User"))[0] == ("s", "Get-User")
    assert names(c.search("get-user"))[0] == ("s", "get-user")
    assert names(c.search("GET-USER")) == [("s", "get-user"), ("s", "Get-User")]


def test_server_without_tools() -> None:
    c = Catalog({"empty": [], "one": [tool("ping", "Ping.")]})
    assert c.tools_of("empty") == []
    assert c.guest_index()["empty"] == {"name": "empty", "tools": {}}
    assert names(c.search("ping")) == [("one", "ping")]
    assert c.docs("empty").startswith("# tools.empty")


# --- lookup errors -------------------------------------------------------------------------


def test_get_returns_the_entry(catalog: Catalog) -> None:
    entry = catalog.get("files", "list-directory")
    assert (entry.server, entry.tool, entry.server_id, entry.tool_id) == (
        "files",
        "list-directory",
        "files",
        "list_directory",
    )
    assert entry.schema is TOOLS["files"][2]


def test_unknown_server_lists_servers_and_suggests(catalog: Catalog) -> None:
    with pytest.raises(UnknownToolError) as info:
        catalog.get("calender", "list_events")
    message = str(info.value)
    assert "'calender'" in message
    assert suggestions(message)[0] == "calendar"
    for server in TOOLS:
        assert server in message


def test_unknown_tool_lists_tools_and_suggests(catalog: Catalog) -> None:
    with pytest.raises(UnknownToolError) as info:
        catalog.get("git", "gitlog")
    message = str(info.value)
    assert "'gitlog'" in message
    assert "'git'" in message
    assert suggestions(message)[0] == "git_log"
    for t in TOOLS["git"]:
        assert t.name in message


def test_unknown_tool_with_nothing_close_says_how_to_list_the_tools(catalog: Catalog) -> None:
    with pytest.raises(UnknownToolError) as info:
        catalog.get("files", "zzzzqqqq")
    assert suggestions(str(info.value)) == []
    assert "it has 6 tools: get_tool_docs('files') lists them" in str(info.value)
    assert "readFile" not in str(info.value)  # more than 5: none is named unless close


def test_unknown_tool_suggests_the_camel_case_name(catalog: Catalog) -> None:
    with pytest.raises(UnknownToolError) as info:
        catalog.get("files", "read_file")
    assert suggestions(str(info.value))[0] == "readFile"


def test_unknown_names_raise_everywhere(catalog: Catalog) -> None:
    with pytest.raises(UnknownToolError):
        catalog.tools_of("nope")
    with pytest.raises(UnknownToolError):
        catalog.docs("nope")
    with pytest.raises(UnknownToolError):
        catalog.docs("files", "nope")
    with pytest.raises(LookupError):  # UnknownToolError is a LookupError too
        catalog.get("files", "nope")


@pytest.mark.parametrize(
    ("server", "name", "original"),
    [
        ("my-server", "get_user_2", ("my-server", "get_user")),
        ("my-server", "class_", ("my-server", "class")),
        ("my_server_2", "x", ("my_server", "x")),
    ],
)
def test_identifiers_are_accepted_or_never_suggested(
    server: str, name: str, original: tuple[str, str]
) -> None:
    try:
        entry = CLASHING.get(server, name)
    except UnknownToolError as exc:
        offered = suggestions(str(exc))
        assert name not in offered and server not in offered  # not the name just rejected
    else:
        assert (entry.server, entry.tool) == original


# --- search --------------------------------------------------------------------------------

LABELLED_QUERIES = [
    # exact tool names rank first, in any spelling the catalog knows
    pytest.param("git_log", ("git", "git_log"), id="exact-name"),
    pytest.param("list-directory", ("files", "list-directory"), id="exact-dashed-name"),
    pytest.param("list_directory", ("files", "list-directory"), id="exact-identifier"),
    pytest.param("readFile", ("files", "readFile"), id="exact-camel"),
    pytest.param("READFILE", ("files", "readFile"), id="exact-any-case"),
    pytest.param("files.readFile", ("files", "readFile"), id="exact-server-dot-tool"),
    pytest.param("  mark_read ", ("mail", "mark_read"), id="exact-padded"),
    pytest.param("list_folders", ("mail", "list_folders"), id="exact-beats-other-list-tools"),
    # names split on camelCase, `_` and `-`
    pytest.param("read file", ("files", "readFile"), id="camel-split"),
    pytest.param("list directory", ("files", "list-directory"), id="dash-split"),
    pytest.param("send email", ("mail", "send_email"), id="underscore-split"),
    pytest.param("free slot", ("calendar", "find_free_slot"), id="underscore-split-2"),
    # descriptions
    pytest.param("commit history", ("git", "git_log"), id="description"),
    pytest.param("rename", ("files", "move_file"), id="description-word"),
    pytest.param("glob pattern", ("files", "search_files"), id="description-2"),
    pytest.param("schedule a meeting", ("calendar", "create_event"), id="description-3"),
    pytest.param("permissions timestamps", ("files", "get_file_info"), id="description-plural"),
    # parameter names
    pytest.param("attendees", ("calendar", "create_event"), id="param"),
    pytest.param("duration", ("calendar", "find_free_slot"), id="param-part"),
    pytest.param("destination", ("files", "move_file"), id="param-2"),
    pytest.param("subject", ("mail", "send_email"), id="param-3"),
    # stems, and words of one meaning (search_terms.CONCEPTS)
    pytest.param("scheduling meetings", ("calendar", "create_event"), id="stem"),
    pytest.param("remove a meeting", ("calendar", "delete_event"), id="concept-two-words"),
    pytest.param("open a ticket", ("issues", "create_issue"), id="concept-verb-noun"),
    pytest.param("erase calendar entry 42", ("calendar", "delete_event"), id="digits-ignored"),
    pytest.param("folder entries", ("files", "list-directory"), id="concept-own-word"),
]


@pytest.mark.parametrize(("query", "best"), LABELLED_QUERIES)
def test_labelled_queries(catalog: Catalog, query: str, best: tuple[str, str]) -> None:
    hits = catalog.search(query)
    assert hits, query
    assert (hits[0].server, hits[0].tool) == best


@pytest.mark.parametrize(
    ("query", "server"),
    [
        ("electronic correspondence", "mail"),  # server description only
        ("appointments", "calendar"),
        ("version control", "git"),
        ("bug tracker", "issues"),
        ("mail", "mail"),  # server name
    ],
)
def test_server_name_and_description_match(catalog: Catalog, query: str, server: str) -> None:
    hits = catalog.search(query, limit=4)
    assert len(hits) >= 2
    assert {h.server for h in hits} == {server}


def test_exact_match_ranks_first_even_against_strong_text_matches(catalog: Catalog) -> None:
    # "read_message" also matches "read" in readFile / mark_read: the exact name still wins
    hits = catalog.search("read_message", limit=10)
    assert names(hits)[0] == ("mail", "read_message")
    assert hits[0].score > hits[1].score


def test_exact_match_across_servers() -> None:
    c = Catalog(
        {
            "a": [tool("search", "Search A.")],
            "b": [tool("search", "Search B.")],
            "c": [tool("find", "search")],
        }
    )
    assert names(c.search("search"))[:2] == [("a", "search"), ("b", "search")]


def test_exact_original_name_beats_an_identifier_match() -> None:
    assert names(CLASHING.search("get_user"))[0] == ("my-server", "get_user")


@pytest.mark.parametrize("query", ["xyzzy qwerty", "", "   ", "the of and", "!!!"])
def test_no_known_words_gives_nothing(catalog: Catalog, query: str) -> None:
    assert catalog.search(query) == []


@pytest.mark.parametrize("limit", [1, 2, 3, 7, 10])
def test_limit_is_respected(catalog: Catalog, limit: int) -> None:
    hits = catalog.search("list file", limit=limit)
    assert len(hits) == limit
    assert hits == catalog.search("list file", limit=25)[:limit]


def test_limit_above_the_matches_gives_every_match(catalog: Catalog) -> None:
    hits = catalog.search("file", limit=25)
    assert 0 < len(hits) < 25
    assert {s for s, _ in names(hits)} == {"files"}


def test_default_limit_is_five(catalog: Catalog) -> None:
    assert len(catalog.search("list")) == 5


@pytest.mark.parametrize("limit", [0, -1])
def test_non_positive_limit_gives_nothing(catalog: Catalog, limit: int) -> None:
    assert catalog.search("git_log", limit=limit) == []


def test_server_filter_ranks_within_one_server_before_the_limit(catalog: Catalog) -> None:
    everywhere = names(catalog.search("list", limit=25))
    mail_only = [hit for hit in everywhere if hit[0] == "mail"]
    assert mail_only and everywhere[0][0] != "mail"  # a limit of 1 before filtering finds none
    assert names(catalog.search("list", limit=1, server="mail")) == mail_only[:1]
    assert names(catalog.search("list", limit=25, server="mail")) == mail_only
    assert names(catalog.search("git_log", server="git"))[0] == ("git", "git_log")
    assert catalog.search("git_log", server="files") == []  # the exact match is another server's


def test_server_filter_with_an_unknown_server_is_an_error(catalog: Catalog) -> None:
    with pytest.raises(UnknownToolError, match=r"unknown server 'gti'.*did you mean 'git'"):
        catalog.search("log", server="gti")


def test_hits_are_ranked_and_unique(catalog: Catalog) -> None:
    hits = catalog.search("file path", limit=25)
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert len(set(names(hits))) == len(hits)
    assert all(s > 0 for s in scores)


def test_hit_json_shape(catalog: Catalog) -> None:
    hit, *others = catalog.search("list-directory")
    assert hit.to_json() == {
        "server": "files",
        "tool": "list-directory",
        "signature": "tools.files.list_directory(path: str) -> Any",
        "description": "List the entries of a folder.",
        "score": 1.0,  # contract §3: in [0, 1]; a tool named exactly like the query tops it
    }
    assert all(0.0 <= other.to_json()["score"] <= 1.0 for other in others)


def test_search_is_deterministic(catalog: Catalog) -> None:
    first = names(catalog.search("issue", limit=10))
    assert all(names(catalog.search("issue", limit=10)) == first for _ in range(3))
    assert {s for s, _ in first} == {"issues"}


def test_rebuilt_catalog_ranks_the_same(catalog: Catalog) -> None:
    again = Catalog(TOOLS, DESCRIPTIONS)
    for query in ("read file", "commit", "meeting", "message"):
        assert names(again.search(query, limit=10)) == names(catalog.search(query, limit=10))


# --- docs ----------------------------------------------------------------------------------


def test_server_docs_hold_every_tool_stub(catalog: Catalog) -> None:
    for server, tools in TOOLS.items():
        docs = catalog.docs(server)
        assert docs.startswith(f"# tools.{server}  (server '{server}')\n# {DESCRIPTIONS[server]}")
        for entry in catalog.tools_of(server):
            stub = catalog.formatter.stub(entry.source)
            assert stub in docs
            assert catalog.docs(server, entry.tool) == stub
        assert docs.count("\ndef ") == len(tools)


def test_tool_docs_use_identifiers_and_name_the_mcp_names() -> None:
    docs = CLASHING.docs("my-server", "get_user")
    assert docs.startswith("def get_user_2() -> Any:")
    assert "tools.my_server.get_user_2(...)  (MCP name: my-server/get_user)" in docs


def test_docs_also_take_the_identifiers_of_the_signatures() -> None:
    # Original names win: "get_user" is a tool of its own, whose identifier is get_user_2.
    assert CLASHING.docs("my-server", "get_user_2") == CLASHING.docs("my-server", "get_user")
    assert CLASHING.docs("my-server", "class_") == CLASHING.docs("my-server", "class")
    assert CLASHING.docs("my_server") != CLASHING.docs("my-server")  # an original name wins
    assert CLASHING.docs("my_server_2", "x") == CLASHING.docs("my_server", "x")
    assert CLASHING.docs("import_") == CLASHING.docs("import")
    with pytest.raises(UnknownToolError, match="has no tool 'get_user_3'"):
        CLASHING.docs("my-server", "get_user_3")


def test_server_docs_without_a_description() -> None:
    docs = CLASHING.docs("my_server")
    assert docs.splitlines()[0] == "# tools.my_server_2  (server 'my_server')"
    assert not docs.splitlines()[1].startswith("#")


def test_concepts_are_what_finds_synonyms() -> None:
    def best(catalog: Catalog, query: str) -> list[tuple[str, str]]:
        return [(h.server, h.tool) for h in catalog.search(query)][:1]

    plain = Catalog(TOOLS, DESCRIPTIONS, ranking=Ranking(concepts=False, semantic_weight=0))
    folded = Catalog(TOOLS, DESCRIPTIONS, ranking=Ranking(semantic_weight=0))
    meaning = Catalog(TOOLS, DESCRIPTIONS, ranking=Ranking(concepts=False))
    assert best(plain, "remove a meeting") != [("calendar", "delete_event")]
    assert best(folded, "remove a meeting") == [("calendar", "delete_event")]
    assert best(meaning, "remove a meeting") == [("calendar", "delete_event")]  # embeddings
    assert tokenize("Removing tickets") == ["~delet", "~issu"]


def test_no_word_belongs_to_two_concepts() -> None:
    from mcp_code_mode.search_terms import CONCEPTS

    seen: dict[str, str] = {}
    for head, words in CONCEPTS.items():
        for word in (head, *words):
            assert word not in seen, f"{word!r} is in {seen[word]!r} and {head!r}"
            seen[word] = head


def test_unstemmed_ranking_folds_plurals_before_concepts() -> None:
    ranking = Ranking(stem=False)
    assert ranking.tokenize("coordinates") == ranking.tokenize("coordinate") == ["~geocode"]
    assert ranking.tokenize("news") == ["~news"]


# --- bounds at scale -----------------------------------------------------------------------


def numbered_tools(count: int, prefix: str = "tool") -> list[types.Tool]:
    return [
        tool(f"{prefix}_{i}_{word}", f"Do {word} {i}.")
        for i, word in enumerate(["alpha", "beta", "gamma", "delta"] * (count // 4))
    ]


@pytest.fixture(scope="module")
def wide() -> Catalog:
    """700 servers, one of 10,000 tools."""
    servers = {f"server_{i}": [tool("ping", "Ping.")] for i in range(700)}
    return Catalog({"huge": numbered_tools(10_000), **servers})


def test_an_unknown_tool_of_a_huge_server_names_five_at_most(wide: Catalog) -> None:
    with pytest.raises(UnknownToolError) as info:
        wide.get("huge", "tool_4320_alpah")
    message = str(info.value)
    assert len(message) < 1000
    offered = suggestions(message)
    assert offered[0] == "tool_4320_alpha" and len(offered) <= 5
    assert "it has 10,000 tools: get_tool_docs('huge') lists them" in message


def test_an_unknown_server_among_many_names_five_at_most(wide: Catalog) -> None:
    with pytest.raises(UnknownToolError) as info:
        wide.get("server_42x", "ping")
    message = str(info.value)
    assert len(message) < 600
    assert "server_42" in suggestions(message) and len(suggestions(message)) <= 5
    assert "701 servers: list_servers() names them" in message


def test_a_huge_unknown_name_is_clipped_and_costs_nothing(wide: Catalog) -> None:
    with pytest.raises(UnknownToolError) as info:
        wide.get("huge", "x" * 10_000_000)
    assert len(str(info.value)) < 600
    with pytest.raises(UnknownToolError) as info:
        wide.docs("s" * 10_000_000)
    assert len(str(info.value)) < 600


def test_search_limit_is_capped() -> None:
    c = Catalog({"big": numbered_tools(400)}, ranking=Ranking(semantic_weight=0))
    assert len(c.search("alpha beta gamma delta", limit=10**9)) == 100
