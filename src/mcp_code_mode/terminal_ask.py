"""Approval questions asked on the terminal (`exec` and `run` with stdin a terminal, §8).

The question goes to stderr (stdout holds only the result) and the answer is read from
stdin by the event loop itself, only while a question is open. A `readline` in a thread
could not be stopped when the question timed out: it went on reading, took the line typed
for the next question (a yes reported as "nobody answered"), and held the process open
after its result until Enter was pressed (outside attack 146).
"""

from __future__ import annotations

import asyncio
import os
import sys

from .approval import ApprovalRequest
from .encodable import clean_text

__all__ = ["ask_on_terminal"]

_LINE_BYTES = 4096  # of an answer read at most: one line, "y" or "n"


async def ask_on_terminal(request: ApprovalRequest) -> bool:
    """`Approve notes.add_note for this run? [y/N]` on stderr, the answer from stdin. A run
    asks one question at a time (`approval.RunApprovals`): two at once had the line typed
    for the first answer the one shown second (review 150)."""
    print(
        f"{request.server}.{request.tool} needs approval; first call: "
        f"{clean_text(request.arguments)}",
        file=sys.stderr,
    )
    print(f"Approve {request.server}.{request.tool} for this run? [y/N] ", end="", file=sys.stderr)
    sys.stderr.flush()
    answer = await _read_line(sys.stdin.fileno())
    return answer.strip().lower() in (b"y", b"yes")


async def _read_line(fd: int) -> bytes:
    """The next line typed on `fd` (b"" at its end), read only while this is awaited: a
    question that times out (cancelled) leaves what is typed next to the next question."""
    loop = asyncio.get_running_loop()
    line: asyncio.Future[bytes] = loop.create_future()
    typed = bytearray()

    def readable() -> None:
        try:
            chunk = os.read(fd, _LINE_BYTES)
        except BlockingIOError:
            return
        except OSError:  # the terminal went away: no answer
            chunk = b""
        typed.extend(chunk)
        if (not chunk or b"\n" in chunk or len(typed) >= _LINE_BYTES) and not line.done():
            line.set_result(bytes(typed).partition(b"\n")[0])

    loop.add_reader(fd, readable)
    try:
        return await line
    finally:
        loop.remove_reader(fd)
