"""Answers that reach another instance than the one whose run asked (contract §8, §9).

A 2026-07-28 client answers an approval question with a new `tools/call` carrying the
question's `requestState`. Behind a balancer that request may reach another instance than
the one whose run is waiting: its MCP SDK, holding a key of its own, answered "Invalid or
expired requestState", and the waiting run was declined when its question timed out,
though the person had said yes (outside attack 128: 2 of 4 approvals lost through the
shipped HAProxy config).

With MCP_CODE_HTTP_TOKEN set, every instance seals question states under one key derived
from the token (`state_security`), and the state of each question names the instance that
asked it (`question_state`: its MCP_CODE_HTTP_INSTANCE_URL, by default the address `serve`
bound). An instance that gets an answer naming another hands the request on as it came
(`AnswerRouter`) and streams back the reply. The state is sealed (AES-GCM), so a client
can neither read nor choose the address; a request is handed on once at most. When the
instance that asked cannot be reached, this one answers: the run has ended (§3 result).

What it does not do: route answers between instances that do not share the token (nothing
is shared to unseal with), or find an instance by any other means than the URL it gave.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from typing import TYPE_CHECKING, Any

import httpx
from mcp.server.request_state import RequestStateSecurity

if TYPE_CHECKING:
    from starlette.types import Scope, Send

__all__ = ["AUDIENCE", "AnswerRouter", "question_state", "state_security"]

AUDIENCE = "mcp-code-mode"  # who the sealed states are for (the SDK's audience claim)
_KEY_LABEL = b"mcp-code-mode/request-state/v1\x00"
_FORWARDED = b"mcp-code-mode-forwarded"  # on a request handed on: never handed on again
_HOP_BY_HOP = frozenset(
    {b"content-length", b"connection", b"keep-alive", b"transfer-encoding", b"te", b"trailer"}
    | {b"upgrade", b"proxy-connection"}
)
_CONNECT_S = 5.0


def state_security(token: str | None) -> RequestStateSecurity | None:
    """How question states are sealed: under a key every instance sharing `token` derives
    alike; None without a token (the SDK's key of this process)."""
    if token is None:
        return None
    secret = hashlib.sha256(_KEY_LABEL + token.encode()).hexdigest()
    return RequestStateSecurity(keys=[secret], audience=AUDIENCE)


def question_state(origin: str) -> str:
    """A new question's state (sealed by the SDK before the client sees it): random, and
    naming the instance that asks (`origin`, its URL; "" over stdio)."""
    token = secrets.token_urlsafe(18)
    return f"{token} {origin}" if origin else token


class AnswerRouter:
    """Hands an answer to the instance whose run asked the question (see module)."""

    def __init__(self, origin: str, security: RequestStateSecurity) -> None:
        self.origin = origin
        self._codec = security.codec

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

    async def forward(self, url: str, scope: Scope, body: bytes, send: Send) -> bool:
        """Send the request to `url` as it came (its `Host` too, which the instances' common
        Host check passed here) and stream back the reply; False when that instance could
        not be reached (nothing was sent to the client)."""
        headers = [(n, v) for n, v in scope["headers"] if n.lower() not in _HOP_BY_HOP]
        headers.append((_FORWARDED, b"1"))
        timeout = httpx.Timeout(None, connect=_CONNECT_S)  # a run may take its limit
        async with httpx.AsyncClient(timeout=timeout) as http:
            request = http.build_request("POST", url, headers=headers, content=body)
            try:
                reply = await http.send(request, stream=True)
            except httpx.HTTPError:
                return False
            try:
                await _stream(reply, send)
            finally:
                await reply.aclose()
        return True


async def _stream(reply: httpx.Response, send: Send) -> None:
    kept = [(n, v) for n, v in reply.headers.raw if n.lower() not in _HOP_BY_HOP]
    await send({"type": "http.response.start", "status": reply.status_code, "headers": kept})
    try:
        async for chunk in reply.aiter_raw():
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
    except httpx.HTTPError:  # that instance went away mid-reply: the client sees it end
        pass
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
