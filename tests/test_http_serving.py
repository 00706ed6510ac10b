"""Serving over HTTP (contract §9), through real processes: `mcp-code-mode serve --transport
http` instances, real upstreams, and HAProxy (Debian package `haproxy`) in front of two.

The HAProxy test renders deploy/haproxy.cfg with the test's ports, so it checks the shipped
settings (health checks on /readyz, retries of what a draining instance refused).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastmcp import Client
from mcp.server.request_state import RequestStateSecurity

from mcp_code_mode.errors import ConfigError
from mcp_code_mode.http_serving import check_exposure
from mcp_code_mode.sandbox.protocol import decode_cost

from .support import NOTES_SERVER, QUIET, ROOT, live_processes, make_settings, server_entry

TOKEN = "team-token-7f3a9c"
STATE_KEY = "instances-only-state-key-0123456789abcdef"
SLEEP_3S = "import asyncio\nawait asyncio.sleep(3)\n'done'"
MCP_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


@pytest.mark.parametrize(
    ("host", "token", "refused"),
    [
        ("127.0.0.1", None, False),
        ("::1", None, False),
        ("localhost", None, False),
        ("127.0.0.2", None, False),
        ("0.0.0.0", None, True),
        ("::", None, True),
        ("10.1.2.3", None, True),
        ("gateway.example.com", None, True),
        ("0.0.0.0", TOKEN, False),
        ("127.0.0.1", "sek\u20ac", True),  # no header carries it: nobody could connect
        ("127.0.0.1", "sek ret", True),
    ],
)
def test_non_loopback_host_needs_a_token(host: str, token: str | None, refused: bool) -> None:
    settings = make_settings(http_token=token)
    if refused:
        with pytest.raises(ConfigError, match="MCP_CODE_HTTP_TOKEN"):
            check_exposure(settings, host)
    else:
        check_exposure(settings, host)


def test_the_token_never_shows_in_settings() -> None:
    settings = make_settings(http_token=TOKEN)
    assert TOKEN not in repr(settings) and TOKEN not in str(settings.model_dump())


@pytest.mark.slow
def test_serve_refuses_an_exposed_host_without_a_token(tmp_path: Path) -> None:
    started = time.monotonic()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcp_code_mode.cli",
            "serve",
            "--transport",
            "http",
            "--host",
            "0.0.0.0",
            "--port",
            "0",
            "--config",
            str(_config(tmp_path)),
        ],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "MCP_CODE_HTTP_TOKEN" in proc.stderr
    assert "serving" not in proc.stderr  # refused before binding or starting anything
    assert time.monotonic() - started < 30


# ---------------------------------------------------------------- one instance


@dataclass
class Instance:
    proc: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.base}/mcp"


def _config(tmp_path: Path, upstream: str = NOTES_SERVER) -> Path:
    path = tmp_path / "mcp_servers.json"
    path.write_text(json.dumps({"servers": {"notes": server_entry(upstream)}}), encoding="utf-8")
    return path


def _env(**settings: str) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        **QUIET,
        "MCP_CODE_POOL_SIZE": "1",
        **settings,
    }


@asynccontextmanager
async def serving(config: Path, log: Path, **settings: str) -> AsyncIterator[Instance]:
    """One `mcp-code-mode serve --transport http --port 0`; stopped (SIGKILL) if still running."""
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "mcp_code_mode.cli",
                "serve",
                "--transport",
                "http",
                "--port",
                "0",
                "--config",
                str(config),
            ],
            cwd=config.parent,
            env=_env(**settings),
            stdout=sink,
            stderr=sink,
        )
    try:
        yield Instance(proc, await _bound_port(proc, log), log)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)


async def _bound_port(proc: subprocess.Popen[bytes], log: Path) -> int:
    for _ in range(600):
        found = re.search(r"serving http://[^ ]+:(\d+)/mcp", log.read_text(errors="replace"))
        if found:
            return int(found.group(1))
        assert proc.poll() is None, log.read_text(errors="replace")
        await asyncio.sleep(0.05)
    raise AssertionError("the instance did not bind within 30 s")


async def wait_ready(instance: Instance, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    async with httpx.AsyncClient() as http:
        while time.monotonic() < deadline:
            if (await http.get(f"{instance.base}/readyz")).status_code == 200:
                return
            assert instance.proc.poll() is None, instance.log.read_text(errors="replace")
            await asyncio.sleep(0.1)
    raise AssertionError("the instance did not get ready")


def _call(code: str, request_id: int = 1) -> dict[str, Any]:
    arguments = {"name": "execute_code", "arguments": {"code": code}}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": arguments}


def _initialize() -> dict[str, Any]:
    params = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    }
    return {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}


@pytest.mark.slow
async def test_probes_token_and_host_origin_checks(tmp_path: Path) -> None:
    slow_upstream = tmp_path / "slow_notes.py"  # starts 8 s late: /readyz must say so
    slow_upstream.write_text(
        f"import runpy, time\ntime.sleep(8)\nrunpy.run_path({NOTES_SERVER!r}, run_name='__main__')\n"
    )
    config = _config(tmp_path, str(slow_upstream))
    settings = {"MCP_CODE_HTTP_TOKEN": TOKEN, "MCP_CODE_HTTP_ALLOWED_HOSTS": "mcp.example.com"}
    async with serving(config, tmp_path / "serve.log", **settings) as instance:
        async with httpx.AsyncClient(timeout=30) as http:
            health = await http.get(f"{instance.base}/healthz")
            ready = await http.get(f"{instance.base}/readyz")
            assert (health.status_code, health.text) == (200, "ok")
            assert (ready.status_code, ready.text) == (503, "starting")
            # A session opens before the upstreams have started (attack 138: a first
            # `initialize` waited 49 s for 10,000 tools), and a call made meanwhile waits
            # for the upstream it needs rather than failing.
            began = time.monotonic()
            async with Client(instance.url, auth=TOKEN, timeout=30) as client:
                opened_s = time.monotonic() - began
                unready = await http.get(f"{instance.base}/readyz")
                early = await client.call_tool(
                    "execute_code", {"code": "len(tools.notes.list_notes())"}
                )
            assert opened_s < 7 and (unready.status_code, unready.text) == (503, "starting")
            assert early.structured_content is not None and early.structured_content["ok"]
            for _ in range(50):  # ready once the upstream has answered and the index is built
                ready = await http.get(f"{instance.base}/readyz")
                if ready.status_code == 200:
                    break
                await asyncio.sleep(0.2)
            assert (ready.status_code, ready.text) == (200, "ready")

            body = _initialize()
            missing = await http.post(instance.url, json=body, headers=MCP_HEADERS)
            wrong = await http.post(
                instance.url, json=body, headers={**MCP_HEADERS, "authorization": "Bearer nope"}
            )
            assert (missing.status_code, wrong.status_code) == (401, 401)
            assert TOKEN not in missing.text + wrong.text

            good = {**MCP_HEADERS, "authorization": f"Bearer {TOKEN}"}
            foreign_host = await http.post(
                instance.url, json=body, headers={**good, "host": "evil.example.com"}
            )
            foreign_origin = await http.post(
                instance.url, json=body, headers={**good, "origin": "http://evil.example.com"}
            )
            assert foreign_host.status_code == 421
            assert foreign_origin.status_code == 403
            listed = await http.post(
                instance.url, json=body, headers={**good, "host": "mcp.example.com"}
            )
            assert listed.status_code == 200 and "mcp-code-mode" in listed.text
        probes = health.text + ready.text
        assert TOKEN not in probes and "notes" not in probes and "example" not in probes


@pytest.mark.slow
async def test_request_bodies_and_requests_in_flight_are_bounded(tmp_path: Path) -> None:
    """Outside attack 107: a stateful session kept its 3.5 MB `initialize` for 30 minutes
    (140 sessions: 1 GB), 200 calls in flight held 2.1 GB, and while draining the gate read
    4 MB bodies of requests without the token. A new session's request may carry 16 KB,
    requests starting work are capped (503 beyond; what answers a running call still
    passes), and without the token nothing is read: the MCP app answers 401."""
    settings = {"MCP_CODE_HTTP_TOKEN": TOKEN, "MCP_CODE_HTTP_MAX_REQUESTS": "2"}
    async with serving(_config(tmp_path), tmp_path / "serve.log", **settings) as instance:
        await wait_ready(instance)
        good = {**MCP_HEADERS, "authorization": f"Bearer {TOKEN}"}
        big = _initialize()
        big["params"]["capabilities"] = {"experimental": {"x": {"y": "z" * 100_000}}}
        async with httpx.AsyncClient(timeout=30) as http:
            anonymous = await http.post(instance.url, json=big, headers=MCP_HEADERS)
            too_big = await http.post(instance.url, json=big, headers=good)
            opened = await http.post(instance.url, json=_initialize(), headers=good)
            assert (anonymous.status_code, too_big.status_code) == (401, 413)
            assert opened.status_code == 200, opened.text
            session = {**good, "mcp-session-id": opened.headers["mcp-session-id"]}
            again = await http.post(instance.url, json=big, headers=session)  # attack 109
            assert again.status_code == 413
            note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            assert (await http.post(instance.url, json=note, headers=session)).status_code == 202
            wide = _call("len(input)", 5)
            wide["params"]["arguments"]["input"] = "x" * 100_000  # a call may carry 4 MB
            assert '"result":100000' in (
                await http.post(instance.url, json=wide, headers=session)
            ).text.replace(" ", "")
            lists = _call("len(input)", 8)  # 3.2 MB of `[], ` parse to some 70 MB (attack 113)
            lists["params"]["arguments"]["input"] = [[]] * 800_000
            swollen = await http.post(instance.url, json=lists, headers=session)
            # a tool call refused unread is answered with its result object, as over stdio
            # (contract §7; outside attack 140: an MCPError over HTTP)
            assert swollen.status_code == 200 and swollen.json()["id"] == 8, swollen.text
            failed = swollen.json()["result"]
            assert failed["isError"] and failed["structuredContent"]["ok"] is False, failed
            assert failed["structuredContent"]["error"]["type"] == "EXECUTOR_ERROR", failed
            huge = _call("len(input)", 9)
            huge["params"]["arguments"]["input"] = "x" * 5_000_000
            over = await http.post(instance.url, json=huge, headers=session)
            assert over.status_code == 200 and over.json()["id"] == 9, over.text
            message = over.json()["result"]["structuredContent"]["error"]["message"]
            assert "over 4 MB" in message, message
            ping = {"jsonrpc": "2.0", "id": 7, "method": "ping"}  # one id: the SDK answers one
            held = [
                asyncio.ensure_future(http.post(instance.url, json=ping, headers=session))
                for _ in range(8)
            ]
            await asyncio.sleep(1.0)
            beside = await http.post(instance.url, json=_call("1+1", 6), headers=session)
            unanswered = sum(not h.done() for h in held)
            for h in held:
                h.cancel()
        # attack 113: requests held open that start no work take no place at the cap
        assert unanswered >= 2 and beside.status_code == 200, (unanswered, beside.text)
        async with Client(instance.url, auth=TOKEN, timeout=30) as client:  # no session id
            sized = await client.call_tool(
                "execute_code", {"code": "len(input)", "input": "x" * 100_000}
            )
        assert (
            sized.structured_content is not None and sized.structured_content["result"] == 100_000
        )
        async with httpx.AsyncClient(timeout=30) as http:
            calls = [
                asyncio.ensure_future(
                    http.post(instance.url, json=_call(SLEEP_3S, i), headers=session)
                )
                for i in (1, 2)
            ]
            await asyncio.sleep(1.0)
            third = await http.post(instance.url, json=_call("1+1", 3), headers=session)
            ping = {"jsonrpc": "2.0", "id": 9, "method": "ping"}  # answers a call may wait for
            pinged = await http.post(instance.url, json=ping, headers=session)
            smuggled = _call("1+1", 10)  # only a 2026-07-28 call answers with requestState
            smuggled["params"]["requestState"] = "opaque"
            posing = await http.post(instance.url, json=smuggled, headers=session)
            with pytest.raises(Exception) as refused:  # what a client shows (attack 138)
                async with Client(instance.url, auth=TOKEN, timeout=30) as late:
                    await late.call_tool("execute_code", {"code": "1+1"})
            answered = await asyncio.gather(*calls)
            after = await http.post(instance.url, json=_call("1+1", 4), headers=session)
        assert third.status_code == 503 and third.headers.get("retry-after") == "1"
        assert "MCP_CODE_HTTP_MAX_REQUESTS" in third.json()["error"]["message"]
        assert "too many requests in flight" in str(refused.value), repr(refused.value)
        assert pinged.status_code == 200, pinged.text
        assert posing.status_code == 503  # this session's calls answer nothing: new work
        assert [r.status_code for r in answered] == [200, 200]
        assert all("done" in r.text for r in answered)
        assert after.status_code == 200 and '"ok":true' in after.text.replace(" ", "")


@pytest.mark.slow
async def test_what_requests_in_flight_hold_is_bounded_and_held_pings_hold_no_drain(
    tmp_path: Path,
) -> None:
    """Outside attack 115: a request reusing the JSON-RPC id of another in its session is
    never answered by the MCP SDK and keeps its parsed body (100 held pings of 64 MB as
    objects took 7 GB), and held pings kept a drain to its limit. What all bodies in flight
    take as objects is bounded (`MCP_CODE_HTTP_MAX_HELD_MB`, 503 beyond), and a drain
    waits for requests that may start work only."""
    padded, items = _call(SLEEP_3S, 1), 1_000  # `[1],` to 72-200 KB short of 8 MB as objects
    while decode_cost(_sent(padded, [[1]] * items)) < (8 << 20) - 200_000:
        items += 1_000
    small = {"jsonrpc": "2.0", "id": 3, "method": "ping"}  # 10 KB costed 330 KB: passes
    medium = {"jsonrpc": "2.0", "id": 5, "method": "ping"}  # 20 KB: does not
    async with serving(
        _config(tmp_path), tmp_path / "serve.log", MCP_CODE_HTTP_MAX_HELD_MB="8"
    ) as instance:
        await wait_ready(instance)
        async with httpx.AsyncClient(timeout=30) as http:
            opened = await http.post(instance.url, json=_initialize(), headers=MCP_HEADERS)
            session = {**MCP_HEADERS, "mcp-session-id": opened.headers["mcp-session-id"]}
            note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            await http.post(instance.url, json=note, headers=session)

            async def post(request: dict[str, Any], padding: list[Any]) -> httpx.Response:
                return await http.post(
                    instance.url, content=_sent(request, padding), headers=session
                )

            first = asyncio.ensure_future(post(padded, [[1]] * items))
            await asyncio.sleep(1.0)
            over = await post({**padded, "id": 2}, [[1]] * items)
            small_while = await post(small, [[]] * 3_500)
            medium_while = await post(medium, [[]] * 7_000)
            done = await first
            after = await post({**padded, "id": 4}, [[1]] * items)
            ping = {"jsonrpc": "2.0", "id": 7, "method": "ping"}  # one id: the SDK answers one
            held = [
                asyncio.ensure_future(http.post(instance.url, json=ping, headers=session))
                for _ in range(8)
            ]
            await asyncio.sleep(1.0)
            unanswered = sum(not h.done() for h in held)
            instance.proc.send_signal(signal.SIGTERM)
            started = time.monotonic()
            code = await asyncio.to_thread(instance.proc.wait, 60)
            drained_s = time.monotonic() - started
            for h in held:
                h.cancel()
    assert over.status_code == 503
    assert over.json()["error"]["message"].startswith("too much request data in flight")
    assert (medium_while.status_code, small_while.status_code) == (503, 200)  # attack 116
    assert done.status_code == 200 and after.status_code == 200
    assert unanswered >= 2 and code == 0
    assert drained_s < 20, drained_s  # the drain's limit is 430 s


@pytest.mark.slow
async def test_sigterm_lets_a_running_call_finish(tmp_path: Path) -> None:
    async with serving(_config(tmp_path), tmp_path / "serve.log") as instance:
        await wait_ready(instance)
        async with Client(instance.url, timeout=30) as client, httpx.AsyncClient() as http:
            await client.list_tools()
            run = asyncio.create_task(client.call_tool("execute_code", {"code": SLEEP_3S}))
            await asyncio.sleep(1.0)
            helpers = _descendants(instance.proc.pid)
            instance.proc.send_signal(signal.SIGTERM)
            await asyncio.sleep(0.3)
            ready = await http.get(f"{instance.base}/readyz")
            health = await http.get(f"{instance.base}/healthz")
            refused = await http.post(instance.url, json=_call("1+1"), headers=MCP_HEADERS)
            result = await run
        assert result.structured_content is not None
        assert result.structured_content["result"] == "done"
        assert (ready.status_code, ready.text) == (503, "draining")
        assert health.status_code == 200
        assert refused.status_code == 503
        assert await asyncio.to_thread(instance.proc.wait, 15) == 0
    assert helpers, "the gateway had no upstream or worker processes"
    _assert_gone(helpers)


@pytest.mark.slow
async def test_a_drain_waits_for_a_run_awaiting_an_answer(tmp_path: Path) -> None:
    """Outside attack 109: a 2026-07-28 client answers an approval with a new call, so the
    run waiting for it holds no request: the drain ended under it, and the answer was
    refused as new work. The drain waits for the run; the answer is not new work."""
    asked = asyncio.Event()

    async def approve(message: str, response_type: Any, params: Any, context: Any) -> Any:
        asked.set()
        await asyncio.sleep(2.0)
        return {"approve": True}

    async with serving(_config(tmp_path), tmp_path / "serve.log") as instance:
        await wait_ready(instance)
        async with Client(instance.url, elicitation_handler=approve, timeout=60) as client:
            code = "tools.notes.add_note(text='t')\ntools.notes.delete_note(note_id=1)"
            run = asyncio.create_task(
                client.call_tool("execute_code", {"code": code}, raise_on_error=False)
            )
            await asyncio.wait_for(asked.wait(), 30)
            instance.proc.send_signal(signal.SIGTERM)
            result = await run
        assert await asyncio.to_thread(instance.proc.wait, 30) == 0
    out = result.structured_content
    assert out is not None and out["ok"] and out["result"] is True, out


def _sealed(key: str, inner: str) -> str:
    """A request state as an MCP SDK holding `key` seals one (its claims envelope)."""
    claims = {"v": 1, "iat": time.time(), "exp": time.time() + 600, "s": inner}
    claims |= {"m": "tools/call", "t": "execute_code", "aud": "mcp-code-mode"}
    return RequestStateSecurity(keys=[key]).codec.seal(json.dumps(claims).encode())


def _sent(request: dict[str, Any], padding: list[Any]) -> bytes:
    """`request`'s body as sent, with `padding` in its params (a call's input, else `pad`)."""
    params = request.setdefault("params", {})
    if "arguments" in params:
        params = {**params, "arguments": {**params["arguments"], "input": padding}}
    else:
        params = {**params, "pad": padding}
    return json.dumps({**request, "params": params}, separators=(",", ":")).encode()


def _modern_call(code: str, request_id: int, capabilities: Any, **extra: Any) -> dict[str, Any]:
    """A 2026-07-28 `tools/call` of `execute_code` declaring `capabilities`."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "replay", "version": "1"},
    }
    params = {"name": "execute_code", "arguments": {"code": code}, "_meta": meta, **extra}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


@pytest.mark.slow
async def test_a_replayed_question_state_never_runs_the_code_again(tmp_path: Path) -> None:
    """Outside attack 113: a question's sealed state stays valid for minutes and may be sent
    again; sent by a request that declares no elicitation, the run was started anew (past
    the gate's cap and the drain, and unasked under `auto`, after a person had declined)."""
    code = "print('RAN')\ntools.notes.delete_note(note_id=1)\n'done'"
    headers = {**MCP_HEADERS, "mcp-protocol-version": "2026-07-28"}
    headers |= {"mcp-method": "tools/call", "mcp-name": "execute_code"}
    async with serving(_config(tmp_path), tmp_path / "serve.log") as instance:
        await wait_ready(instance)
        async with httpx.AsyncClient(timeout=60) as http:
            asked = await http.post(
                instance.url, json=_modern_call(code, 1, {"elicitation": {}}), headers=headers
            )
            state = asked.json()["result"]["requestState"]
            declined = {"approval": {"action": "decline"}}
            answer = _modern_call(code, 2, {"elicitation": {}}, requestState=state)
            answer["params"]["inputResponses"] = declined
            answered = await http.post(instance.url, json=answer, headers=headers)
            replays = [
                await http.post(
                    instance.url, json=_modern_call(code, 3 + i, caps, **extra), headers=headers
                )
                for i, caps in enumerate([{}, {"elicitation": None}, {"sampling": {}}])
                for extra in ({"requestState": state}, {"inputResponses": declined})
            ]
    assert "RAN" in answered.text and "declined" in answered.text, answered.text
    for replay in replays:
        assert replay.status_code == 200, replay.text
        assert "RAN" not in replay.text and "has ended" in replay.text, replay.text


@pytest.mark.slow
async def test_an_answer_reaching_another_instance_goes_to_the_one_that_asked(
    tmp_path: Path,
) -> None:
    """Outside attack 128: behind a balancer a 2026-07-28 client's answer may reach another
    instance, whose SDK refused the state ("Invalid or expired requestState") while the run
    that asked was declined at its timeout. The answer now goes to the instance that asked;
    when that one is gone, the reply is the §3 result of a run that has ended. A state
    sealed under any other key than the instances' own is never handed on (one derived
    from the bearer token, which every client holds, let a client seal any URL: attack
    130)."""
    code = "print('RAN')\ntools.notes.delete_note(note_id=1)\n'done'"
    headers = {**MCP_HEADERS, "mcp-protocol-version": "2026-07-28"}
    headers |= {"mcp-method": "tools/call", "mcp-name": "execute_code"}
    headers["authorization"] = f"Bearer {TOKEN}"
    accepted = {"approval": {"action": "accept", "content": {"approve": True}}}
    shared = {"MCP_CODE_HTTP_STATELESS": "true", "MCP_CODE_HTTP_TOKEN": TOKEN}
    shared["MCP_CODE_HTTP_STATE_KEY"] = STATE_KEY
    config = _config(tmp_path)
    knocked: list[bool] = []

    async def knock(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        knocked.append(True)
        writer.close()

    listener = await asyncio.start_server(knock, "127.0.0.1", 0)
    elsewhere = f"http://127.0.0.1:{listener.sockets[0].getsockname()[1]}/mcp"
    async with (
        serving(config, tmp_path / "one.log", **shared) as one,
        serving(config, tmp_path / "two.log", **shared) as two,
        httpx.AsyncClient(timeout=60) as http,
    ):
        await wait_ready(one)
        await wait_ready(two)

        async def ask_then_answer(asker: Instance, answerer: Instance) -> httpx.Response:
            call = _modern_call(code, 1, {"elicitation": {}})
            asked = await http.post(asker.url, json=call, headers=headers)
            answer = _modern_call(code, 2, {"elicitation": {}}, inputResponses=accepted)
            answer["params"]["requestState"] = asked.json()["result"]["requestState"]
            if asker is answerer:
                asker.proc.kill()  # gone before its answer comes
                await asyncio.to_thread(asker.proc.wait, 10)
                answerer = two
            return await http.post(answerer.url, json=answer, headers=headers)

        answered = [await ask_then_answer(one, two), await ask_then_answer(two, one)]
        refused = []
        # the key once derived from the token, which any client could derive too
        derived = hashlib.sha256(b"mcp-code-mode/request-state/v1\x00" + TOKEN.encode())
        for key in (derived.hexdigest(), TOKEN * 4):
            forged = _modern_call(code, 3, {"elicitation": {}}, inputResponses=accepted)
            forged["params"]["requestState"] = _sealed(key, f"forged {elsewhere}")
            refused.append(await http.post(two.url, json=forged, headers=headers))
        late = await ask_then_answer(one, one)
    listener.close()
    for reply in refused:
        assert reply.status_code == 400 and "requestState" in reply.text, reply.text
    assert not knocked
    for reply in answered:
        assert reply.status_code == 200, reply.text
        out = reply.json()["result"]["structuredContent"]
        assert out["ok"] and out["result"] == "done" and out["stdout"] == "RAN\n", out
    assert late.status_code == 200, late.text
    ended = late.json()["result"]
    assert ended["isError"] and "has ended" in ended["structuredContent"]["error"]["message"]


@pytest.mark.slow
async def test_sigterm_while_starting_stops_at_once(tmp_path: Path) -> None:
    slow_upstream = tmp_path / "slow_notes.py"
    slow_upstream.write_text(
        f"import runpy, time\ntime.sleep(20)\nrunpy.run_path({NOTES_SERVER!r}, run_name='__main__')\n"
    )
    async with serving(_config(tmp_path, str(slow_upstream)), tmp_path / "serve.log") as instance:
        await asyncio.sleep(0.5)
        helpers = _descendants(instance.proc.pid)
        started = time.monotonic()
        instance.proc.send_signal(signal.SIGTERM)
        assert await asyncio.to_thread(instance.proc.wait, 30) == 0
        # not after the upstream's 20 s start (well under it, on a busy machine too)
        assert time.monotonic() - started < 12
    _assert_gone(helpers)


def _descendants(pid: int) -> set[int]:
    table = live_processes()
    found, frontier = set(), {pid}
    while frontier:
        frontier = {p for p, (parent, _, _) in table.items() if parent in frontier} - found
        found |= frontier
    return found


def _assert_gone(pids: set[int]) -> None:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        alive = pids & set(live_processes())
        if not alive:
            return
        time.sleep(0.1)
    raise AssertionError(f"still running after the drain: {sorted(alive)}")


# ---------------------------------------------------------------- behind HAProxy


def haproxy_binary() -> str:
    """HAProxy's path; installs the Debian package when missing and possible, else skips."""
    search = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
    found = shutil.which("haproxy", path=search)
    if found:
        return found
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        pytest.skip("HAProxy is not installed and cannot be here (root and apt-get are needed)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-q", "haproxy"]
    proc = subprocess.run(install, env=env, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:  # an old package list: update it once and retry
        subprocess.run(["apt-get", "update", "-q"], env=env, capture_output=True, timeout=600)
        proc = subprocess.run(install, env=env, capture_output=True, text=True, timeout=600)
    found = shutil.which("haproxy", path=search)
    if found is None:
        pytest.skip(f"could not install HAProxy (apt-get install haproxy): {proc.stderr[-300:]}")
    return found


def render_haproxy(port: int, backends: dict[str, int], stats_socket: Path) -> str:
    """deploy/haproxy.cfg with the test's ports, run as this user, with a stats socket."""
    lines: list[str] = []
    for line in (ROOT / "deploy" / "haproxy.cfg").read_text().splitlines():
        word = line.split()[0] if line.split() else ""
        if word in ("user", "group", "chroot"):
            continue
        if word == "server":  # the shipped servers give way to ours, in the same place
            if not any(kept.lstrip().startswith("server ") for kept in lines):
                lines += [f"    server {name} 127.0.0.1:{p}" for name, p in backends.items()]
            continue
        lines.append(f"    bind 127.0.0.1:{port}" if word == "bind" else line)
        if line.strip() == "global":
            lines.append(f"    stats socket {stats_socket} mode 600 level admin")
    return "\n".join(lines) + "\n"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def haproxy(binary: str, config: Path, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as sink:
        proc = subprocess.Popen([binary, "-db", "-f", str(config)], stdout=sink, stderr=sink)
    try:
        yield proc
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def stats(stats_socket: Path) -> dict[str, dict[str, str]]:
    """HAProxy's `show stat` rows of the backend's servers, by server name."""
    with socket.socket(socket.AF_UNIX) as sock:
        sock.connect(str(stats_socket))
        sock.sendall(b"show stat\n")
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    header, *rows = data.decode().strip().splitlines()
    names = header.lstrip("# ").split(",")
    table = [dict(zip(names, row.split(","), strict=False)) for row in rows]
    return {r["svname"]: r for r in table if r["svname"] not in ("FRONTEND", "BACKEND")}


async def _wait_all_up(stats_socket: Path, names: set[str]) -> None:
    for _ in range(300):
        if stats_socket.exists():
            rows = stats(stats_socket)
            if all(rows.get(n, {}).get("status") == "UP" for n in names):
                return
        await asyncio.sleep(0.1)
    raise AssertionError(f"HAProxy did not see every instance up: {stats(stats_socket)}")


async def _own_result(url: str, k: int) -> tuple[int, Any]:
    code = "[input['k'], input['k'] * input['k'], len(tools.notes.list_notes()) > 0]"
    async with Client(url, timeout=60) as client:
        result = await client.call_tool("execute_code", {"code": code, "input": {"k": k}})
    return k, (result.structured_content or {}).get("result")


@pytest.mark.slow
@pytest.mark.timeout(300)  # may install HAProxy first
async def test_haproxy_in_front_of_two_stateless_instances(
    tmp_path: Path, stats_socket: Path
) -> None:
    binary = haproxy_binary()
    config = _config(tmp_path)
    stateless = {"MCP_CODE_HTTP_STATELESS": "true", "MCP_CODE_POOL_SIZE": "2"}
    async with (
        serving(config, tmp_path / "mcp1.log", **stateless) as one,
        serving(config, tmp_path / "mcp2.log", **stateless) as two,
    ):
        instances = {"mcp1": one, "mcp2": two}
        lb_port = _free_port()
        rendered = tmp_path / "haproxy.cfg"
        rendered.write_text(
            render_haproxy(lb_port, {n: i.port for n, i in instances.items()}, stats_socket)
        )
        with haproxy(binary, rendered, tmp_path / "haproxy.log") as balancer:
            await _wait_all_up(stats_socket, set(instances))
            url = f"http://127.0.0.1:{lb_port}/mcp"

            # Clients through the balancer get their own results; both instances serve.
            results = await asyncio.gather(*(_own_result(url, k) for k in range(16)))
            assert all(value == [k, k * k, True] for k, value in results), results
            log = (tmp_path / "haproxy.log").read_text(errors="replace")
            served = set(re.findall(r"mcp_code_mode/(mcp\d)", log))
            assert served == {"mcp1", "mcp2"}, log[-2000:]

            # SIGTERM to the instance running a 3 s call: the call still returns, and
            # calls made meanwhile are answered (by the other one, or resent to it).
            async with Client(url, timeout=30) as client:
                await client.list_tools()
                run = asyncio.create_task(client.call_tool("execute_code", {"code": SLEEP_3S}))
                busy = await _instance_running_a_call(stats_socket)
                await asyncio.sleep(0.8)
                instances[busy].proc.send_signal(signal.SIGTERM)
                during = await asyncio.gather(*(_own_result(url, k) for k in range(100, 106)))
                result = await run
            assert result.structured_content is not None
            assert result.structured_content["result"] == "done"
            assert all(value == [k, k * k, True] for k, value in during), during
            assert await asyncio.to_thread(instances[busy].proc.wait, 15) == 0
            other = next(i for n, i in instances.items() if n != busy)
            assert other.proc.poll() is None
            assert balancer.poll() is None


async def _instance_running_a_call(stats_socket: Path) -> str:
    """The backend server with a session in flight (HAProxy's `scur`)."""
    for _ in range(100):
        busy = [name for name, row in stats(stats_socket).items() if int(row["scur"] or 0) > 0]
        if len(busy) == 1:
            return busy[0]
        await asyncio.sleep(0.02)
    raise AssertionError("no single instance was running the call")
