"""The agent on an evaluation set over the demo config, checked exactly.

    python -m bench.agent              # replays recorded replies of a real small model
    python -m bench.agent --live       # the model DSPY_LM / DSPY_API_BASE name (.env or env)

Each task has an exact checker (the expected number is one of the answer's numbers; "123456"
is not "1"; an impossible task is right only when the run says it did not finish). Without
`--live`, requests go to a llama.cpp-like stub on 127.0.0.1 answering with SmolLM2-135M's
recorded replies (tests/data/agent_replies, picked by kind with a seeded RNG): that measures
robustness only (exceptions, claimed successes, bounds), not how well a model solves tasks.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import Section, Table, bench_settings, demo_servers, p50, write_config
from mcp_code_mode.agent import make_lm, run_task
from mcp_code_mode.config import load_config
from mcp_code_mode.gateway import Gateway
from mcp_code_mode.settings import Settings
from tests.servers.stub_lm import Replay, serve_stub

NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?!\w)")
SEEDS = (0, 1, 2, 3, 4)
MAX_STEPS = 6
MAX_TOKENS = 800


@dataclass(frozen=True)
class Task:
    text: str
    expected: float | None  # None: impossible here, right only when not finished


TASKS = [
    Task("How many customers are in Germany (country DE)?", 22),
    Task("How many refunded orders have an amount above 850?", 16),
    Task("What is the total amount of paid orders?", 101739.84),
    Task("How many orders does customer 7 have?", 3),
    Task("Which note mentions the supplier? Give its id.", 1),
    Task("How many text files can the notes server read?", 2),
    Task("How many notes are there?", 3),
    Task("How many orders were refunded?", 253),
    Task("What is ACME's stock price today?", None),
]


def correct(task: Task, result: dict[str, Any]) -> bool:
    if task.expected is None:
        return not result["finished"]
    numbers = [float(n) for n in NUMBER.findall(str(result["answer"]))]
    return bool(result["finished"]) and task.expected in numbers


def _settings(api_base: str | None, live: Settings | None) -> Settings:
    agent = {"dspy_max_steps": MAX_STEPS, "dspy_max_tokens": MAX_TOKENS, "dspy_num_retries": 0}
    if live is not None:
        return bench_settings(
            dspy_lm=live.dspy_lm, dspy_api_base=live.dspy_api_base, dspy_adapter=live.dspy_adapter
        ).model_copy(update=agent)
    return bench_settings(dspy_lm="openai/smollm2-135m", dspy_api_base=api_base, **agent)


async def _runs(gateway: Gateway, settings: Settings, seeds: Sequence[int]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    gateway.settings = settings
    lm = make_lm(settings)
    for seed in seeds:
        for task in TASKS:
            started = time.perf_counter()
            try:
                result = await run_task(gateway, lm, task.text)
                crashed = None
            except Exception as exc:  # counted: the acceptance is that there are none
                result, crashed = None, f"{type(exc).__name__}: {exc}"
            rows.append(
                {
                    "seed": seed,
                    "task": task,
                    "result": result,
                    "crashed": crashed,
                    "s": time.perf_counter() - started,
                }
            )
    return rows


def _summary(label: str, rows: list[dict[str, Any]], requests: list[dict[str, Any]]) -> list[Any]:
    done = [r for r in rows if r["result"] is not None]
    results = [r["result"] for r in done]
    claimed = [x for x in results if x["finished"] and not any(s["ok"] for s in x["steps"])]
    bounded = [b for b in requests if "max_tokens" in b and "max_completion_tokens" in b]
    steps = [len(x["steps"]) for x in results]
    tokens = [x["tokens"]["prompt"] + x["tokens"]["completion"] for x in results]
    return [
        label,
        len(rows),
        len(rows) - len(done),
        sum(x["finished"] for x in results),
        len(claimed),
        sum(correct(r["task"], r["result"]) for r in done),
        f"{sum(steps) / max(len(steps), 1):.1f} / {max(steps, default=0)}",
        f"{len(bounded)}/{len(requests)}" if requests else "n/a",
        f"{p50(tokens):,.0f}" if tokens else "-",
        f"{p50([r['s'] for r in rows]):.2f}",
    ]


async def run(live: bool) -> Section:
    table = Table(
        [
            "model (replies)",
            "runs",
            "exceptions",
            "finished",
            "finished with no step run",
            "correct (exact)",
            "steps mean / max",
            "requests bounded",
            "tokens p50",
            "s p50",
        ]
    )
    with tempfile.TemporaryDirectory() as tmp:
        config = load_config(write_config(Path(tmp), demo_servers()))
        async with Gateway(bench_settings(), config) as gateway:
            if live:
                settings = _settings(None, Settings())
                rows = await _runs(gateway, settings, SEEDS[:1])
                table.rows.append(_summary(str(settings.dspy_lm), rows, []))
            else:
                with serve_stub(Replay(0)) as stub:
                    settings = _settings(stub.api_base, None)
                    for seed in SEEDS:
                        stub.replies = Replay(seed)
                        rows = await _runs(gateway, settings, [seed])
                        table.rows.append(
                            _summary(f"SmolLM2-135M, seed {seed}", rows, stub.requests)
                        )
                        stub.requests.clear()
    section = Section(
        "Agent: robustness and exact success",
        f"`python -m bench.agent{' --live' if live else ''}`: the {len(TASKS)} tasks of "
        f"`bench/agent.py` over the demo config (one impossible), DSPY_MAX_STEPS={MAX_STEPS}, "
        f"DSPY_MAX_TOKENS={MAX_TOKENS}, exact checkers. "
        + (
            "A live model, as configured."
            if live
            else "Replayed: SmolLM2-135M-Instruct's recorded replies (llama.cpp, Q4_1), "
            "picked by kind with a seeded RNG; robustness figures only."
        ),
    )
    section.tables.append(("", table))
    return section


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--live", action="store_true", help="use the LM the settings name")
    args = parser.parse_args(argv)
    section = asyncio.run(run(args.live))
    print(section.intro)
    for _, table in section.tables:
        print(table.markdown())


if __name__ == "__main__":
    sys.exit(main())
