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

import ast
import re
from typing import Any

import dspy
from dspy.adapters.chat_adapter import ChatAdapter
from dspy.adapters.json_adapter import JSONAdapter
from dspy.utils.exceptions import AdapterParseError

__all__ = ["ADAPTERS", "fenced_code", "lenient_fields", "strip_fences", "strip_thinking"]

# Every pattern is linear in the reply's length (no `\s*` that can cross the lines another
# part of the pattern also matches): a reply of blank lines must not stall the event loop.
_THINK = re.compile(r"[ \t\r\n]*<think>.*?(?:</think>|\Z)", re.DOTALL | re.IGNORECASE)
_SECTION = re.compile(r"^[ \t]*\[\[[ \t]*##[ \t]*(\w+)[ \t]*##[ \t]*\]\]", re.MULTILINE)
_PYTHON = {"python", "python3", "py"}
_TRUE = {"true", "yes", "1", "done", "finished"}
MAX_REPLY_CHARS = 100_000  # of a reply that is read; a longer one is cut first


def strip_thinking(text: str) -> str:
    """`text` without the `<think>…</think>` block it starts with (an unclosed one runs to
    the end); the text `<think>` later on, e.g. in code, is kept."""
    text = text[:MAX_REPLY_CHARS]
    match = _THINK.match(text)
    return (text[match.end() :] if match else text).strip()


def strip_fences(code: str) -> str:
    """The code of `code`'s fenced block (`fenced_code`), or `code` itself when it has none
    or is Python as it stands (code that builds a markdown fence in a string)."""
    found = fenced_code(code)
    if found is None or _compiles(code):
        return code.strip()
    return found


def _compiles(code: str) -> bool:
    try:
        compile(code.strip(), "<reply>", "exec", dont_inherit=True)
    except Exception:  # SyntaxError, a NUL (ValueError), too deep (RecursionError, 3.11)
        return False
    return True


def fenced_code(text: str) -> str | None:
    """The code of the first ```python (or ```py) block in `text` that compiles, else of
    its first ```python block; with none, of its first bare ``` block that compiles; None
    otherwise.
    Prose around the block, and blocks of another language (```sql, ```bash, ```json),
    are not code: a block followed by a line of explanation, or an SQL sample before the
    Python, ran prose or the sample, and a bare "expected output" block before the Python
    ran as the task's code (outside attack 147).
    An unclosed block runs to the end. Read line by line: linear in the text."""
    blocks: list[tuple[str, list[str]]] = []
    inside: list[str] | None = None
    for line in text.split("\n"):  # not splitlines: \x1e or \u2028 may be in a string
        mark = line.strip()
        if inside is None and mark.startswith("```"):
            inside = []
            blocks.append((mark[3:].strip().lower(), inside))
        elif inside is not None and mark == "```":
            inside = None
        elif inside is not None:
            inside.append(line)
    python = ["\n".join(b).strip() for lang, b in blocks if lang in _PYTHON]
    if any(python):  # the first that compiles, else the first (its error is the model's)
        first = next(code for code in python if code)
        return next((code for code in python if code and _compiles(code)), first)
    # A bare block only when it compiles (a lone closing fence after the code opened an
    # empty one, or one of prose, and "finished" ended the task unrun: review 150), and
    # one that is not a plain value first ("expected output: {'count': 3}": review 151).
    bare = [c for lang, b in blocks if not lang if _compiles(c := "\n".join(b).strip()) and c]
    chosen = next((c for c in bare if not _is_value(c)), bare[0] if bare else None)
    if chosen is None and python:
        return ""  # a python block left empty: no code, said so
    return chosen


def _is_value(code: str) -> bool:
    try:
        ast.literal_eval(code)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False
    return True


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
    """The code: a `code` section (unfenced), else the fenced block of the text; "" for an
    explicitly empty code section; None when there is none at all."""
    if section is not None:
        return strip_fences(section)
    return fenced_code(text)


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
