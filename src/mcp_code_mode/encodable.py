"""Make values safe to hand to the MCP layer: text that UTF-8 can encode, bounded nesting.

Python strings may hold lone surrogates (`'\\ud800'` from guest code, or an upstream's JSON
`"\\ud83d"`), which no UTF-8 writer accepts: fastmcp's stdio writer dies on them. Every
value that leaves the server (replies, tool arguments) passes through `make_encodable`,
which puts U+FFFD in place of what cannot be encoded (contract §7).

Text an upstream wrote and a model or a terminal is shown (tool names, descriptions, error
texts) also passes through `clean_text`: no terminal escapes, control characters or bidi
overrides, which could rewrite a terminal or make the text read otherwise than it is.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pydantic_core

__all__ = [
    "CLIP_MARK",
    "MAX_DEPTH",
    "TooDeep",
    "clean_text",
    "clip",
    "encodable_text",
    "make_encodable",
    "one_line",
    "wire_size",
]

MAX_DEPTH = 200
"""Deepest nesting of lists and objects a value may have on its way out (serialisers
and clients give up around a few hundred levels)."""


class TooDeep(ValueError):
    """A value nested deeper than `MAX_DEPTH`."""


def encodable_text(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD (fast when there is none)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


# ESC and the C1 controls that open an escape sequence: a sequence's body never holds one, so
# each failed match stops at the next opener and cleaning stays linear in the text.
_OPENERS = "\x1b\x90\x98\x9b\x9d\x9e\x9f"
_SEQUENCE = re.compile(
    # OSC, DCS, SOS, PM, APC: a string up to BEL or ST (ESC \\ or U+009C); unterminated,
    # only the opener goes (by the pass below) and the rest is shown as the text it is
    f"(?:\x1b[\\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^{_OPENERS}\x07\x9c]*+(?:\x07|\x1b\\\\|\x9c)"
    # CSI: parameters, intermediates, a final byte
    "|(?:\x1b\\[|\x9b)[\x30-\x3f]*+[\x20-\x2f]*+[\x40-\x7e]"
    # any other escape: intermediates and a final byte (ESC 7, ESC ( B, ESC c, ...)
    "|\x1b[\x20-\x2f]*+[\x30-\x7e]"
)
_OPENER = re.compile(f"[{_OPENERS}]")
_BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_CONTROLS = [*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0), *map(ord, _BIDI)]
_DROPPED = dict.fromkeys(_CONTROLS)
"""What `clean_text` deletes: C0 controls but newline and tab, DEL, C1 controls, bidi marks,
embeddings, overrides and isolates."""


def clean_text(text: str) -> str:
    """`text` as a model or a terminal may be shown it: ANSI/ECMA-48 escape sequences (CSI,
    OSC and the other string sequences, two-character escapes) removed whole, then every
    control character but newline and tab and every bidi control removed, lone surrogates
    as U+FFFD. Text without those characters comes back unchanged; the work is linear.
    Apply it where text is shown, never to a name something is called by."""
    if text.isprintable():  # no control, format (bidi) or surrogate character at all
        return text
    if _OPENER.search(text):  # scanning for sequences costs more than looking for an opener
        text = _SEQUENCE.sub("", text)
    return encodable_text(text).translate(_DROPPED)


def one_line(text: str) -> str:
    """`clean_text` on one line: every line break (U+2028 and the like too) a space. For a
    name or a message shown where a line of its own could pass for the view's own lines
    (outside attack 137: a call line forged by a tool name `call_tool` was given)."""
    cleaned = clean_text(text)
    return cleaned if cleaned.isprintable() else " ".join(cleaned.splitlines())


def make_encodable(value: Any, *, max_depth: int = MAX_DEPTH) -> Any:
    """A copy of a JSON value whose strings (keys included) UTF-8 can encode.

    Raises:
        TooDeep: the value is nested deeper than `max_depth`.
    """
    return _walk(value, 0, max_depth)


def _walk(value: Any, depth: int, max_depth: int) -> Any:
    if isinstance(value, str):
        return encodable_text(value)
    if isinstance(value, dict | list | tuple):
        if depth >= max_depth:
            raise TooDeep(f"the value is nested deeper than {max_depth} levels")
        if isinstance(value, dict):
            return {
                encodable_text(str(k)): _walk(v, depth + 1, max_depth) for k, v in value.items()
            }
        return [_walk(v, depth + 1, max_depth) for v in value]
    return value


def clip(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, saying how much was cut (`CLIP_MARK`)."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"… [{len(text) - limit} more characters cut]"


CLIP_MARK = re.compile(r"… \[\d+ more characters cut\]\Z")
"""What `clip` (and the worker, for an error message) puts after a cut."""


def wire_size(value: Any, limit: int) -> int:
    """The size in bytes of `value` as compact UTF-8 JSON, as the MCP layer writes it, or
    some number over `limit` when that is larger (or it cannot be written).

    Pass a `make_encodable` value: the count is of what is sent, U+FFFD (3 bytes) where a
    lone surrogate was. The SDK writes stdio lines with pydantic and HTTP bodies with `json`;
    they differ only in how numbers are spelt (`1e-05` / `0.00001`), and the longer counts.
    """
    return _measured(value, limit)[1]


def _measured(value: Any, limit: int) -> tuple[str, int]:
    """`value`'s compact JSON text (UTF-8 as it is; "" when it cannot be written) and its
    `wire_size`."""
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError):
        return "", limit + 1
    if len(text) > limit:  # every character is at least one byte
        return text, len(text)
    try:
        by_json = len(text.encode("utf-8"))
        by_pydantic = len(pydantic_core.to_json(value))
    except (UnicodeEncodeError, pydantic_core.PydanticSerializationError, ValueError):
        return text, limit + 1  # not made encodable: it cannot be sent as it is
    return text, max(by_json, by_pydantic)


def sendable(args: Any, max_bytes: int) -> tuple[Any, str, int]:
    """`args` as they are sent (`make_encodable`), within `max_bytes` of JSON on the wire,
    with their compact JSON text and its size in bytes (what a record of the call keeps,
    made once here rather than from the value later).

    Raises:
        ValueError: too deep to send, or over `max_bytes` (MCP_CODE_MAX_CALL_BYTES); the
            message says which.
    """
    try:
        args = make_encodable(args)  # U+FFFD for what cannot be encoded
    except TooDeep as exc:
        raise ValueError(f"the arguments cannot be sent: {exc}") from None
    text, size = _measured(args, max_bytes)
    if size > max_bytes:
        raise ValueError(
            f"the arguments are {size:,} bytes of JSON, over the {max_bytes:,} allowed "
            "(MCP_CODE_MAX_CALL_BYTES)"
        )
    return args, text, size
