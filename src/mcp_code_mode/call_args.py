"""A call's arguments as they are sent: bounded, made encodable, measured and written as
JSON once, before anything copies, records or traces them.

Guest code chooses these values, and a legal one can cost the gateway much more than its
size on the wire: 3 million lone surrogates stalled the event loop 9 s and were kept for
the run (outside attack 82); 2 million floats took 5 s to count (attack 83); a record kept
each call's copied object graph, 27 MB of memory for a 1 MB call (attack 85). So a value
is refused unseen when a lower bound of its size passes the limit (`over_limit`); a small
one is measured on the event loop; a larger one on the offload thread (`offload`: a
batch's checks, side by side on the default pool, starved the loop of the GIL for 1-2 s,
and below the earlier 256 KB mark ran back to back on the loop for 3.6 s: attack 85).
What a record keeps is the JSON text made while measuring, never the value.

`explain` is what a failed call says: the upstream's text, clipped, and the argument
names its schema does not list, each with the closest one it does.
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import mcp_types

from .encodable import clip, one_line, sendable
from .errors import ToolCallFailed
from .offload import offloaded
from .sandbox.protocol import json_bytes_at_least, over_limit

__all__ = [
    "ERROR_CHARS",
    "NOT_KEPT",
    "Checked",
    "bounded_args",
    "explain",
    "explained",
    "size_at_least",
]

ERROR_CHARS = 20_000  # of an upstream's error text, what a failed call says
_NAMED = 5  # unknown argument names a failed call's hint names
_GUESSED = 3  # of them, how many are given the closest name the tool takes
_LISTED = 12  # of the tool's own argument names, how many the hint lists
_COMPARED = 50  # of the tool's argument names, how many the closest is looked for among
_COMBINED = ("allOf", "anyOf", "oneOf", "$ref", "if", "dependentSchemas", "dependencies")
_NAME_CHARS = 32  # of each name, how much is compared (difflib's cost grows as its square)

NOT_KEPT = "(not kept: over MCP_CODE_MAX_CALL_BYTES)"
"""What a run's record says of arguments that were refused for their size."""

_INLINE = 4 * 1024  # arguments this small by a lower bound are measured on the event loop


class Checked(NamedTuple):
    """Arguments checked against `MCP_CODE_MAX_CALL_BYTES`."""

    args: Any  # as they are sent; None when refused
    text: str  # their compact JSON text; `NOT_KEPT` when refused
    size: int  # its size in bytes on the wire; 0 when refused
    refused: str | None  # why they cannot be sent, or None


async def bounded_args(args: Any, max_bytes: int, turn: asyncio.Lock | None = None) -> Checked:
    """`args` as they are sent (`sendable`), or why they cannot be within `max_bytes` of
    JSON (see the module). `turn`: the run's, held while its check is offloaded, so one
    run queues one check at a time there (a batch of 60 queued at once held another
    client's call 6.8 s: outside attack 86)."""
    if json_bytes_at_least(args, _INLINE) <= _INLINE:
        return _checked(args, max_bytes)
    async with turn or contextlib.nullcontext():
        return await offloaded(_checked, args, max_bytes)


def _checked(args: Any, max_bytes: int) -> Checked:
    """A lower bound refuses what is over (`over_limit`) unseen; the rest is counted."""
    refused = over_limit(args, max_bytes)
    if refused is None:
        try:
            return Checked(*sendable(args, max_bytes), None)
        except ValueError as exc:
            refused = str(exc)
    return Checked(None, NOT_KEPT, 0, refused)


async def size_at_least(value: Any, stop: int) -> int:
    """A lower bound on `value`'s JSON size, counted until it passes `stop`; off the event
    loop when it is large (a result with no text to measure it by)."""
    if json_bytes_at_least(value, _INLINE) <= _INLINE:
        return json_bytes_at_least(value, stop)
    return await offloaded(json_bytes_at_least, value, stop)


async def explain(
    failed: ToolCallFailed, tool: Callable[[], mcp_types.Tool], args: Mapping[str, Any]
) -> ToolCallFailed:
    """`explained`, given the tool's schema, on the offload thread: matching names is up to
    30 ms for hostile ones (outside attack 140: 1.4 s a call on the loop, before bounds)."""
    try:
        schema = tool().input_schema or {}
    except LookupError:  # no longer listed
        schema = {}
    return await offloaded(explained, failed, schema, list(args))


def explained(failed: ToolCallFailed, schema: Any, given: list[Any]) -> ToolCallFailed:
    """`failed` with its upstream text clipped at `ERROR_CHARS` and, when the call gave
    names a closed schema does not list, a hint (outside attack 136: the upstream's pydantic
    text and a URL, for `stat=` where the tool takes `status`)."""
    known = _closed_properties(schema)
    names = [one_line(clip(str(name), 100)) for name in list(known)[:_COMPARED]]
    unknown = [str(name) for name in given if known and name not in known][:_NAMED]
    if not unknown and len(failed.message) <= ERROR_CHARS:
        return failed
    message = clip(failed.message, ERROR_CHARS)
    if unknown:  # first: what to change, then what the upstream said
        shown = [
            _guessed(name, names) if n < _GUESSED else _shown(name)
            for n, name in enumerate(unknown)
        ]
        more = ", ..." if len(known) > _LISTED else ""
        own = f"{', '.join(names[:_LISTED])}{more}"
        message = f"no argument {', '.join(shown)}; it takes {own}. The upstream said: {message}"
    return ToolCallFailed(failed.server, failed.tool, message)


def _closed_properties(schema: Any) -> dict[str, Any]:
    """The names a schema lists, when it takes no others: with `additionalProperties` or
    `patternProperties` a name it does not list may be valid (attack 140: "no argument
    'timeout'" where the schema took any). Unsaid, it is taken as closed: tools reject
    names their function does not take whatever their schema says."""
    if not isinstance(schema, dict) or schema.get("additionalProperties") not in (None, False):
        return {}
    if any(key in schema for key in _COMBINED):  # names listed elsewhere (attack 140: allOf)
        return {}
    listed = schema.get("properties")
    return listed if isinstance(listed, dict) and not schema.get("patternProperties") else {}


def _guessed(name: str, names: list[str]) -> str:
    """`name` shown with the closest of `names`, compared by their first `_NAME_CHARS`."""
    cut = {candidate[:_NAME_CHARS]: candidate for candidate in names}
    close = difflib.get_close_matches(name[:_NAME_CHARS], list(cut), n=1)
    return _shown(name) + (f" (did you mean {cut[close[0]]!r}?)" if close else "")


def _shown(name: str) -> str:
    return repr(one_line(clip(name, 100)))
