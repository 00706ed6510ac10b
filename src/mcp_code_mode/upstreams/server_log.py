"""What an upstream logs to us (`notifications/message`): cleaned, clipped and rate-limited.

An upstream may send log messages at any time, as many and as long as its replies may be.
fastmcp's default handler wrote each one whole, at the level the upstream chose, through
its Rich console on the event loop: wrapping one 60 KB word took the gateway 27 s (40 KB:
37 s; Rich's wrapping is super-linear), 5 MB froze it for minutes, and terminal escapes
went to stderr as sent (outside attack 118). Here each message costs at most its data's
JSON once, and only while the upstream keeps within `_BURST` messages and `_PER_S` a
second; what is dropped is counted in the next line that is written. Levels are kept up to
warning: an upstream cannot write errors in the gateway's name.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from fastmcp.client.logging import LogMessage

from ..encodable import clean_text

__all__ = ["UpstreamLog"]

logger = logging.getLogger(__name__)

_CHARS = 1000  # of a message's text, as written
_NAME_CHARS = 100  # of the upstream's logger name
_BURST = 20  # messages written at once before the rate applies
_PER_S = 2.0  # messages a second, over time
_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "notice": logging.INFO}


class UpstreamLog:
    """The `log_handler` of one upstream's client: its messages on our logger."""

    def __init__(self, server: str) -> None:
        self._server = clean_text(server)
        self._tokens = float(_BURST)
        self._stamp = time.monotonic()
        self._dropped = 0

    async def __call__(self, message: LogMessage) -> None:
        if not self._admit():
            self._dropped += 1
            return
        level = _LEVELS.get(str(message.level), logging.WARNING)
        if not logger.isEnabledFor(level):
            return
        name = _clip(message.logger, _NAME_CHARS) if message.logger else ""
        dropped, self._dropped = self._dropped, 0
        logger.log(
            level,
            "upstream %s%s: %s%s",
            self._server,
            f" ({name})" if name else "",
            _clip(message.data, _CHARS),
            f" ({dropped} earlier messages dropped: over {_PER_S:g} a second)" if dropped else "",
        )

    def _admit(self) -> bool:
        now = time.monotonic()
        self._tokens = min(_BURST, self._tokens + (now - self._stamp) * _PER_S)
        self._stamp = now
        if self._tokens < 1:
            return False
        self._tokens -= 1
        return True


def _clip(data: Any, chars: int) -> str:
    """`data` as one line of at most `chars` characters a terminal shows as text."""
    if not isinstance(data, str):
        try:
            data = json.dumps(data, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError):
            data = f"(a {type(data).__name__} that cannot be shown)"
    # escape sequences cleaned out shorten it: clean a few times what is kept
    text = clean_text(data[: chars * 4]).replace("\n", " ").replace("\t", " ")
    return text if len(text) <= chars else f"{text[:chars]}… [{len(data):,} characters in all]"
