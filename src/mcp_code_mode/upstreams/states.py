"""The states of one upstream connection, the moves between them, and what each tells a person.

    connecting ─→ ok ─→ lost ─→ reconnecting ─→ ok
         └──────→ error ←───────────┘  └──────→ error ─→ reconnecting

`connection.UpstreamConnection` makes the moves, on what the transport and the protocol
report (contract §6, §7); its docstring says what triggers each.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["UpstreamState", "check_move", "slow_reason", "state_reason"]

UpstreamState = Literal["connecting", "ok", "lost", "reconnecting", "error"]
_TRANSITIONS: dict[UpstreamState, frozenset[UpstreamState]] = {
    "connecting": frozenset({"ok", "error"}),
    "ok": frozenset({"lost"}),
    "lost": frozenset({"reconnecting"}),
    "reconnecting": frozenset({"ok", "error"}),
    "error": frozenset({"reconnecting"}),
}


def check_move(name: str, current: UpstreamState, new: UpstreamState) -> None:
    """Raises RuntimeError when `current → new` is not a move of the diagram."""
    if new not in _TRANSITIONS[current]:
        raise RuntimeError(f"upstream {name}: no transition {current} -> {new}")


def state_reason(state: UpstreamState, reason: str | None, *, started: bool, slow: bool) -> str:
    """Why an upstream in `state` is not `ok`, for `list_servers`: `reason` (the last one
    recorded) where there is one, else what the state means. `started`: whether a
    connection attempt was ever made; `slow`: the attempt in flight is past its start-up
    timeout."""
    if state == "connecting" and not started:
        return "not started yet: it starts when code first uses it"
    if state == "connecting" and slow:
        return reason or "still starting"
    if state == "connecting":
        return "still starting: it has not answered yet"
    reason = reason or f"upstream is {state}"
    return f"reconnecting; {reason}" if state == "reconnecting" else reason


def slow_reason(last_failure: str | None, startup_s: float, ceiling_s: float) -> str:
    """Why an attempt past `startup_s` is still waited for. On a retry the last attempt's
    failure stays in front: "still waiting (up to 50s)" alone, shown after a first attempt
    had failed at 50 s, read as if that deadline had not passed (attack 132)."""
    waiting = (
        f"no answer within {startup_s:g}s yet; still waiting while it works (up to {ceiling_s:g}s)"
    )
    return waiting if last_failure is None else f"{last_failure}; trying again: {waiting}"
