"""A tool call's arguments as the worker sends them: refused unsent when the host would
refuse them, and a batch cut into pieces the host parses one at a time.

Runs inside the worker process. Stdlib only. The arguments here are `protocol.exact_json`
copies: measuring and encoding them runs no guest code.
"""

from __future__ import annotations

import itertools
import json
import math
from typing import Any

from mcp_code_mode.sandbox.protocol import (
    BATCH_BUDGET,
    BATCH_PIECE_BYTES,
    DECODE_BUDGET,
    decode_cost,
    decode_parts,
    encode,
    json_bytes_at_least,
    over_limit,
)

__all__ = [
    "MAX_INT_DIGITS",
    "exact_json",
    "pieces",
    "refusal",
    "refused_spec",
    "unsendable_number",
]

MAX_INT_DIGITS = 640
"""The longest integer guest code may send a tool (a 2,126-bit number; MCP servers read
JSON numbers as 64-bit integers or doubles): refused unsent by the worker, whose longer
integers the host would parse in quadratic time (14,000 of 4,299 digits kept the offload
thread 2 s while other clients' work waited: outside attack 86). Results are not bound."""


def exact_json(value: Any, max_bytes: int | None = None) -> Any:
    """`value` rebuilt from the built-in types alone, each read through its own type's
    methods: what the size and integer checks walk is then what `encode` writes (a guest
    `int` subclass's `bit_length`, a `dict` subclass's `values` or a `list` subclass's
    `__iter__` told the checks one thing and the encoder another: outside attack 87).
    Anything else is kept for `encode` to refuse. ValueError: deeper than `_EXACT_DEPTH`,
    or more values than `max_bytes` (each is a byte of JSON at least; a list repeated by
    reference is copied once per place, so the copy stops there)."""
    try:
        return _exact(value, 0, [max_bytes])
    except _TooMany:
        raise ValueError(
            f"the arguments are at least {(max_bytes or 0) + 1:,} bytes of JSON, over the "
            f"{max_bytes:,} allowed (MCP_CODE_MAX_CALL_BYTES)"
        ) from None


class _TooMany(Exception):
    """More values than bytes allowed."""


def _exact(value: Any, depth: int, left: list[int | None]) -> Any:
    budget = left[0]
    if budget is not None:
        if budget <= 0:
            raise _TooMany
        left[0] = budget - 1
    kind = type(value)
    if depth > _EXACT_DEPTH:
        raise ValueError(f"the value is nested deeper than {_EXACT_DEPTH} levels")
    if value is None or kind is bool:
        return value
    if issubclass(kind, str):
        return str.__str__(value)
    if issubclass(kind, int):
        return int.__int__(value)
    if issubclass(kind, float):
        return float.__float__(value)
    if issubclass(kind, dict):
        pairs = dict.items(value)
        return {_exact(k, depth, left): _exact(v, depth + 1, left) for k, v in pairs}
    if issubclass(kind, list | tuple):
        items = list.__iter__(value) if issubclass(kind, list) else tuple.__iter__(value)
        return [_exact(item, depth + 1, left) for item in items]
    return value


_EXACT_DEPTH = 200  # as deep as the host sends a value on (`encodable.MAX_DEPTH`)


def unsendable_number(value: Any) -> str | None:
    """Why `value` cannot be sent to the host: it holds an integer of more than
    `MAX_INT_DIGITS` digits (the host would parse it in quadratic time), or a NaN or an
    infinity (JSON has none: the MCP client sent them as `null`, outside attack 117). Call
    it on the `exact_json` copy `over_limit` passed: its nodes are bounded by the limit."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, int) and item.bit_length() > _MAX_INT_BITS:
            return f"integers of more than {MAX_INT_DIGITS} digits cannot be sent to a tool"
        if isinstance(item, float) and not math.isfinite(item):
            return f"{item!r} cannot be sent: JSON has no NaN or infinity"
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return None


_MAX_INT_BITS = 2126  # 10**640 > 2**2126: a longer int may have more than 640 digits


_WIDEST = 6
"""The most UTF-8 bytes of JSON a byte of `json_bytes_at_least` stands for (a control
character written `\\u0001`; only dictionary keys that are not strings go wider)."""


def refusal(args: Any, limit: int) -> str | None:
    """Why the host would refuse `args` (MCP_CODE_MAX_CALL_BYTES, `MAX_INT_DIGITS`), or
    None. Past a lower bound that proves they fit, their size is measured as the host
    measures it (compact JSON in UTF-8): by the bound alone, a million Chinese characters
    went as 6 MB of escaped JSON that the host parsed only to refuse as 3 MB. A courtesy:
    the host's own check is the one that holds."""
    refused = over_limit(args, limit) or unsendable_number(args)
    if refused is not None or json_bytes_at_least(args, limit // _WIDEST) <= limit // _WIDEST:
        return refused if refused is not None else _costly(args)
    size = _wire_size(json.dumps(args, ensure_ascii=False, separators=(",", ":")), limit)
    if size <= limit:
        return _costly(args)
    return (
        f"the arguments are {size:,} bytes of JSON, over the {limit:,} allowed "
        "(MCP_CODE_MAX_CALL_BYTES)"
    )


def _costly(args: Any) -> str | None:
    """Why the host would not read `args`: past `DECODE_BUDGET` by `decode_cost` (1.4 MB of
    `[` in a string, legal under MCP_CODE_MAX_CALL_BYTES=2000000, is 129 MB: attack 91),
    with room for the message's framing and names. Counted only past a size that could cost
    that much (at most 100 per byte: a `[` at the widest; the bound once ignored the room
    and passed a call the host refused, attack 102)."""
    if json_bytes_at_least(args, _COSTLY_BYTES) <= _COSTLY_BYTES:
        return None
    cost = decode_cost(json.dumps(args, separators=(",", ":")).encode())
    if cost <= _ONE_CALL:
        return None
    return (
        f"the arguments would take about {cost >> 20} MB of the gateway's memory to read, "
        f"more than the {DECODE_BUDGET >> 20} MB it reads of one message"
    )


_ONE_CALL = DECODE_BUDGET - (64 << 10)  # the call's framing and names
_COSTLY_BYTES = _ONE_CALL // 100


def _wire_size(text: str, limit: int) -> int:
    """As the host counts (`encodable.wire_size`): characters once they pass the limit,
    else UTF-8 bytes, with surrogate pairs joined and lone ones made U+FFFD."""
    if len(text) > limit:
        return len(text)
    try:
        return len(text.encode("utf-8"))
    except UnicodeEncodeError:
        return len(text.encode("utf-16", "surrogatepass").decode("utf-16", "replace").encode())


def pieces(specs: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """A batch's calls in pieces of about `BATCH_PIECE_BYTES` of JSON, in order; sent as
    one `call` message each, all but the last marked `more` (protocol.CallRequest).

    What the pieces cost the host to read (`decode_cost` of each line, framing included)
    stays within `BATCH_BUDGET`: calls past it are refused, sent without their arguments
    and with their names cut, room for which is kept from the start. ValueError: a batch
    so long that even that would not fit (MCP_CODE_MAX_TOOL_CALLS=0)."""
    if len(specs) < 2:
        return [specs]
    # each call's size, cost and width, itself and refused (at its own width); its text is
    # not kept (all of a batch's texts at once, 300 calls of 900 KB, took the worker past
    # its memory: attack 92)
    own = [_measured(spec) for spec in specs]
    refused = [_measured(_refused(spec), a[2]) for spec, a in zip(specs, own, strict=True)]
    # what each call costs at least: room for it is kept from the start, and for a piece's
    # framing where the width changes (the host counts a line at its widest: a piece holds
    # calls of one width)
    spare = [min(a[1], b[1]) for a, b in zip(own, refused, strict=True)]
    reserve = sum(spare) + _FRAMING * sum(a[2] != b[2] for a, b in itertools.pairwise(own))
    if reserve + _FRAMING * (sum(b[0] for b in refused) // BATCH_PIECE_BYTES + 2) > _LIMIT:
        raise ValueError(f"a batch of {len(specs):,} calls is too long to send; make fewer")
    cut: list[list[dict[str, Any]]] = [[]]
    size, cost, width = 0, _FRAMING, own[0][2]
    for spec, (length, price, wide), stub, least in zip(specs, own, refused, spare, strict=True):
        turn = wide != width
        reserve -= least + (_FRAMING if turn else 0)
        if cost + price + reserve + _FRAMING > _LIMIT and price > least:
            spec, (length, price, _) = _refused(spec), stub
        if cut[-1] and (turn or size + length > BATCH_PIECE_BYTES):
            cut.append([])
            size, cost = 0, cost + _FRAMING
        cut[-1].append(spec)
        size, cost, width = size + length, cost + price, wide
    return cut


def _refused(spec: dict[str, Any]) -> dict[str, Any]:
    return refused_spec(spec, _OVER_BUDGET, _STUB_NAME_CHARS)


def _measured(spec: dict[str, Any], width: int = 0) -> tuple[int, int, int]:
    """`spec`'s length as `protocol.encode` writes it (ASCII), its cost to read with the
    comma before it in a piece of `width` (by default its own), and that width."""
    text = json.dumps(spec, separators=(",", ":")).encode()
    shape, chars, own = decode_parts(text)
    width = width or own
    return len(text), shape + 32 + width * (chars + 1), width


def refused_spec(spec: dict[str, Any], why: str, names: int | None = None) -> dict[str, Any]:
    """`spec` without its arguments, with why they were not sent (protocol.ToolCallSpec)
    and its names cut to `names` characters."""
    server, tool = spec["server"][:names], spec["tool"][:names]
    return {"server": server, "tool": tool, "args": {}, "refused": why}


_FRAME = decode_parts(
    encode({"op": "call", "id": 10**12, "batch": 10**12, "calls": [], "more": True})
)
_FRAMING = _FRAME[0] + 4 * _FRAME[1]  # a piece's own text, counted at the widest
_STUB_NAME_CHARS = 100  # of a name, in a call refused for the batch's cost
_LIMIT = BATCH_BUDGET - (64 << 10)  # a margin for the framing of the refused calls' pieces
_OVER_BUDGET = f"past the batch's {BATCH_BUDGET >> 20} MB to read; make fewer calls at a time"
