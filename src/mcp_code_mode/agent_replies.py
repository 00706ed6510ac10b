"""What the agent reads out of a model's reply, however loosely the model kept to the format.

Small and local models rarely write dspy's `[[ ## field ## ]]` sections: they answer with a
bare code fence, put a `<think>…</think>` preamble first, leave a field out, or are cut off
mid-fence. dspy's adapters raise `AdapterParseError` on all of these, and its JSON fallback
then "parses" a dict literal found inside the generated Python. The adapters here parse the
format strictly first, then leniently: the sections found are taken; a fenced code block
anywhere is the code; a missing `finished` is false; a missing `reasoning` is empty; for a
one-field answer, the text itself is the answer. A reply with nothing usable still raises
`AdapterParseError`, which the agent turns into a failed step the model sees.
"""

from __future__ import annotations

import re
from typing import Any

import dspy
from dspy.adapters.chat_adapter import ChatAdapter
from dspy.adapters.json_adapter import JSONAdapter
from dspy.utils.exceptions import AdapterParseError

__all__ = ["ADAPTERS", "lenient_fields", "strip_fences", "strip_thinking"]

# Every pattern is linear in the reply's length (no `\s*` that can cross the lines another
# part of the pattern also matches): a reply of blank lines must not stall the event loop.
_THINK = re.compile(r"[ \t\r\n]*<think>.*?(?:</think>|\Z)", re.DOTALL | re.IGNORECASE)
_SECTION = re.compile(r"^[ \t]*\[\[[ \t]*##[ \t]*(\w+)[ \t]*##[ \t]*\]\]", re.MULTILINE)
# a fence anywhere: ```python / ```py / ``` then the code, up to the closing fence or the end
_FENCED = re.compile(r"```[ \t]*(?:python3?|py)?[ \t]*\n(.*?)(?:\n[ \t]*```|\Z)", re.DOTALL)
_OPENING = re.compile(r"```[ \t]*(?:python3?|py)?[ \t]*\n")
_TRUE = {"true", "yes", "1", "done", "finished"}
MAX_REPLY_CHARS = 100_000  # of a reply that is read; a longer one is cut first


def strip_thinking(text: str) -> str:
    """`text` without the `<think>…</think>` block it starts with (an unclosed one runs to
    the end); the text `<think>` later on, e.g. in code, is kept."""
    text = text[:MAX_REPLY_CHARS]
    match = _THINK.match(text)
    return (text[match.end() :] if match else text).strip()


def strip_fences(code: str) -> str:
    """The code inside a markdown fence that wraps all of `code`, or `code` itself."""
    text = code.strip()
    opening = _OPENING.match(text)
    if opening is None or not text.endswith("```") or len(text) < opening.end() + 3:
        return text
    return text[opening.end() : -3].strip()


def lenient_fields(signature: type[dspy.Signature], reply: str) -> dict[str, Any] | None:
    """The output fields of `signature` found in `reply` by the loose rules above; None
    when the reply holds nothing usable (no code for a code field, no text at all)."""
    text = strip_thinking(reply)
    sections = _sections(text)
    fields: dict[str, Any] = {}
    for name, info in signature.output_fields.items():
        found = sections.get(name)
        if info.annotation is bool:
            fields[name] = str(found or "").strip().lower().rstrip(".") in _TRUE
        elif name == "code":
            fields[name] = _code(found, text)
            if fields[name] is None:
                return None
        elif found is not None:
            fields[name] = found
        else:
            fields[name] = ""
    prose = [n for n, i in signature.output_fields.items() if i.annotation is not bool]
    prose = [n for n in prose if n not in ("reasoning", "code")]
    if len(prose) == 1 and not fields[prose[0]]:  # one text field, no section: the reply
        fields[prose[0]] = text
    if "code" in fields:
        return fields
    return fields if any(fields[n] for n in prose) else None


def _sections(text: str) -> dict[str, str]:
    """`[[ ## name ## ]]` sections, each up to the next one (the first of a name wins)."""
    found: dict[str, str] = {}
    marks = list(_SECTION.finditer(text))
    for mark, following in zip(marks, [*marks[1:], None], strict=False):
        end = following.start() if following is not None else len(text)
        found.setdefault(mark.group(1), text[mark.end() : end].strip())
    return found


def _code(section: str | None, text: str) -> str | None:
    """The code: a `code` section (unfenced), else the first fenced block anywhere; ""
    for an explicitly empty code section; None when there is none at all."""
    if section is not None:
        fenced = _FENCED.search(section)
        return (fenced.group(1) if fenced else section).strip()
    fenced = _FENCED.search(text)
    return fenced.group(1).strip() if fenced else None


class _Lenient:
    """Parse as the adapter does; when that fails, by `lenient_fields`."""

    def parse(self, signature: type[dspy.Signature], completion: str) -> dict[str, Any]:
        try:
            parsed: dict[str, Any] = super().parse(signature, strip_thinking(completion))  # type: ignore[misc]
            return parsed
        except (AdapterParseError, RecursionError, ValueError) as exc:  # deep nesting: no reply
            # (json_repair on 3.13 says so with a ValueError)
            fields = lenient_fields(signature, completion)
            if fields is not None:
                return fields
            if isinstance(exc, AdapterParseError):
                raise
            raise AdapterParseError(
                type(self).__name__, signature, completion[:1000], "nested too deeply to read"
            ) from None


class LenientChatAdapter(_Lenient, ChatAdapter):
    """dspy's `[[ ## field ## ]]` format, read leniently; no JSON fallback call."""

    def __init__(self) -> None:
        super().__init__(use_json_adapter_fallback=False)


class LenientJSONAdapter(_Lenient, JSONAdapter):
    """dspy's JSON format, read leniently."""


ADAPTERS: dict[str, type[ChatAdapter]] = {"chat": LenientChatAdapter, "json": LenientJSONAdapter}
"""The adapters `DSPY_ADAPTER` names."""
