"""The guest API (contract §4) through a real gateway, real workers and real stdio upstreams."""

from __future__ import annotations

import time

import pytest

from mcp_code_mode.gateway import Gateway

from .support import ROOT, TEST_SERVER, ConfigWriter, server_entry, start_gateway


async def run(gw: Gateway, code: str, **kwargs: object) -> dict:
    return (await gw.execute(code, **kwargs)).to_json()  # type: ignore[arg-type]


async def test_last_expression_is_the_result(any_gateway: Gateway) -> None:
    out = await run(any_gateway, "x = 20\nx + 22")
    assert out == {**out, "ok": True, "result": 42, "error": None}
    assert set(out) == {"ok", "result", "stdout", "logs", "tool_calls", "duration_ms", "error"}


async def test_stdout_logs_and_input(any_gateway: Gateway) -> None:
    out = await run(
        any_gateway, "print('hi', input['n'])\nlog('seen', 3)\ninput['n'] * 2", input={"n": 4}
    )
    assert out["ok"] and out["result"] == 8
    assert out["stdout"] == "hi 4\n"
    assert out["logs"] == ["seen 3"]


async def test_input_given_as_json_string_is_parsed(any_gateway: Gateway) -> None:
    out = await run(any_gateway, "input['a']", input='{"a": [1, 2]}')
    assert out["result"] == [1, 2]
    assert (await run(any_gateway, "input", input="plain"))["result"] == "plain"


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("tools.testsrv.structured(n=3)", {"n": 3, "items": [0, 1, 2]}),
        ("tools.testsrv.echo(text='hey')", "hey"),  # {"result": x} wrapper unwrapped
        ("tools.testsrv.json_text()", {"kind": "json-text", "values": [1, 2, 3]}),
        ("tools.testsrv.plain_text()", "hello from plain text"),
        ("tools.testsrv.two_blocks()", ["first", {"second": 2}]),
        ("call_tool('testsrv', 'structured', {'n': 1})", {"n": 1, "items": [0]}),
        ("await tools.testsrv.echo(text='awaited')", "awaited"),
    ],
)
async def test_results_are_unwrapped(any_gateway: Gateway, code: str, expected: object) -> None:
    out = await run(any_gateway, code)
    assert out["ok"], out["error"]
    assert out["result"] == expected


async def test_dashed_clashing_and_keyword_names(any_gateway: Gateway) -> None:
    out = await run(
        any_gateway,
        "[tools.testsrv.get_user(user_id=1)['via'], tools.testsrv.get_user_2(user_id=2)['via'],"
        " call_tool('testsrv', 'get-user', {'user_id': 3})['via'], tools.testsrv.class_(),"
        " tools.my_data.get_customer(customer_id=1)['id']]",
    )
    assert out["ok"], out["error"]
    assert out["result"] == ["get-user", "get_user", "get-user", "class ok", 1]
    assert [c["tool"] for c in out["tool_calls"]] == [
        "get-user",
        "get_user",
        "get-user",
        "class",
        "get_customer",
    ]
    assert out["tool_calls"][-1]["server"] == "my-data"


async def test_mcp_server_time_upstream(any_gateway: Gateway) -> None:
    out = await run(any_gateway, "r = tools.time.get_current_time(timezone='UTC')\nr['timezone']")
    assert out["ok"], out["error"]
    assert out["result"] == "UTC"


async def test_tool_error_is_catchable(any_gateway: Gateway) -> None:
    code = (
        "try:\n    tools.testsrv.fail(message='boom')\n"
        "except ToolError as e:\n    r = [e.server, e.tool, 'boom' in e.message]\nr"
    )
    out = await run(any_gateway, code)
    assert out["result"] == ["testsrv", "fail", True]
    assert out["tool_calls"] == [
        {**out["tool_calls"][0], "server": "testsrv", "tool": "fail", "ok": False}
    ]


async def test_uncaught_tool_error_ends_the_run(any_gateway: Gateway) -> None:
    out = await run(any_gateway, "print('before')\ntools.testsrv.fail(message='nope')\n1")
    assert not out["ok"] and out["result"] is None
    assert out["error"]["type"] == "TOOL_ERROR"
    assert out["error"]["line"] == 2 and "nope" in out["error"]["message"]
    assert out["stdout"] == "before\n"


async def test_timeout_keeps_what_the_run_produced(any_gateway: Gateway) -> None:
    code = "print('before')\nlog('step', 1)\ntools.testsrv.echo(text='x')\nwhile True:\n    n = 1"
    for _ in range(3):
        out = await run(any_gateway, code, timeout_s=1.0)
        assert not out["ok"] and out["result"] is None
        assert out["error"]["type"] == "TIMEOUT"
        # A starved machine can delay the run's own timer past the host's kill (which says
        # "and was killed"; a killed Deno runner keeps no output): that says nothing about
        # the timer, so try again. The run's own timer must end it at least once.
        if "killed" not in out["error"]["message"]:
            break
    assert "killed" not in out["error"]["message"], out
    assert out["error"]["line"] in (4, 5)
    assert out["stdout"] == "before\n" and out["logs"] == ["step 1"]
    assert [(c["tool"], c["ok"]) for c in out["tool_calls"]] == [("echo", True)]
    assert (await run(any_gateway, "1+1"))["result"] == 2


async def test_a_call_the_time_limit_cut_is_timed_until_then(any_gateway: Gateway) -> None:
    """It was listed with 0 ms, having run until the run's limit (attack 133)."""
    out = await run(any_gateway, "tools.testsrv.sleep(seconds=30)", timeout_s=2.0)
    assert out["error"]["type"] == "TIMEOUT", out
    (call,) = out["tool_calls"]
    assert call["tool"] == "sleep" and not call["ok"] and call["ms"] >= 1000, out


async def test_unknown_tool_names_the_closest(any_gateway: Gateway) -> None:
    out = await run(any_gateway, "tools.testsrv.ecko(text='x')")
    assert out["error"]["type"] == "TOOL_ERROR" and "echo" in out["error"]["message"]
    # At most 5 names (contract §6), then how many and what lists them: every tool was
    # listed, 4 KB of names in one error at 2,000 tools (attack 133).
    assert "in all: get_tool_docs('testsrv') lists them" in out["error"]["message"]
    assert "spawn_helper" not in out["error"]["message"]
    out = await run(any_gateway, "call_tool('notez', 'list_notes')")
    assert out["error"]["type"] == "TOOL_ERROR" and "notes" in out["error"]["message"]
    # discovery's errors are the gateway's, not a tool of the server named (attack 136: the
    # error read `notez.get_tool_docs: unknown server`, as if the server had such a tool)
    code = "try:\n    get_tool_docs('notez')\nexcept ToolError as e:\n    got = [e.server, e.tool, str(e)]\ngot"
    out = await run(any_gateway, code)
    assert out["result"][:2] == ["gateway", "get_tool_docs"], out
    assert out["result"][2].startswith("gateway.get_tool_docs: unknown server 'notez'"), out


async def test_call_tool_with_named_arguments_says_how_to_pass_them(any_gateway: Gateway) -> None:
    """`call_tool('notes', 'get-note', note_id=1)` raised Python's own TypeError, naming the
    guest runtime's class (a new user's first hour, M); it says to pass one dict."""
    out = (await any_gateway.execute("call_tool('notes', 'get-note', note_id=1)")).to_json()
    message = out["error"]["message"]
    assert "call_tool('notes', 'get-note', {'note_id': ...})" in message, out
    assert "GuestRuntime" not in message and out["tool_calls"] == [], out


async def test_a_positional_argument_points_to_the_tools_docs(any_gateway: Gateway) -> None:
    """The refusal named the tool by its MCP name and made up a parameter (`get-note(name=...)`
    for a tool that takes `note_id`: outside attack 117); it names where the parameters are."""
    out = (await any_gateway.execute("tools.notes.get_note(1)")).to_json()
    assert out["error"]["type"] == "RUNTIME_ERROR", out
    assert "keyword arguments only: get_tool_docs('notes', 'get-note')" in out["error"]["message"]
    assert out["tool_calls"] == [], out


async def test_call_tools_is_concurrent_and_ordered(any_gateway: Gateway) -> None:
    code = "call_tools([('testsrv', 'sleep', {'seconds': 0.2}) for _ in range(10)])"
    started = time.perf_counter()
    out = await run(any_gateway, code)
    elapsed = time.perf_counter() - started
    assert out["ok"], out["error"]
    assert out["result"] == [0.2] * 10
    assert len(out["tool_calls"]) == 10
    # One after another, the run would take at least as long as its calls' times added up,
    # however slow the machine (wall time against 2.0 s failed at load 9 on 2 cores).
    spent = sum(call["ms"] for call in out["tool_calls"]) / 1000
    assert spent >= 2.0
    assert elapsed < spent, f"the run took {elapsed:.2f} s, its calls {spent:.2f} s: not concurrent"


async def test_call_tools_failed_slot_is_a_tool_error(any_gateway: Gateway) -> None:
    code = (
        "r = call_tools([('testsrv', 'echo', {'text': 'a'}), ('testsrv', 'fail', {}),"
        " ('notes', 'get-note', {'note_id': 1})])\n"
        "[isinstance(x, ToolError) for x in r] + [r[1].tool, r[2]['id']]"
    )
    out = await run(any_gateway, code)
    assert out["result"] == [False, True, False, "fail", 1]
    assert [c["ok"] for c in out["tool_calls"]] == [True, False, True]


async def test_discovery_from_guest_code(any_gateway: Gateway) -> None:
    out = await run(
        any_gateway,
        "hits = search_tools('current time timezone', limit=3)\n"
        "docs = get_tool_docs('testsrv', 'structured')\n"
        "[hits[0]['server'], 'def structured' in docs, [s['name'] for s in list_servers()]]",
    )
    assert out["ok"], out["error"]
    assert out["result"] == ["time", True, ["testsrv", "notes", "my-data", "time"]]


async def test_declared_queries_bind_arguments_as_python_does(any_gateway: Gateway) -> None:
    """search_tools & co. are built from their declaration (sandbox/guest_api.py): keywords,
    positions and defaults bind as for a def, and a wrong call is a TypeError naming it."""
    out = await run(
        any_gateway,
        "a = search_tools(limit=1, query='current time')\n"
        "b = get_tool_docs(server='testsrv', tool='structured', page=1)\n"
        "errors = []\n"
        "for bad in (lambda: search_tools(), lambda: list_servers(1), "
        "lambda: get_tool_docs('testsrv', server='x'), lambda: search_tools('q', colour=1)):\n"
        "    try:\n"
        "        bad()\n"
        "    except TypeError as exc:\n"
        "        errors.append(str(exc))\n"
        "[len(a), 'def structured' in b, errors, search_tools.__name__]",
    )
    assert out["ok"], out["error"]
    count, docs, errors, name = out["result"]
    assert count == 1 and docs and name == "search_tools"
    assert errors == [
        "search_tools() missing required argument 'query'",
        "list_servers() takes at most 0 arguments (1 given)",
        "get_tool_docs() got multiple values for argument 'server'",
        "search_tools() got an unexpected keyword argument 'colour'",
    ]


async def test_non_json_result_comes_back_as_repr(any_gateway: Gateway) -> None:
    out = await run(any_gateway, "{1, 2}")
    assert out["ok"] and out["result"] == "{1, 2}"
    assert any("not JSON-serialisable" in line for line in out["logs"])


async def test_each_run_starts_fresh(any_gateway: Gateway) -> None:
    await run(any_gateway, "import json\njson.JSONEncoder.leak = 1\nsecret_var = 7")
    out = await run(
        any_gateway, "import json\n[hasattr(json.JSONEncoder, 'leak'), 'secret_var' in dir()]"
    )
    assert out["result"] == [False, False]


@pytest.mark.parametrize(
    "code",
    [
        "import json\njson.dumps = lambda *a, **k: 'forged'",
        "import json\nsetattr(json, 'loads', print)",
        "import functools\nfunctools.partial = list",
        "import collections\ncollections.abc.Mapping = dict",
        "import typing\ntyping.cast = 5",
    ],
)
async def test_guest_code_cannot_change_a_module(any_gateway: Gateway, code: str) -> None:
    """A module an import gives is the one the sandbox's own code uses (json encodes its
    messages): writes to it are refused, on either executor."""
    out = await run(any_gateway, code)
    assert not out["ok"] and "setting attributes of the module" in out["error"]["message"], out
    after = await run(any_gateway, "import json\njson.dumps([1])")
    assert after["result"] == "[1]"


async def test_every_advertised_signature_is_callable(write_config: ConfigWriter) -> None:
    odd = server_entry(str(ROOT / "tests" / "servers" / "odd_names.py"))
    gw = await start_gateway(write_config({"odd": odd, "1st": odd}))
    try:
        signatures = [hit["signature"] for hit in gw.search_tools("ok", limit=20)]
        assert "tools.odd._2fa() -> str" in signatures and "tools._1st.mro() -> str" in signatures
        calls = [signature.split(" -> ")[0] for signature in signatures]
        assert len(calls) == 10
        out = await run(gw, "[" + ", ".join(calls) + "]")
        assert out["ok"], out["error"]
        assert sorted(out["result"]) == sorted(
            f"{name} ok" for name in ("2fa", "format", "start_server", "mro", "_private") * 2
        )
        dynamic = "[getattr(tools.odd, '_2fa')(), hasattr(tools._1st, 'format'), hasattr(tools.odd, '_tools')]"
        assert (await run(gw, dynamic))["result"] == ["2fa ok", True, False]
        # The exemption covers the `tools` object only, not a name rebound to something else.
        rebound = await run(gw, "tools = 'x{}'\ntools.format(1)")
        assert rebound["error"]["type"] == "POLICY_VIOLATION", rebound
        for change in (
            "setattr(tools, 'odd', 'x{}')",
            "setattr(tools.odd, 'format', 'x{}')",
            "delattr(tools, 'odd')",
        ):
            changed = await run(gw, change)
            assert "cannot be changed" in changed["error"]["message"], changed
        closure = await run(gw, "tools.odd._2fa.__closure__")  # not the guest's own function
        assert closure["error"]["type"] == "RUNTIME_ERROR", closure
        assert "not allowed" in closure["error"]["message"]
    finally:
        await gw.aclose()


async def test_tool_call_limit_is_not_catchable(write_config: ConfigWriter) -> None:
    gw = await start_gateway(write_config({"t": server_entry(TEST_SERVER)}), max_tool_calls=2)
    try:
        code = "for i in range(5):\n    try:\n        tools.t.echo(text='x')\n    except BaseException:\n        pass\n'done'"
        out = await run(gw, code)
        assert out["error"]["type"] == "TOOL_CALL_LIMIT"
        assert "MCP_CODE_MAX_TOOL_CALLS" in out["error"]["message"]
        assert len(out["tool_calls"]) == 2
    finally:
        await gw.aclose()


async def test_a_batch_past_the_call_limit_ends_the_run(write_config: ConfigWriter) -> None:
    """Outside attack 84: a batch past the limit was answered with a failure per call (a
    10 MB reply for 360,000 calls, which the worker could not always read); one fatal
    outcome ends the run, whatever the guest catches."""
    gw = await start_gateway(write_config({"t": server_entry(TEST_SERVER)}), max_tool_calls=2)
    try:
        code = (
            "try:\n    call_tools([('t', 'echo', {'text': 'x'})] * 360_000)\n"
            "except BaseException:\n    pass\n'done'"
        )
        # 360,000 calls checked in the worker: 6-10 s of its own time, 30 s and more on a
        # busy machine (a CI run beside three other sessions timed out at the default 30 s)
        out = await run(gw, code, timeout_s=180)
        assert out["error"]["type"] == "TOOL_CALL_LIMIT", out
        assert "MCP_CODE_MAX_TOOL_CALLS" in out["error"]["message"]
        assert out["tool_calls"] == []
    finally:
        await gw.aclose()


async def test_timeout_is_capped_by_max_timeout(write_config: ConfigWriter) -> None:
    gw = await start_gateway(write_config({"t": server_entry(TEST_SERVER)}), max_timeout_s=1.0)
    try:
        started = time.perf_counter()
        out = await run(gw, "while True:\n    pass", timeout_s=100)
        assert out["error"]["type"] == "TIMEOUT"
        assert time.perf_counter() - started < 3.0
    finally:
        await gw.aclose()


async def test_a_misspelt_argument_is_named_with_the_closest_one(any_gateway: Gateway) -> None:
    """The upstream's pydantic text and a URL came back for `stat=` where the tool takes
    `status` (outside attack 136); the gateway has the schema and says what to change."""
    out = await run(any_gateway, "tools.testsrv.echo(txt='x')")
    message = out["error"]["message"]
    assert out["error"]["type"] == "TOOL_ERROR", out
    assert message.startswith("ToolError: testsrv.echo: no argument 'txt' (did you mean 'text'?)")
    assert "The upstream said:" in message, message
    good = await run(any_gateway, "tools.testsrv.fail(message='as asked')")
    assert "no argument" not in good["error"]["message"], good  # its own failure, unchanged
