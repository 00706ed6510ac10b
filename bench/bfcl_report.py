"""Tool search on the public function-calling benchmark bfcl-eval (BFCL v4): report only.

Never tune anything on this report: it is here to show how the search does on requests and
function docs nobody in this project wrote.

Source: the `bfcl-eval` wheel from PyPI, read as a zip or an extracted directory (`--wheel`),
never installed and never a project dependency; without `--wheel`, `pip download --no-deps
bfcl-eval==VERSION` (the version first measured) into `<cache root>/mcp-code-mode/bfcl/`.
Inside, `bfcl_eval/data/` holds one JSON-lines file per category,
`BFCL_v4_<category>.json` (an `id`, a `question`: a list of turns, each a list of chat messages,
and a `function` list of docs: name, description, parameters), the ground truth in
`possible_answer/BFCL_v4_<category>.json` (the calls, `{name: arguments}`), and the multi-turn
categories' function docs in `multi_turn_func_doc/<class file>.json`.

Catalog: every category's function docs (and every multi-turn doc file) pooled, deduplicated by
name + description (the first seen wins, so a same-named doc with another description stays as
another tool). A function becomes an MCP tool: description as is, inputSchema = its parameters
with BFCL's own type names mapped to JSON Schema the way BFCL maps them for OpenAI-style models
(`bfcl_eval.constants.type_mappings.GORILLA_TO_OPENAPI`: dict -> object, float -> number, ...).
Servers: a dotted name is split at its first '.' (`math.factorial` -> server `math`, tool
`factorial`); an undotted one goes on its category family's server (`bfcl_python`,
`bfcl_java`, `bfcl_javascript`, `bfcl_live`), a multi-turn one on its doc file's server
(`gorilla_file_system`, `trading_bot`, ...). A tool name already taken on its server gets `_2`,
`_3`. No server has a description (BFCL has none).

Questions: the query is the first turn's user text. Expected: every distinct function the
ground truth calls (for multi_turn_base, the calls answering the first turn). A hit is any tool
with that function name (same-named docs from other questions count, see the note printed
with the tables); the row "pooled, own doc only" counts only the doc the question itself
shipped. recall@k: the share of a question's expected functions in the top k, averaged over
questions (so recall@1 is at most 1/n for a question calling n functions); nDCG@10: binary
gain, each expected function counted at its first hit.
Irrelevance categories (no function fits) report the share answered with an empty list.

Left out: live_relevance (no ground truth of which function fits), memory and web_search (the
ground truth is an answer, not a call), format_sensitivity (ids only), the multi_turn variants
long_context / miss_func / miss_param (their first turn repeats multi_turn_base's in 195 / 189
/ 117 of 200 questions; they differ in later turns and state), and `unused_datasets/`.

    python -m bench.bfcl_report [--wheel PATH]
"""

from __future__ import annotations

import argparse
import json
import math
import re
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp import types as mcp_types

from bench.search_quality import PlainBM25, Ranker, ours
from mcp_code_mode.catalog import Catalog
from mcp_code_mode.embeddings import EmbeddingStore
from mcp_code_mode.settings import cache_root

VERSION = "2026.3.23"
DATA = "bfcl_eval/data/"
FAMILY = {  # category -> the server of its undotted function names
    **dict.fromkeys(
        ("simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance"),
        "bfcl_python",
    ),
    "simple_java": "bfcl_java",
    "simple_javascript": "bfcl_javascript",
    **dict.fromkeys(
        (
            "live_simple",
            "live_multiple",
            "live_parallel",
            "live_parallel_multiple",
            "live_irrelevance",
            "live_relevance",
        ),
        "bfcl_live",
    ),
}
IRRELEVANCE = ("irrelevance", "live_irrelevance")
UNANSWERED = (*IRRELEVANCE, "live_relevance")  # no possible_answer file
MULTI_TURN = "multi_turn_base"
CLASS_FILES = {  # bfcl_eval.constants.executable_backend_config.MULTI_TURN_FUNC_DOC_FILE_MAPPING
    "GorillaFileSystem": "gorilla_file_system",
    "MathAPI": "math_api",
    "MessageAPI": "message_api",
    "TwitterAPI": "posting_api",
    "TicketAPI": "ticket_api",
    "TradingBot": "trading_bot",
    "TravelAPI": "travel_booking",
    "VehicleControlAPI": "vehicle_control",
    "WebSearchAPI": "web_search",
    "MemoryAPI_kv": "memory_kv",
    "MemoryAPI_vector": "memory_vector",
    "MemoryAPI_rec_sum": "memory_rec_sum",
}
TYPES = {  # GORILLA_TO_OPENAPI, the names that change
    "float": "number",
    "bool": "boolean",
    "list": "array",
    "dict": "object",
    "tuple": "array",
    "any": "string",
    "byte": "integer",
    "short": "integer",
    "long": "integer",
    "double": "number",
    "char": "string",
    "ArrayList": "array",
    "Array": "array",
    "HashMap": "object",
    "Hashtable": "object",
    "Queue": "array",
    "Stack": "array",
    "Any": "string",
    "String": "string",
    "Bigint": "integer",
}
KS = (1, 5, 10)
Key = tuple[str, str]  # (server, tool)


class Source:
    """The data files of a bfcl-eval wheel, or of a directory it was extracted to."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.zip = zipfile.ZipFile(path) if path.is_file() else None
        self.root = path / DATA if (path / DATA).is_dir() else path

    def names(self, folder: str) -> list[str]:
        """The `.json` files directly in `folder` (relative to the data directory)."""
        if self.zip is not None:
            prefix = DATA + folder
            found = [n[len(prefix) :] for n in self.zip.namelist() if n.startswith(prefix)]
            return sorted(n for n in found if n.endswith(".json") and "/" not in n)
        return sorted(p.name for p in (self.root / folder).glob("*.json"))

    def lines(self, name: str) -> list[dict[str, Any]]:
        """One JSON object per line of `name` (relative to the data directory)."""
        if self.zip is not None:
            text = self.zip.read(DATA + name).decode()
        else:
            text = (self.root / name).read_text()
        return [json.loads(line) for line in text.splitlines() if line.strip()]


def schema(value: Any) -> Any:
    """BFCL parameters as JSON Schema: every `type` name mapped as BFCL maps it for OpenAI."""
    if isinstance(value, list):
        return [schema(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {k: schema(v) for k, v in value.items()}
    if isinstance(out.get("type"), str):
        out["type"] = TYPES.get(out["type"], out["type"])
    return out


def placement(name: str, home: str) -> Key:
    """(server, tool) for a function: split at the first '.', else on the `home` server."""
    server, dot, tool = name.partition(".")
    return (server, tool) if dot and server and tool else (home, name)


@dataclass
class Pool:
    """The pooled catalog: MCP tools per server, and where each function doc went."""

    tools: dict[str, dict[str, mcp_types.Tool]] = field(default_factory=dict)
    by_doc: dict[tuple[str, str], Key] = field(default_factory=dict)
    by_name: dict[str, set[Key]] = field(default_factory=dict)

    def add(self, doc: Mapping[str, Any], home: str) -> Key:
        """Add a function doc (once per name + description) on its server; its (server, tool)."""
        name, description = doc["name"], doc.get("description", "")
        if (name, description) in self.by_doc:
            return self.by_doc[(name, description)]
        server, tool = placement(name, home)
        taken = self.tools.setdefault(server, {})
        unique, n = tool, 1
        while unique in taken:
            n += 1
            unique = f"{tool}_{n}"
        parameters = schema(doc.get("parameters") or {"type": "dict", "properties": {}})
        taken[unique] = mcp_types.Tool(
            name=unique, description=description, input_schema={**parameters, "type": "object"}
        )
        key = (server, unique)
        self.by_doc[(name, description)] = key
        self.by_name.setdefault(name, set()).add(key)
        return key

    def size(self) -> int:
        return sum(len(tools) for tools in self.tools.values())

    def mcp_tools(self) -> dict[str, list[mcp_types.Tool]]:
        return {server: list(tools.values()) for server, tools in self.tools.items()}


@dataclass(frozen=True)
class Question:
    category: str
    text: str
    names: tuple[str, ...]  # the distinct functions the ground truth calls
    own: tuple[frozenset[Key], ...]  # per name, the tool made from the question's own doc


def user_text(question: Sequence[Sequence[Mapping[str, Any]]]) -> str:
    """The first turn's user messages, one per line."""
    turn = question[0] if question else []
    return "\n".join(str(m.get("content", "")) for m in turn if m.get("role") == "user")


def called(ground_truth: Sequence[Any]) -> tuple[str, ...]:
    """The distinct function names, in order, of AST ground truth (`[{name: args}, ...]`) or of
    one multi-turn turn (`["cd(folder='x')", ...]`)."""
    names: list[str] = []
    for call in ground_truth:
        found = list(call) if isinstance(call, dict) else re.findall(r"^\s*([\w.]+)\(", call)
        names += [n for n in found if n not in names]
    return tuple(names)


def ast_questions(source: Source, pool: Pool, category: str) -> list[Question]:
    """A single-turn category's questions; their docs go into `pool` on the way."""
    answers = {}
    if category not in UNANSWERED:
        answers = {
            a["id"]: a["ground_truth"]
            for a in source.lines(f"possible_answer/BFCL_v4_{category}.json")
        }
    out = []
    for entry in source.lines(f"BFCL_v4_{category}.json"):
        docs = {d["name"]: pool.add(d, FAMILY[category]) for d in entry["function"]}
        names = called(answers.get(entry["id"], []))
        own = tuple(frozenset({docs[n]} if n in docs else ()) for n in names)
        out.append(Question(category, user_text(entry["question"]), names, own))
    return out


def multi_turn_questions(source: Source, pool: Pool) -> list[Question]:
    """multi_turn_base: every doc file pooled; the query is the first turn."""
    by_file = {}
    for name in source.names("multi_turn_func_doc/"):
        stem = name.removesuffix(".json")
        docs = source.lines(f"multi_turn_func_doc/{name}")
        by_file[stem] = {d["name"]: pool.add(d, stem) for d in docs}
    answers = {
        a["id"]: a["ground_truth"]
        for a in source.lines(f"possible_answer/BFCL_v4_{MULTI_TURN}.json")
    }
    out = []
    for entry in source.lines(f"BFCL_v4_{MULTI_TURN}.json"):
        names = called(answers[entry["id"]][0])
        files = [by_file.get(CLASS_FILES.get(c, ""), {}) for c in entry["involved_classes"]]
        own = tuple(frozenset(f[n] for f in files if n in f) for n in names)
        out.append(Question(MULTI_TURN, user_text(entry["question"]), names, own))
    return out


def load(source: Source) -> tuple[Pool, list[Question]]:
    """The pooled catalog and every question reported on, in category order."""
    pool, present = Pool(), set(source.names(""))
    categories = [c for c in FAMILY if f"BFCL_v4_{c}.json" in present]
    questions = [q for c in categories for q in ast_questions(source, pool, c)]
    questions += multi_turn_questions(source, pool)
    return pool, [q for q in questions if q.category != "live_relevance"]


def score(found: Sequence[Key], expected: Sequence[frozenset[Key]]) -> dict[str, float]:
    """recall@1/@5/@10 (the share of expected functions found) and nDCG@10 of one ranking."""
    if not expected:
        return {}
    ranks = [next((i for i, k in enumerate(found) if k in ok), None) for ok in expected]
    out = {f"recall@{k}": sum(r is not None and r < k for r in ranks) / len(ranks) for k in KS}
    dcg = sum(1 / math.log2(r + 2) for r in ranks if r is not None and r < 10)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(ranks), 10)))
    return {**out, "nDCG@10": dcg / ideal}


def mean(rows: Sequence[Mapping[str, float]]) -> dict[str, float]:
    return {m: sum(r[m] for r in rows) / len(rows) for m in rows[0]} if rows else {}


def evaluate(ranker: Ranker, pool: Pool, questions: Sequence[Question]) -> dict[str, Any]:
    """Per category, `pooled`, `live` and `pooled, own doc only` scores; the share of empty
    answers per irrelevance category."""
    by: dict[str, list[dict[str, float]]] = {}
    own: list[dict[str, float]] = []
    empty: dict[str, list[bool]] = {}
    for q in questions:
        found = ranker(q.text, 10)
        if q.category in IRRELEVANCE:
            empty.setdefault(q.category, []).append(not found)
            continue
        by_name = [frozenset(pool.by_name.get(n, ())) for n in q.names]
        by.setdefault(q.category, []).append(score(found, by_name))
        own.append(score(found, q.own))
    scores = {c: (len(rows), mean(rows)) for c, rows in by.items()}
    every = [r for rows in by.values() for r in rows]
    live = [r for c, rows in by.items() if c.startswith("live_") for r in rows]
    scores["pooled"] = (len(every), mean(every))
    scores["live"] = (len(live), mean(live))
    scores["pooled, own doc only"] = (len(own), mean(own))
    return {"scores": scores, "empty": {c: (len(v), sum(v) / len(v)) for c, v in empty.items()}}


def table(name: str, scores: Mapping[str, tuple[int, Mapping[str, float]]]) -> list[str]:
    lines = [f"**{name}**", "", "| category | n | recall@1 | recall@5 | recall@10 | nDCG@10 |"]
    lines.append("| --- | ---: | ---: | ---: | ---: | ---: |")
    for category, (n, s) in scores.items():
        cells = " | ".join(f"{s[m]:.3f}" for m in (*[f"recall@{k}" for k in KS], "nDCG@10"))
        lines.append(f"| {category} | {n} | {cells} |")
    return lines


def wheel(path: Path | None) -> Path:
    """`path`, else the pinned wheel in the cache directory (downloaded there when absent)."""
    if path is not None:
        return path
    cache = cache_root() / "bfcl"
    found = sorted(cache.glob(f"bfcl_eval-{VERSION}-*.whl"))
    if not found:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(cache)]
        subprocess.run([*command, f"bfcl-eval=={VERSION}"], check=True)
        found = sorted(cache.glob(f"bfcl_eval-{VERSION}-*.whl"))
    return found[0]


def shared_names(pool: Pool, questions: Iterable[Question]) -> tuple[int, int]:
    """How many expected function names have more than one doc in the catalog, of all."""
    names = {n for q in questions if q.category not in IRRELEVANCE for n in q.names}
    return sum(len(pool.by_name.get(n, ())) > 1 for n in names), len(names)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", type=Path, help="a bfcl-eval wheel or extracted directory")
    path = wheel(parser.parse_args(argv).wheel)
    started = time.perf_counter()
    pool, questions = load(Source(path))
    tools = pool.mcp_tools()
    built = time.perf_counter()
    catalog = Catalog(tools, {}, embeddings=EmbeddingStore(None), background=False)
    semantic = catalog._built().result()._ranker.semantic is not None  # bench-only access
    rankers: dict[str, Ranker] = {"mcp-code-mode": ours(catalog), "plain BM25": PlainBM25(tools)}
    indexed = time.perf_counter()
    results = {name: evaluate(r, pool, questions) for name, r in rankers.items()}
    done = time.perf_counter()
    shared, names = shared_names(pool, questions)
    print(f"{path.name}: {pool.size()} tools on {len(tools)} servers; embeddings {semantic}")
    print(f"{shared} of {names} expected function names have more than one doc in the catalog")
    for name, result in results.items():
        print("\n".join(["", *table(name, result["scores"])]))
    print("\n| ranker | category | n | nothing fits (empty answer) |\n| --- | --- | ---: | ---: |")
    for name, result in results.items():
        for category, (n, share) in result["empty"].items():
            print(f"| {name} | {category} | {n} | {share:.3f} |")
    print(
        f"\nload {built - started:.1f} s, index {indexed - built:.1f} s, "
        f"{len(questions)} queries × {len(rankers)} rankers {done - indexed:.1f} s"
    )


if __name__ == "__main__":
    main()
