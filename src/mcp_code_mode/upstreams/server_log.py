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
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..encodable import clean_text

if TYPE_CHECKING:  # fastmcp's client stack is imported on the first connection (`client`)
    from fastmcp.client.logging import LogMessage

__all__ = ["UpstreamLog", "quiet_sdk_logs", "shown"]

logger = logging.getLogger(__name__)

_CHARS = 1000  # of a message's text, as written
_NAME_CHARS = 100  # of the upstream's logger name
_BURST = 20  # messages written at once before the rate applies
_PER_S = 2.0  # messages a second, over time
_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "notice": logging.INFO}


class _Rate:
    """`_BURST` at once, then `_PER_S` a second; what it turned away is counted."""

    def __init__(self) -> None:
        self._tokens = float(_BURST)
        self._stamp = time.monotonic()
        self.dropped = 0

    def admit(self) -> bool:
        now = time.monotonic()
        self._tokens = min(_BURST, self._tokens + (now - self._stamp) * _PER_S)
        self._stamp = now
        if self._tokens < 1:
            self.dropped += 1
            return False
        self._tokens -= 1
        return True

    def note(self) -> str:
        """What was dropped since the last note, said once."""
        dropped, self.dropped = self.dropped, 0
        return f" ({dropped} earlier messages dropped: over {_PER_S:g} a second)" if dropped else ""


class UpstreamLog:
    """The `log_handler` of one upstream's client: its messages on our logger."""

    def __init__(self, server: str, redact: Callable[[str], str] = str) -> None:
        self.server = server
        self._shown_server = clean_text(server)
        self._redact = redact  # the config's `${VAR}` values: an upstream may log its key
        self._rate = _Rate()

    async def __call__(self, message: LogMessage) -> None:
        if not self._rate.admit():
            return
        level = _LEVELS.get(str(message.level), logging.WARNING)
        if not logger.isEnabledFor(level):
            return
        name = shown(message.logger, _NAME_CHARS, self._redact) if message.logger else ""
        where = f" ({name})" if name else ""
        text = shown(message.data, redact=self._redact)
        server, note = self._shown_server, self._rate.note()
        logger.log(level, "upstream %s%s: %s%s", server, where, text, note)


class _SdkRecords(logging.Filter):
    """The MCP SDK's own records, which quote what upstreams send (an SSE `event:` field,
    a notification it could not read, with its traceback): cleaned, one line, cut, without
    the traceback, at the same rate (attack 120: 20,000 bad notifications wrote 15.6 MB)."""

    def __init__(self) -> None:
        super().__init__()
        self._rate = _Rate()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING and not self._rate.admit():
            return False  # debug lines are asked for (--log-level debug): cleaned, not dropped
        text = shown(record.getMessage())
        if record.exc_info and record.exc_info[0] is not None:
            text += f" ({record.exc_info[0].__name__})"
        record.msg, record.args = text + self._rate.note(), ()
        record.exc_info = record.exc_text = record.stack_info = None
        return True


_SDK_LOGGERS = ("client", "mcp.client.streamable_http", "mcp.client.sse")  # "client": the session's


def quiet_sdk_logs() -> None:
    """Put `_SdkRecords` on each of the MCP SDK's loggers (once; a logger's filters do not
    reach its children, so each is named: those loaded now and the client's)."""
    loaded = [n for n in logging.root.manager.loggerDict if n.startswith("mcp.")]
    for name in {*_SDK_LOGGERS, *loaded}:
        sdk = logging.getLogger(name)
        if not any(isinstance(f, _SdkRecords) for f in sdk.filters):
            sdk.addFilter(_SdkRecords())


def shown(data: Any, chars: int = _CHARS, redact: Callable[[str], str] = str) -> str:
    """`data` as one line of at most `chars` characters a terminal shows as text, `redact`ed
    before it is cut (a secret across the cut goes whole)."""
    if not isinstance(data, str):
        try:
            data = json.dumps(data, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError):
            data = f"(a {type(data).__name__} that cannot be shown)"
    # escape sequences cleaned out shorten it: clean a few times what is kept
    text = clean_text(redact(data[: chars * 4])).replace("\n", " ").replace("\t", " ")
    return text if len(text) <= chars else f"{text[:chars]}… [{len(data):,} characters in all]"
