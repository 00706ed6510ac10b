"""Answers that reach another instance than the one whose run asked (contract §8, §9).

A 2026-07-28 client answers an approval question with a new `tools/call` carrying the
question's `requestState`. Behind a balancer that request may reach another instance than
the one whose run is waiting: its MCP SDK, holding a key of its own, answered "Invalid or
expired requestState", and the waiting run was declined when its question timed out,
though the person had said yes (outside attack 128: 2 of 4 approvals lost through the
shipped HAProxy config).

With MCP_CODE_HTTP_STATE_KEY set (a secret the instances share and clients never see),
every instance seals question states under it (`state_security`), and the state of each
question names the instance that asked it (`question_state`: its
MCP_CODE_HTTP_INSTANCE_URL, by default the address `serve` bound). An instance that gets
an answer naming another hands the request on (`AnswerRouter`), with the headers a peer
reads, and streams back the reply, for as long as a run and its question may take, and no
longer than its client stays. The state is sealed (AES-GCM) under a key clients do not
hold, so a client can neither read nor choose the address (a key derived from the bearer
token, which every client holds, let a client seal any URL: attack 130); a request is
handed on once at most, and the instance that gets it checks it as any other. When the
instance that asked cannot be reached, this one answers: the run has ended (§3 result).

What it does not do: route answers without MCP_CODE_HTTP_STATE_KEY (each instance then
seals with a key of its own), or find an instance by any other means than the URL it gave.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from typing import TYPE_CHECKING, Any

import httpx
from mcp.server.request_state import RequestStateSecurity

if TYPE_CHECKING:
    from starlette.types import Receive, Scope, Send

__all__ = ["AUDIENCE", "AnswerRouter", "question_state", "state_security"]

AUDIENCE = "mcp-code-mode"  # who the sealed states are for (the SDK's audience claim)
_FORWARDED = b"mcp-code-mode-forwarded"  # on a request handed on: never handed on again
# What a peer reads of a request (the protocol's `mcp-*` headers too); nothing else is sent.
_SENT_HEADERS = frozenset(
    {b"host", b"authorization", b"content-type", b"accept", b"origin", b"user-agent"}
)
_KEPT_HEADERS = frozenset({b"content-type", b"cache-control", b"www-authenticate"})
_CONNECT_S = 5.0
_STATE_SLACK_S = 60.0  # past a question's wait: its late answer is told the run has ended


def state_security(key: str | None, answer_within_s: float) -> RequestStateSecurity:
    """How question states are sealed: under `key` (MCP_CODE_HTTP_STATE_KEY), alike on
    every instance; without one, under a key of this process. A state lives as long as its
    question may wait for an answer (`answer_within_s`): the SDK's 600 s refused an answer
    given in time under a longer MCP_CODE_APPROVAL_TIMEOUT_S (outside attack 146)."""
    ttl = answer_within_s + _STATE_SLACK_S
    if key is None:
        return RequestStateSecurity.ephemeral(ttl=ttl)
    return RequestStateSecurity(keys=[key], audience=AUDIENCE, ttl=ttl)


def question_state(origin: str) -> str:
    """A new question's state (sealed by the SDK before the client sees it): random, and
    naming the instance that asks (`origin`, its URL; "" over stdio)."""
    token = secrets.token_urlsafe(18)
    return f"{token} {origin}" if origin else token


class AnswerRouter:
    """Hands an answer to the instance whose run asked the question (see module)."""

    def __init__(self, origin: str, security: RequestStateSecurity, limit_s: float) -> None:
        self.origin = origin
        self._codec = security.codec
        self._limit_s = limit_s  # the longest a run and its question may take

    def elsewhere(self, scope: Scope, body: bytes) -> str | None:
        """The URL of the instance that asked the question this request answers, when it
        is another one; None for anything else (the MCP app judges it)."""
        if any(name.lower() == _FORWARDED for name, _ in scope["headers"]):
            return None
        state = _answered_state(body)
        if state is None:
            return None
        try:
            inner = json.loads(self._codec.unseal(state))["s"]
        except Exception:  # not ours, or not valid: the MCP app refuses it as it would
            return None
        url = inner.partition(" ")[2] if isinstance(inner, str) else ""
        return url if url.startswith(("http://", "https://")) and url != self.origin else None

    async def forward(
        self, url: str, scope: Scope, body: bytes, receive: Receive, send: Send
    ) -> bool:
        """Send the request to `url` and stream back the reply; False when nothing was sent
        to the client (that instance could not be reached in time). It ends when the client
        goes away, and after the longest a run and its question may take."""
        started: list[bool] = []  # whether the reply has begun: then it is the client's
        work = asyncio.ensure_future(self._forward(url, scope, body, send, started))
        gone = asyncio.ensure_future(receive())  # the body was read: next is a disconnect
        try:
            await asyncio.wait({work, gone}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (work, gone):
                task.cancel()
            await asyncio.gather(work, gone, return_exceptions=True)
        return bool(started) or (gone.done() and not gone.cancelled())

    async def _forward(
        self, url: str, scope: Scope, body: bytes, send: Send, started: list[bool]
    ) -> None:
        sent = [
            (name, value)
            for name, value in scope["headers"]
            if name.lower() in _SENT_HEADERS or name.lower().startswith(b"mcp-")
        ]
        sent.append((_FORWARDED, b"1"))
        timeout = httpx.Timeout(self._limit_s, connect=_CONNECT_S)
        try:
            async with (
                asyncio.timeout(self._limit_s),
                httpx.AsyncClient(timeout=timeout) as http,
                http.stream("POST", url, headers=sent, content=body) as reply,
            ):
                kept = [(n, v) for n, v in reply.headers.raw if n.lower() in _KEPT_HEADERS]
                started.append(True)
                start = {"type": "http.response.start", "status": reply.status_code}
                await send({**start, "headers": kept})
                async for chunk in reply.aiter_bytes():  # decoded: no encoding sent on
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
        except (httpx.HTTPError, TimeoutError):  # unreachable, or gone or too slow mid-reply
            pass
        if started:
            await send({"type": "http.response.body", "body": b"", "more_body": False})


def _answered_state(body: bytes) -> str | None:
    """The `requestState` of a single `tools/call`, if the body is one that carries it."""
    if b"requestState" not in body:  # most requests: not parsed again
        return None
    try:
        message: Any = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(message, dict) or message.get("method") != "tools/call":
        return None
    params = message.get("params")
    state = params.get("requestState") if isinstance(params, dict) else None
    return state if isinstance(state, str) and state else None
