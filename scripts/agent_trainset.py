"""A small trainset of tasks over the demo upstreams, a metric, and an optimizer run.

    python scripts/agent_trainset.py      # needs DSPY_LM (and a key or DSPY_API_BASE) in .env

Compiles the agent with dspy.BootstrapFewShot on TRAINSET and saves the result to
`agent_compiled.json`; load it later with `agent.load("agent_compiled.json")`.
"""

from __future__ import annotations

import asyncio
import re

import dspy

from mcp_code_mode.agent import agent_for, make_lm
from mcp_code_mode.gateway import Gateway
from mcp_code_mode.settings import Settings

TRAINSET = [
    dspy.Example(task="How many customers are in Germany (country DE)?", answer="22"),
    dspy.Example(task="How many refunded orders have an amount above 850?", answer="16"),
    dspy.Example(task="What is the total amount of paid orders?", answer="101739.84"),
    dspy.Example(task="Which note mentions the supplier? Give its id.", answer="1"),
    dspy.Example(task="How many text files can the notes server read?", answer="2"),
    dspy.Example(task="How many orders does customer 7 have?", answer="3"),
]
TRAINSET = [example.with_inputs("task") for example in TRAINSET]
NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?!\w)")


def metric(example: dspy.Example, prediction: dspy.Prediction, trace: object = None) -> bool:
    """Right when the agent finished, its last step ran, and the expected answer is one of
    the answer's numbers exactly ("123456" is not "1"; "22.0" is "22")."""
    steps = getattr(prediction, "steps", None) or []
    if not getattr(prediction, "finished", False) or not steps or not steps[-1]["ok"]:
        return False
    expected = float(example.answer)
    return any(float(n) == expected for n in NUMBER.findall(str(prediction.answer)))


async def main() -> None:
    settings = Settings()
    lm = make_lm(settings)
    async with Gateway.from_settings(settings) as gateway:
        agent = agent_for(gateway, "customers, orders and notes")
        optimizer = dspy.BootstrapFewShot(metric=metric, max_bootstrapped_demos=2)
        with dspy.context(lm=lm):
            # Optimizers are synchronous: run them off the loop the gateway lives on.
            compiled = await asyncio.to_thread(optimizer.compile, agent, trainset=TRAINSET)
        compiled.save("agent_compiled.json")
        print("saved agent_compiled.json")


if __name__ == "__main__":
    asyncio.run(main())
