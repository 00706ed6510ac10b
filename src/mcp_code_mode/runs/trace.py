"""`RunTrace`: what one run did, gathered while it runs, and its `RunRecord` when it ends.

The run's router opens a `CallTrace` per upstream call (`call`) and ends it with its outcome;
the gateway ends the run with its reply (`finish`). Everything that costs more than reading
a clock (arguments as JSON, result sizes, token counts) is deferred: `finish` returns a
callable that the store's writer thread runs to build the record. A call's result is kept as
the text the wire carried (a reference, no copy) while the run's results stay under
`_KEPT_RESULT_CHARS`, then its start and size only; `chars` says what a finished run holds
until it is built. Secrets are left out by `redact`, applied to every text a record keeps;
arguments are kept per `arguments` (`off`, `clipped` or `full`; both bounded where stored).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .records import MAX_CALL_CHARS, CallRecord, RunRecord

__all__ = ["ArgumentsMode", "CallTrace", "RunKind", "RunTrace"]

ArgumentsMode = Literal["off", "clipped", "full"]
RunKind = Literal["execute_code", "run_task"]
_KEPT_RESULT_CHARS = 250_000  # of a run's upstream results, what is kept to count tokens
_FULL_CHARS = 1_000_000  # arguments in `full` mode (the store still bounds each text)
_REDACT_MARGIN = 64 * 1024


@dataclass(slots=True)
class CallTrace:
    """One upstream call, as it happens; `end` it once."""

    order: int
    server: str
    tool: str
    arguments: str  # as the record keeps them: redacted, clipped, "" when `off`
    bytes_in: int  # their size on the wire
    started_ms: float
    ms: float = 0.0
    ok: bool = False
    error: str | None = None
    approval: str | None = None
    result_text: str = ""  # what of it fits under the run's `_KEPT_RESULT_CHARS`
    result_bytes: int = 0  # of a result not kept whole (a whole one is measured when built)
    result_chars: int = 0  # the same, in characters


@dataclass
class RunTrace:
    """One run's calls and timings; `redact` takes a text and leaves secret values out."""

    kind: RunKind
    code: str
    input: Any
    client: str
    arguments: ArgumentsMode = "clipped"
    redact: Callable[[str], str] = lambda text: text
    started: float = field(default_factory=time.time)
    calls: list[CallTrace] = field(default_factory=list)
    _clock: float = field(default_factory=time.perf_counter)
    _kept_chars: int = 0  # of results kept
    _argument_chars: int = 0  # of arguments kept

    def call(self, server: str, tool: str, arguments: str, size: int) -> CallTrace:
        """A new call, started now, in the order calls were made; `arguments` its JSON
        text, `size` that in bytes. What the record keeps of the text is taken now: the
        value or its whole text, kept until the record is built, cost a run 27 MB of
        memory per 1 MB call (outside attack 85)."""
        at = (time.perf_counter() - self._clock) * 1000
        kept = "" if self.arguments == "off" else self._kept_arguments(arguments)
        trace = CallTrace(len(self.calls), server, tool, kept, size, round(at, 1))
        self.calls.append(trace)
        self._argument_chars += len(kept)
        return trace

    def _kept_arguments(self, text: str) -> str:
        """`text` redacted and clipped; redacted with a margin past the clip, so a secret
        cut by the clip is still found (`_REDACT_MARGIN` longer than twice any secret).
        When redaction shrank the margin by half or more (many secrets in it), a secret cut
        at its end could come within the clip (outside attack 86): the whole text then."""
        limit = MAX_CALL_CHARS if self.arguments == "clipped" else _FULL_CHARS
        cut = text[: limit + _REDACT_MARGIN]
        redacted = self.redact(cut)
        if len(cut) < len(text) and len(redacted) < len(cut) - _REDACT_MARGIN // 2:
            redacted = self.redact(text)
        return redacted[:limit]

    def end(
        self,
        call: CallTrace,
        *,
        ok: bool,
        text: str = "",
        value: Any = None,
        error: str | None = None,
    ) -> None:
        """`call` ended: how long it took, and its result, the `text` the wire carried (or
        its `value`, when it had none), kept for the record while the run's results stay
        under `_KEPT_RESULT_CHARS`, else only its size."""
        call.ms = round((time.perf_counter() - self._clock) * 1000 - call.started_ms, 1)
        call.ok, call.error = ok, error
        if ok:
            text = text or _json(value)  # a result with no text blocks: rare
            room = _KEPT_RESULT_CHARS - self._kept_chars
            if len(text) <= room:
                call.result_text = text  # a reference, measured when the record is built
            else:  # its start only: 16 runs held 9 MB results whole until written (143)
                call.result_bytes, call.result_chars = _utf8_size(text), len(text)
                call.result_text = text[: max(room, 0)]
            self._kept_chars += len(call.result_text)

    @property
    def chars(self) -> int:
        """Characters this run holds for its record (code, results and arguments kept)."""
        return len(self.code) + self._kept_chars + self._argument_chars

    def finish(
        self,
        reply: Callable[[], Mapping[str, Any]],
        count_tokens: Callable[[str], int] | None = None,
    ) -> Callable[[], RunRecord]:
        """The run's record, built when called (by the store's writer thread) from `reply`,
        the §3 result object the client was sent, whose tokens are set against the upstream
        results' (`count_tokens`: none counted without it)."""
        ended = time.time()
        calls = list(self.calls)

        def build() -> RunRecord:
            sent = reply()
            error = sent.get("error") or {}
            return RunRecord(
                kind=self.kind,
                started=self.started,
                ended=ended,
                client=self.client,
                code=self.redact(self.code),
                input=self.redact(_json(self.input)),
                ok=bool(sent.get("ok")),
                error_type=error.get("type"),
                error=self.redact(str(error["message"])) if "message" in error else None,
                error_line=error.get("line"),
                stdout=self.redact(str(sent.get("stdout") or "")),
                logs=self.redact("\n".join(map(str, sent.get("logs") or ()))),
                result=self.redact(_json(sent.get("result"))),
                calls=[self._call_record(call) for call in calls],
                tokens=_tokens(count_tokens, self.code, _json(sent), _consumed_text(calls)),
            )

        return build

    def _call_record(self, call: CallTrace) -> CallRecord:
        return CallRecord(
            order=call.order,
            server=call.server,
            tool=call.tool,
            arguments=call.arguments,
            ok=call.ok,
            error=None if call.error is None else self.redact(call.error),
            started_ms=call.started_ms,
            ms=call.ms,
            bytes_in=call.bytes_in,
            bytes_out=call.result_bytes if call.result_chars else _utf8_size(call.result_text),
            approval=call.approval,
        )


def _json(value: Any) -> str:
    """`value` as JSON text (what the wire carried), or its repr when it is not JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=repr)
    except (TypeError, ValueError, RecursionError):
        return repr(value)[:MAX_CALL_CHARS]


def _utf8_size(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "replace"))


def _consumed_text(calls: list[CallTrace]) -> tuple[str, int]:
    """The upstream results' text kept (the first `_KEPT_RESULT_CHARS`) and the length of
    all of it, in characters."""
    kept = "\n".join(call.result_text for call in calls if call.result_text)
    total = sum(c.result_chars or len(c.result_text) for c in calls if c.ok)
    return kept[:_KEPT_RESULT_CHARS], max(total, len(kept))


def _tokens(
    count: Callable[[str], int] | None, code: str, reply: str, consumed: tuple[str, int]
) -> dict[str, int]:
    """cl100k tokens of the code sent, the reply returned and the upstream results the code
    read (what calling the tools directly would have put in the model's context). Past
    `_KEPT_RESULT_CHARS`, the results' count is scaled from the part counted."""
    if count is None:
        return {}
    text, total = consumed
    results = count(text)
    if total > len(text) > 0:
        results = round(results * total / len(text))
    return {"code": count(code), "reply": count(reply), "upstream_results": results}
