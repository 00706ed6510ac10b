"""bench.bfcl_report's mapping and metrics on a tiny hand-made BFCL-shaped fixture (no wheel)."""

from __future__ import annotations

import json
import math
import zipfile
from pathlib import Path
from typing import Any

import pytest

from bench.bfcl_report import (
    Pool,
    Source,
    called,
    evaluate,
    load,
    placement,
    schema,
    score,
    user_text,
)


def _doc(name: str, description: str, **properties: str) -> dict[str, Any]:
    props = {p: {"type": t, "description": p} for p, t in properties.items()}
    return {
        "name": name,
        "description": description,
        "parameters": {"type": "dict", "properties": props},
    }


def _user(text: str) -> list[list[dict[str, str]]]:
    return [[{"role": "system", "content": "be brief"}, {"role": "user", "content": text}]]


FILES: dict[str, list[dict[str, Any]]] = {
    "BFCL_v4_simple_python.json": [
        {
            "id": "s0",
            "question": _user("factorial of 5"),
            "function": [_doc("math.factorial", "Factorial.", number="integer")],
        },
    ],
    "possible_answer/BFCL_v4_simple_python.json": [
        {"id": "s0", "ground_truth": [{"math.factorial": {"number": [5]}}]}
    ],
    "BFCL_v4_parallel.json": [
        {
            "id": "p0",
            "question": _user("weather in Paris and Rome"),
            "function": [_doc("get_weather", "Weather of a city.", city="String")],
        },
    ],
    "possible_answer/BFCL_v4_parallel.json": [
        {
            "id": "p0",
            "ground_truth": [
                {"get_weather": {"city": ["Paris"]}},
                {"get_weather": {"city": ["Rome"]}},
            ],
        },
    ],
    "BFCL_v4_live_simple.json": [
        {
            "id": "l0",
            "question": _user("Pariisin sää"),
            "function": [_doc("get_weather", "Current weather, live.", city="string")],
        },
    ],
    "possible_answer/BFCL_v4_live_simple.json": [
        {"id": "l0", "ground_truth": [{"get_weather": {"city": ["Paris"]}}]}
    ],
    "BFCL_v4_irrelevance.json": [
        {
            "id": "i0",
            "question": _user("tell me a joke"),
            "function": [_doc("math.factorial", "Factorial.", number="integer")],
        },
    ],
    "multi_turn_func_doc/gorilla_file_system.json": [
        _doc("cd", "Change directory.", folder="string"),
        _doc("mv", "Move a file.", source="string"),
    ],
    "BFCL_v4_multi_turn_base.json": [
        {
            "id": "m0",
            "question": [
                [{"role": "user", "content": "move a.txt to tmp"}],
                [{"role": "user", "content": "then list"}],
            ],
            "involved_classes": ["GorillaFileSystem"],
        },
    ],
    "possible_answer/BFCL_v4_multi_turn_base.json": [
        {
            "id": "m0",
            "ground_truth": [
                ["cd(folder='docs')", "mv(source='a.txt', destination='tmp')"],
                ["ls()"],
            ],
        },
    ],
}


@pytest.fixture(params=["directory", "wheel"])
def source(request: pytest.FixtureRequest, tmp_path: Path) -> Source:
    if request.param == "wheel":
        path = tmp_path / "bfcl_eval-0-py3-none-any.whl"
        with zipfile.ZipFile(path, "w") as wheel:
            for name, rows in FILES.items():
                wheel.writestr(f"bfcl_eval/data/{name}", "\n".join(map(json.dumps, rows)))
        return Source(path)
    for name, rows in FILES.items():
        file = tmp_path / "bfcl_eval" / "data" / name
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text("\n".join(map(json.dumps, rows)) + "\n")
    return Source(tmp_path)


def test_placement_splits_at_the_first_dot_else_the_family_server() -> None:
    assert placement("math.factorial", "bfcl_python") == ("math", "factorial")
    assert placement("a.b.c", "bfcl_live") == ("a", "b.c")
    assert placement("get_weather", "bfcl_live") == ("bfcl_live", "get_weather")


def test_schema_maps_bfcl_type_names_and_keeps_a_property_named_type() -> None:
    params = {
        "type": "dict",
        "properties": {
            "type": {"type": "float"},
            "xs": {"type": "tuple", "items": {"type": "String"}},
        },
    }
    assert schema(params) == {
        "type": "object",
        "properties": {
            "type": {"type": "number"},
            "xs": {"type": "array", "items": {"type": "string"}},
        },
    }


def test_pool_dedupes_by_name_and_description_and_renames_a_taken_tool_name() -> None:
    pool = Pool()
    first = pool.add(_doc("get_weather", "A."), "bfcl_live")
    assert pool.add(_doc("get_weather", "A.", other="integer"), "bfcl_live") == first
    second = pool.add(_doc("get_weather", "B."), "bfcl_live")
    assert (first, second) == (("bfcl_live", "get_weather"), ("bfcl_live", "get_weather_2"))
    assert pool.by_name["get_weather"] == {first, second} and pool.size() == 2
    tool = pool.mcp_tools()["bfcl_live"][1]
    assert (tool.name, tool.description, tool.input_schema["type"]) == (
        "get_weather_2",
        "B.",
        "object",
    )


def test_called_reads_ast_and_multi_turn_ground_truth() -> None:
    assert called([{"f": {}}, {"g.h": {}}, {"f": {}}]) == ("f", "g.h")
    assert called(["cd(folder='x')", "mv(source='a', destination='b')", "cd(folder='..')"]) == (
        "cd",
        "mv",
    )
    assert user_text(_user("hello")) == "hello"


def test_score_counts_the_share_of_expected_functions_and_ndcg() -> None:
    a, b, x = ("s", "a"), ("s", "b"), ("s", "x")
    assert score([a, x], [frozenset({a})]) == {
        "recall@1": 1.0,
        "recall@5": 1.0,
        "recall@10": 1.0,
        "nDCG@10": 1.0,
    }
    two = score([x, a, x, x, x, x, b], [frozenset({a}), frozenset({b})])
    ideal = 1 + 1 / math.log2(3)
    assert two == pytest.approx(
        {
            "recall@1": 0.0,
            "recall@5": 0.5,
            "recall@10": 1.0,
            "nDCG@10": (1 / math.log2(3) + 1 / math.log2(8)) / ideal,
        }
    )
    assert score([], [frozenset({a})])["recall@10"] == 0.0


def test_load_and_evaluate_the_fixture(source: Source) -> None:
    pool, questions = load(source)
    assert pool.size() == 5  # math.factorial once, get_weather twice (two descriptions), cd, mv
    assert [(q.category, q.text, q.names) for q in questions] == [
        ("simple_python", "factorial of 5", ("math.factorial",)),
        ("parallel", "weather in Paris and Rome", ("get_weather",)),
        ("irrelevance", "tell me a joke", ()),
        ("live_simple", "Pariisin sää", ("get_weather",)),
        ("multi_turn_base", "move a.txt to tmp", ("cd", "mv")),
    ]
    assert questions[3].own == (frozenset({("bfcl_live", "get_weather")}),)

    def ranker(query: str, k: int) -> list[tuple[str, str]]:
        answers = {"factorial of 5": [("math", "factorial")], "tell me a joke": []}
        return answers.get(query, [("bfcl_python", "get_weather"), ("gorilla_file_system", "mv")])

    result = evaluate(ranker, pool, questions)
    scores = result["scores"]
    assert scores["live_simple"] == (
        1,
        pytest.approx(
            score([("bfcl_python", "get_weather")], [frozenset({("bfcl_python", "get_weather")})])
        ),
    )
    assert scores["live_simple"][1]["recall@1"] == 1.0  # another doc of the same name counts
    assert scores["pooled, own doc only"][1]["recall@1"] == 0.5  # but not for its own doc only
    assert scores["multi_turn_base"][1]["recall@10"] == 0.5
    assert scores["pooled"][0] == 4 and scores["live"][0] == 1
    assert result["empty"] == {"irrelevance": (1, 1.0)}
