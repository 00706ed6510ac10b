"""A tool call's arguments as the worker sends them: refused unsent when the host would
refuse them, and a batch cut into pieces the host parses one at a time.

Runs inside the worker process. Stdlib only. The arguments here are `protocol.exact_json`
copies: measuring and encoding them runs no guest code.
"""

from __future__ import annotations

import json
from typing import Any

from mcp_code_mode.sandbox.protocol import (
    BATCH_PIECE_BYTES,
    json_bytes_at_least,
    long_integer,
    over_limit,
)

__all__ = ["pieces", "refusal"]

_WIDEST = 6
"""The most UTF-8 bytes of JSON a byte of `json_bytes_at_least` stands for (a control
character written `\\u0001`; only dictionary keys that are not strings go wider)."""


def refusal(args: Any, limit: int) -> str | None:
    """Why the host would refuse `args` (MCP_CODE_MAX_CALL_BYTES, `MAX_INT_DIGITS`), or
    None. Past a lower bound that proves they fit, their size is measured as the host
    measures it (compact JSON in UTF-8): by the bound alone, a million Chinese characters
    went as 6 MB of escaped JSON that the host parsed only to refuse as 3 MB. A courtesy:
    the host's own check is the one that holds."""
    refused = over_limit(args, limit) or long_integer(args)
    if refused is not None or json_bytes_at_least(args, limit // _WIDEST) <= limit // _WIDEST:
        return refused
    size = _wire_size(json.dumps(args, ensure_ascii=False, separators=(",", ":")), limit)
    if size <= limit:
        return None
    return (
        f"the arguments are {size:,} bytes of JSON, over the {limit:,} allowed "
        "(MCP_CODE_MAX_CALL_BYTES)"
    )


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
    one `call` message each, all but the last marked `more` (protocol.CallRequest)."""
    if len(specs) < 2:
        return [specs]
    cut: list[list[dict[str, Any]]] = [[]]
    size = 0
    for spec in specs:
        length = len(json.dumps(spec, separators=(",", ":")))
        if cut[-1] and size + length > BATCH_PIECE_BYTES:
            cut.append([])
            size = 0
        cut[-1].append(spec)
        size += length
    return cut
