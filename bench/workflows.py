"""Workflow token savings: the same task as a direct tool-calling transcript and as code.

Each workflow runs twice, against two separate sets of the demo upstream processes (started
once; both sets see the same workflows in the same order, so their state stays alike):

* **direct**: the calls an agent connected straight to the upstreams has to make, made for
  real over stdio. Its context holds every call and every result (the text content the
  client hands the model), after the upstreams' tool definitions.
* **code mode**: one `execute_code` snippet through our server (in-memory fastmcp Client).
  Its context holds the code and the returned result, after our tools/list and
  instructions. The strict column adds a `get_tool_docs` call per server the code uses.

Tool definitions count, on both sides alike, each tool's name, description and input
schema plus the server's instructions. The answers of both runs are compared, and where a
workflow writes, a read-back of what it wrote too, so a saving never comes from skipping
work.
"""

from __future__ import annotations

import json
import tempfile
from collections import defaultdict
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastmcp import Client
from mcp import types as mcp_types

from bench import plots
from bench.common import (
    Section,
    Table,
    bench_settings,
    demo_servers,
    tokens,
    tools_list_payload,
    write_config,
)
from bench.footprint import instructions_tokens
from mcp_code_mode.config import load_config
from mcp_code_mode.executor_server import build_server
from mcp_code_mode.gateway import Gateway
from mcp_code_mode.tool_results import unwrap_result

Call = Callable[[str, str, dict[str, Any]], Awaitable[Any]]
DATA_HEAVY_TOKENS = 2000  # a workflow whose direct results pass this is "data-heavy"
TARGET = 0.95


@dataclass(frozen=True)
class Workflow:
    name: str
    task: str
    servers: tuple[str, ...]
    code: str
    direct: Callable[[Call], Awaitable[Any]]
    """Makes the direct calls in order and returns the answer from their results."""
    compare: Callable[[Any], Any] = lambda answer: answer
    """The part of the answer both runs must agree on."""
    read_back: tuple[str, str, dict[str, Any]] | None = None
    """A call whose result, after the workflow, must be the same on both sides..."""
    read_back_key: Callable[[Any], Any] = lambda result: result
    """... as seen through this (e.g. ignoring ids given in a concurrent run's order)."""


async def _big_refunds(call: Call) -> Any:
    orders = await call("data", "list_orders", {"status": "refunded"})
    big = [o["amount"] for o in orders if o["amount"] > 850]
    return {"count": len(big), "largest": max(big)}


async def _refunds_by_country(call: Call) -> Any:
    customers = await call("data", "list_customers", {})
    orders = await call("data", "list_orders", {"status": "refunded"})
    country = {c["id"]: c["country"] for c in customers}
    totals: dict[str, float] = defaultdict(float)
    for o in orders:
        totals[country[o["customer_id"]]] += o["amount"]
    top = sorted(totals.items(), key=lambda kv: -kv[1])[:3]
    return [[c, round(v, 2)] for c, v in top]


async def _top_customers(call: Call) -> Any:
    orders = await call("data", "list_orders", {"status": "paid"})
    paid: dict[int, float] = defaultdict(float)
    for o in orders:
        paid[o["customer_id"]] += o["amount"]
    top = sorted(paid.items(), key=lambda kv: -kv[1])[:5]
    out = []
    for customer_id, total in top:
        c = await call("data", "get_customer", {"customer_id": customer_id})
        out.append({"name": c["name"], "tier": c["tier"], "paid": round(total, 2)})
    return out


async def _follow_ups(call: Call) -> Any:
    customers = await call("data", "list_customers", {"country": "DE"})
    pending = await call("data", "list_orders", {"status": "pending"})
    enterprise = {c["id"]: c["name"] for c in customers if c["tier"] == "enterprise"}
    due = sorted({o["customer_id"] for o in pending if o["customer_id"] in enterprise})
    for customer_id in due:
        text = f"Follow up with {enterprise[customer_id]} about their pending order"
        await call("notes", "add_note", {"text": text, "tags": ["follow-up"]})
    return len(due)


async def _files_grep(call: Call) -> Any:
    names = await call("notes", "list_files", {})
    hits = []
    for name in names:
        text = await call("notes", "read_file", {"name": name})
        hits += [f"{name}: {line}" for line in text.splitlines() if "refund" in line.lower()]
    return hits


async def _urgent_note(call: Call) -> Any:
    notes = await call("notes", "list_notes", {"tag": "urgent"})
    return [n["text"] for n in notes]


async def _order_counts(call: Call) -> Any:
    stats = await call("data", "order-stats", {})
    return stats["count_by_status"]["pending"]


async def _tokyo_time(call: Call) -> Any:
    now = await call("time", "get_current_time", {"timezone": "Asia/Tokyo"})
    meeting = await call(
        "time",
        "convert_time",
        {
            "source_timezone": "America/New_York",
            "time": "09:00",
            "target_timezone": "Europe/London",
        },
    )
    return {"tokyo": now["datetime"], "london": meeting["target"]["datetime"]}


WORKFLOWS = (
    Workflow(
        "big refunds",
        "How many refunded orders are above 850, and what is the largest?",
        ("data",),
        "orders = tools.data.list_orders(status='refunded')\n"
        "big = [o['amount'] for o in orders if o['amount'] > 850]\n"
        "{'count': len(big), 'largest': max(big)}",
        _big_refunds,
    ),
    Workflow(
        "refunds by country (join)",
        "Which three countries have the most refunded order value?",
        ("data",),
        "customers, orders = call_tools([\n"
        "    ('data', 'list_customers', {}),\n"
        "    ('data', 'list_orders', {'status': 'refunded'}),\n"
        "])\n"
        "country = {c['id']: c['country'] for c in customers}\n"
        "totals = {}\n"
        "for o in orders:\n"
        "    key = country[o['customer_id']]\n"
        "    totals[key] = totals.get(key, 0) + o['amount']\n"
        "top = sorted(totals.items(), key=lambda kv: -kv[1])[:3]\n"
        "[[c, round(v, 2)] for c, v in top]",
        _refunds_by_country,
    ),
    Workflow(
        "top customers (list + lookups)",
        "Who are the five customers with the highest paid order value (name, tier, total)?",
        ("data",),
        "paid = {}\n"
        "for o in tools.data.list_orders(status='paid'):\n"
        "    paid[o['customer_id']] = paid.get(o['customer_id'], 0) + o['amount']\n"
        "top = sorted(paid.items(), key=lambda kv: -kv[1])[:5]\n"
        "found = call_tools([('data', 'get_customer', {'customer_id': i}) for i, _ in top])\n"
        "[{'name': c['name'], 'tier': c['tier'], 'paid': round(t, 2)}\n"
        " for c, (_, t) in zip(found, top)]",
        _top_customers,
    ),
    Workflow(
        "follow-up notes (bulk write)",
        "Add a follow-up note for every German enterprise customer with a pending order.",
        ("data", "notes"),
        "customers = tools.data.list_customers(country='DE')\n"
        "enterprise = {c['id']: c['name'] for c in customers if c['tier'] == 'enterprise'}\n"
        "pending = tools.data.list_orders(status='pending')\n"
        "due = sorted({o['customer_id'] for o in pending if o['customer_id'] in enterprise})\n"
        "call_tools([('notes', 'add_note', {\n"
        "    'text': f'Follow up with {enterprise[i]} about their pending order',\n"
        "    'tags': ['follow-up']}) for i in due])\n"
        "len(due)",
        _follow_ups,
        read_back=("notes", "list_notes", {"tag": "follow-up"}),
        read_back_key=lambda notes: sorted(n["text"] for n in notes),
    ),
    Workflow(
        "grep the text files",
        "Which lines of the shared text files mention refunds?",
        ("notes",),
        "hits = []\n"
        "for name in tools.notes.list_files():\n"
        "    text = tools.notes.read_file(name=name)\n"
        "    hits += [f'{name}: {line}' for line in text.splitlines()\n"
        "             if 'refund' in line.lower()]\n"
        "hits",
        _files_grep,
    ),
    Workflow(
        "urgent notes (one small call)",
        "What do my urgent notes say?",
        ("notes",),
        "[n['text'] for n in tools.notes.list_notes(tag='urgent')]",
        _urgent_note,
    ),
    Workflow(
        "pending count (one tiny call)",
        "How many orders are pending?",
        ("data",),
        "tools.data.order_stats()['count_by_status']['pending']",
        _order_counts,
    ),
    Workflow(
        "two time lookups",
        "What time is it in Tokyo, and what is 09:00 New York time in London?",
        ("time",),
        "now = tools.time.get_current_time(timezone='Asia/Tokyo')\n"
        "meeting = tools.time.convert_time(source_timezone='America/New_York', time='09:00',\n"
        "                                  target_timezone='Europe/London')\n"
        "{'tokyo': now['datetime'], 'london': meeting['target']['datetime']}",
        _tokyo_time,
        compare=lambda answer: answer["london"],  # the current time moves between the runs
    ),
)


def _result_text(result: mcp_types.CallToolResult) -> str:
    """What a client hands the model for a tool result: its text content."""
    return "\n".join(b.text for b in result.content if isinstance(b, mcp_types.TextContent))


def _call_tokens(name: str, args: dict[str, Any]) -> int:
    return tokens({"name": name, "arguments": args})


class Transcript:
    """Tokens of one agent transcript: fixed context, then (call, result) turns."""

    def __init__(self, fixed: int) -> None:
        self.fixed = fixed
        self.turns: list[tuple[int, int]] = []

    def add(self, call: int, result: int) -> None:
        self.turns.append((call, result))

    @property
    def results(self) -> int:
        return sum(r for _, r in self.turns)

    @property
    def task(self) -> int:
        """The calls and results alone (no fixed part)."""
        return sum(c + r for c, r in self.turns)

    @property
    def context(self) -> int:
        """Everything in the context at the end (the fixed part included)."""
        return self.fixed + sum(c + r for c, r in self.turns)

    @property
    def billed(self) -> int:
        """Input tokens summed over the model turns (each turn re-reads the transcript)."""
        total, seen = 0, self.fixed
        for call, result in self.turns:
            total += seen
            seen += call + result
        return total + seen  # the final answering turn


async def run_direct(
    workflow: Workflow, clients: dict[str, Client[Any]], schemas: int
) -> tuple[Transcript, Any]:
    """Make the direct calls over stdio; returns the transcript and the answer."""
    transcript = Transcript(schemas)

    async def call(server: str, tool: str, args: dict[str, Any]) -> Any:
        result = await clients[server].call_tool_mcp(tool, args)
        if result.is_error:
            raise RuntimeError(f"{server}.{tool}: {_result_text(result)}")
        transcript.add(_call_tokens(tool, args), tokens(_result_text(result)))
        return unwrap_result(result)

    return transcript, await workflow.direct(call)


@dataclass(frozen=True)
class CodeRun:
    tokens: int
    """The execute_code call (code) and its result."""
    fixed: int
    """Our tools/list and instructions."""
    log: int
    """Of the result, the `tool_calls` log (one entry per upstream call)."""
    strict: Transcript
    answer: Any


async def run_code(workflow: Workflow, client: Client[Any], ours_tools_list: int) -> CodeRun:
    """One execute_code call, after a `get_tool_docs` call per server it uses."""
    strict = Transcript(ours_tools_list)
    for server in workflow.servers:
        docs = await client.call_tool_mcp("get_tool_docs", {"server": server})
        strict.add(_call_tokens("get_tool_docs", {"server": server}), tokens(_result_text(docs)))
    result = await client.call_tool_mcp("execute_code", {"code": workflow.code})
    payload = json.loads(_result_text(result))
    if not payload["ok"]:
        raise RuntimeError(f"workflow {workflow.name!r} failed in code mode: {payload['error']}")
    code_call = _call_tokens("execute_code", {"code": workflow.code})
    result_tokens = tokens(_result_text(result))
    strict.add(code_call, result_tokens)
    log = tokens(_result_text(result)) - tokens(json.dumps({**payload, "tool_calls": []}))
    return CodeRun(code_call + result_tokens, ours_tools_list, log, strict, payload["result"])


async def _read_back(workflow: Workflow, direct: Client[Any], gateway: Gateway) -> None:
    if workflow.read_back is None:
        return
    server, tool, args = workflow.read_back
    mine = workflow.read_back_key(unwrap_result(await direct.call_tool_mcp(tool, args)))
    theirs = workflow.read_back_key(await gateway.call_tool(server, tool, args))
    if json.dumps(mine) != json.dumps(theirs) or not mine:
        raise RuntimeError(f"workflow {workflow.name!r}: {tool} differs: {mine!r} vs {theirs!r}")


async def run(figures: Path) -> Section:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        config = load_config(write_config(Path(tmp), demo_servers()))
        async with AsyncExitStack() as stack:
            # Direct: the client connects every upstream itself (its own processes).
            clients: dict[str, Client[Any]] = {}
            upstream: list[mcp_types.Tool] = []
            direct_instructions = 0
            for name, server in config.servers.items():
                clients[name] = await stack.enter_async_context(Client(server.to_transport()))
                upstream += await clients[name].list_tools()
                direct_instructions += instructions_tokens(clients[name])
            schemas = tokens(tools_list_payload(upstream)) + direct_instructions
            gw = await stack.enter_async_context(Gateway(bench_settings(), config))
            client = await stack.enter_async_context(Client(build_server(gw)))
            ours = tokens(tools_list_payload(await client.list_tools()))
            ours += instructions_tokens(client)
            for workflow in WORKFLOWS:
                direct, answer = await run_direct(workflow, clients, schemas)
                code = await run_code(workflow, client, ours)
                same = json.dumps(workflow.compare(answer)) == json.dumps(
                    workflow.compare(code.answer)
                )
                if not same:
                    raise RuntimeError(
                        f"workflow {workflow.name!r}: direct answer {answer!r} "
                        f"!= code-mode answer {code.answer!r}"
                    )
                if workflow.read_back:
                    await _read_back(workflow, clients[workflow.read_back[0]], gw)
                rows.append((workflow, direct, code))

    table = Table(
        [
            "workflow",
            "direct calls",
            "direct: calls + results",
            "code mode: code + result",
            "of which tool_calls log",
            "saved per task",
            "direct + tool definitions",
            "code mode + tools/list",
            "saved",
            "strict: + get_tool_docs",
            "strict saved",
            "billed input, direct → strict",
        ]
    )
    heavy_task: list[float] = []
    heavy_whole: list[float] = []
    small_strict: list[float] = []
    plot_rows = []
    for workflow, direct, code in rows:
        task_saved = 1 - code.tokens / direct.task
        whole = code.fixed + code.tokens
        whole_saved = 1 - whole / direct.context
        strict_saved = 1 - code.strict.context / direct.context
        heavy = direct.results >= DATA_HEAVY_TOKENS
        if heavy:
            heavy_task.append(task_saved)
            heavy_whole.append(whole_saved)
        else:
            small_strict.append(strict_saved)
        table.rows.append(
            [
                workflow.name + (" ★" if heavy else ""),
                len(direct.turns),
                direct.task,
                code.tokens,
                code.log,
                f"{task_saved:.1%}",
                direct.context,
                whole,
                f"{whole_saved:.1%}",
                code.strict.context,
                f"{strict_saved:.1%}",
                f"{direct.billed:,} → {code.strict.billed:,}",
            ]
        )
        plot_rows.append(
            plots.WorkflowBars(
                workflow.name + (" ★" if heavy else ""),
                direct.task,
                code.tokens,
                direct.context,
                whole,
                code.strict.context,
            )
        )
    figure = plots.workflows(figures / "workflows.png", plot_rows)
    worst_task, worst_whole = min(heavy_task), min(heavy_whole)
    met = sum(1 for t in heavy_task if t >= TARGET)
    section = Section(
        "Workflow token savings",
        __doc__.split("\n\n", 1)[1].strip() if __doc__ else "",
        tables=[("", table)],
        figures=[("context tokens per workflow (log scale)", figure)],
        notes=[
            f"★ data-heavy: the direct results alone pass {DATA_HEAVY_TOKENS:,} tokens. "
            f"Target ≥ {TARGET:.0%} fewer tokens on these. Per task (code + result against "
            f"calls + results) it is met on {met} of {len(heavy_task)}, the smallest saving "
            f"being {worst_task:.1%}; counting each side's tool definitions, the smallest is "
            f"{worst_whole:.1%}. Where it falls short, the result's `tool_calls` log (one "
            "entry per upstream call, contract §3) and the longer code are most of code "
            "mode's tokens.",
            f"Small workflows are listed as they are. Their direct context is mostly the "
            f"upstream tool definitions ({schemas:,} tokens for the {len(upstream)} demo "
            f"tools), which code mode replaces by its own tools/list and instructions "
            f"({ours:,} tokens); adding the docs of the servers they use (strict), they save "
            f"{min(small_strict, default=0):.0%}–{max(small_strict, default=0):.0%}.",
            "*Billed input* sums the input tokens of every model turn: each turn re-reads "
            "the transcript so far (one turn per call, plus the answering turn).",
        ],
    )
    section.headline["workflows"] = (
        f"{worst_task:.1%}–{max(heavy_task):.1%} fewer tokens per task on the "
        f"{len(heavy_task)} data-heavy workflows (95% met on {met}); "
        f"{worst_whole:.1%}–{max(heavy_whole):.1%} counting each side's tool definitions"
    )
    return section
