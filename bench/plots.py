"""The report's figures (matplotlib, Agg backend, PNG).

Each figure plots the measures of its section's table, under the table's names, and says
in its titles what is plotted and in what unit.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullLocator

__all__ = ["WorkflowBars", "footprint", "latency", "search", "workflows"]

DIRECT, OURS, EXTRA, TARGET = "#c44e52", "#4c72b0", "#8da0cb", "#555555"
_THOUSANDS = FuncFormatter(lambda value, _: f"{value:,.0f}")


@dataclass(frozen=True, slots=True)
class WorkflowBars:
    """One workflow's row of the token table, as the workflow figure needs it."""

    name: str
    direct_task: int  # calls + results
    code_task: int  # code + result
    direct_context: int  # + the upstreams' tool definitions
    code_context: int  # + our tools/list and instructions
    strict_context: int  # + get_tool_docs of the servers the code uses


def _save(fig: Any, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


def _plain_log_ticks(axis: Any, ticks: Sequence[float]) -> None:
    """Label a log axis at the measured values, written out (1,000 rather than 10³)."""
    axis.set_major_locator(FixedLocator(sorted(set(ticks))))
    axis.set_major_formatter(_THOUSANDS)
    axis.set_minor_locator(NullLocator())


def _log_ticks_125(axis: Any) -> None:
    """Label a log axis at 1, 2, 5 times each power of ten, written out (0.5, 1,000)."""
    axis.set_major_locator(LogLocator(subs=(1, 2, 5)))
    axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,.12g}"))
    axis.set_minor_locator(NullLocator())


def footprint(
    path: Path,
    rows: Sequence[Mapping[str, Any]],
    *,
    demo: Mapping[str, Any],
    target: int,
    aim: int,
) -> Path:
    """Left: our tools/list as the contract measures it, against its limits. Right: what
    the model sees (tool definitions + instructions), direct against ours."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.8), layout="constrained")
    demo_label = f"{demo['label']}: {demo['tools']} tools"
    _contract_panel(left, rows, demo, demo_label, target=target, aim=aim)
    _model_panel(right, rows, demo, demo_label)
    fig.suptitle("Context footprint before the first call")
    return _save(fig, path)


def _contract_panel(
    ax: Any,
    rows: Sequence[Mapping[str, Any]],
    demo: Mapping[str, Any],
    demo_label: str,
    *,
    target: int,
    aim: int,
) -> None:
    points = [demo, *rows]
    ax.plot(
        [r["tools"] for r in rows],
        [r["ours_list"] for r in rows],
        "o-",
        color=OURS,
        label="realistic catalogs",
    )
    ax.plot(demo["tools"], demo["ours_list"], "D", color=OURS, mfc="white", label=demo_label)
    for row in points:
        ax.annotate(
            f"{row['ours_list']}",
            (row["tools"], row["ours_list"]),
            xytext=(0, -8),
            textcoords="offset points",
            ha="center",
            va="top",
            fontsize="small",
        )
    ax.axhline(target, color=TARGET, linestyle="--", label=f"limit: ≤ {target} at any size")
    ax.axhline(aim, color=TARGET, linestyle=":", label=f"aim: ≤ {aim} with 5 servers")
    ax.set_ylim(0, target * 1.15)
    ax.set_title("mcp-code-mode tools/list as the contract measures it\n(full payload)")
    ax.set_ylabel("tokens (cl100k_base)")
    ax.legend(loc="lower right", fontsize="small")
    _tools_axis(ax, points)
    # The aim depends on the number of servers: give each point's count on a top axis.
    servers = ax.twiny()
    servers.set_xscale("log")
    servers.set_xlim(ax.get_xlim())
    servers.set_xticks([r["tools"] for r in points], [str(r["servers"]) for r in points])
    servers.xaxis.set_minor_locator(NullLocator())
    servers.set_xlabel("upstream servers", fontsize="small")


def _model_panel(
    ax: Any, rows: Sequence[Mapping[str, Any]], demo: Mapping[str, Any], demo_label: str
) -> None:
    sizes = [r["tools"] for r in rows]
    ax.plot(
        sizes, [r["direct"] for r in rows], "o-", color=DIRECT, label="direct: upstreams' tools"
    )
    ax.plot(sizes, [r["ours"] for r in rows], "o-", color=OURS, label="mcp-code-mode")
    ax.plot(demo["tools"], demo["direct"], "D", color=DIRECT, mfc="white")
    ax.plot(demo["tools"], demo["ours"], "D", color=OURS, mfc="white")
    ax.plot([], [], "D", color="grey", mfc="white", label=demo_label)
    ax.set_yscale("log")
    _log_ticks_125(ax.yaxis)
    ax.set_title(
        "what the model sees, direct and through mcp-code-mode\n(tool definitions + instructions)"
    )
    ax.set_ylabel("tokens (cl100k_base, log scale)")
    ax.legend(loc="upper left", fontsize="small")
    _tools_axis(ax, [demo, *rows])


def _tools_axis(ax: Any, points: Sequence[Mapping[str, Any]]) -> None:
    ax.set_xscale("log")
    _plain_log_ticks(ax.xaxis, [r["tools"] for r in points])
    ax.set_xlabel("tools in the upstream catalog (log scale)")
    ax.grid(True, alpha=0.3)


def _change(code: int, direct: int) -> str:
    saved = 1 - code / direct
    return f"{saved:.0%} fewer" if saved >= 0 else f"{-saved:.0%} more"


def workflows(path: Path, rows: Sequence[WorkflowBars]) -> Path:
    """Tokens per workflow: per task (calls + results against code + result), and with
    each side's tool definitions counted."""
    fig, (task, whole) = plt.subplots(
        1,
        2,
        figsize=(12.5, 0.75 * len(rows) + 2.2),
        sharey=True,
        sharex=True,
        layout="constrained",
    )
    _task_panel(task, rows)
    _whole_panel(whole, rows)
    task.set_yticks(range(len(rows)), [r.name for r in rows])
    task.invert_yaxis()
    for ax in (task, whole):
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(_THOUSANDS)
        ax.set_xlabel("context tokens (cl100k_base, log scale)")
        ax.grid(True, axis="x", alpha=0.3)
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.08), fontsize="small")
    lowest = min(min(r.code_task, r.direct_task) for r in rows)
    highest = max(r.direct_context for r in rows)
    task.set_xlim(lowest / 1.5, highest * 4)  # room for the percentages
    fig.suptitle(
        "Tokens in the model's context per workflow (★ data-heavy); "
        "percentages: code mode's tokens against direct's"
    )
    return _save(fig, path)


def _task_panel(ax: Any, rows: Sequence[WorkflowBars]) -> None:
    y, height = range(len(rows)), 0.36
    ax.barh(
        [i - height / 2 for i in y],
        [r.direct_task for r in rows],
        height,
        color=DIRECT,
        label="direct: calls + results",
    )
    ax.barh(
        [i + height / 2 for i in y],
        [r.code_task for r in rows],
        height,
        color=OURS,
        label="code mode: code + result",
    )
    for i, r in zip(y, rows, strict=True):
        at = max(r.code_task, r.direct_task)
        _label(ax, i + height / 2, at, _change(r.code_task, r.direct_task))
    ax.set_title("per task, without tool definitions")


def _whole_panel(ax: Any, rows: Sequence[WorkflowBars]) -> None:
    y, height = range(len(rows)), 0.27
    ax.barh(
        [i - height for i in y],
        [r.direct_context for r in rows],
        height,
        color=DIRECT,
        label="direct + upstreams' tool definitions",
    )
    ax.barh(
        y,
        [r.code_context for r in rows],
        height,
        color=OURS,
        label="code mode + our tools/list and instructions",
    )
    ax.barh(
        [i + height for i in y],
        [r.strict_context for r in rows],
        height,
        color=EXTRA,
        label="strict: code mode + get_tool_docs",
    )
    for i, r in zip(y, rows, strict=True):
        _label(ax, i, r.code_context, _change(r.code_context, r.direct_context))
        _label(ax, i + height, r.strict_context, _change(r.strict_context, r.direct_context))
    ax.set_title("counting each side's tool definitions")


def _label(ax: Any, y: float, x: float, text: str) -> None:
    ax.annotate(
        text, (x, y), xytext=(4, 0), textcoords="offset points", va="center", fontsize="small"
    )


def latency(path: Path, rows: Sequence[tuple[str, float, float]]) -> Path:
    """p50 bars and p95 ticks per case, names as in the table."""
    fig, ax = plt.subplots(figsize=(9, 0.42 * len(rows) + 1.8), layout="constrained")
    y = list(range(len(rows)))
    bars = ax.barh(y, [r[1] for r in rows], color=OURS, label="p50")
    ticks = ax.scatter(
        [r[2] for r in rows],
        y,
        color=DIRECT,
        marker="|",
        s=250,
        label="p95 (the maximum where a case has fewer than 20 runs)",
        zorder=3,
    )
    ax.set_yticks(y, [r[0] for r in rows])
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(_THOUSANDS)
    lowest = min(r[1] for r in rows)
    highest = max(max(r[1], r[2]) for r in rows)
    ax.set_xlim(min(1, lowest / 2), highest * 2)
    ax.set_xlabel("milliseconds (log scale)")
    ax.set_title("Latency per case, ms: p50 (bar) and p95 (tick)")
    ax.legend(handles=[bars, ticks], loc="upper right", bbox_to_anchor=(1, -0.1), ncol=2)
    ax.grid(True, axis="x", alpha=0.3)
    return _save(fig, path)


def search(
    path: Path,
    recall: Mapping[str, tuple[float, float]],
    timing: Mapping[str, Sequence[tuple[int, float]]],
    *,
    recall_target: float,
    time_target_ms: float,
) -> Path:
    """Left: held-out recall@1 and @5 per ranker. Right: p50 time per query by catalog size."""
    fig, (left, right) = plt.subplots(
        1, 2, figsize=(11.5, 4.6), width_ratios=[3, 2], layout="constrained"
    )
    _recall_panel(left, recall, recall_target)
    _time_panel(right, timing, time_target_ms)
    for ax, below in ((left, -0.34), (right, -0.16)):  # under the slanted ranker names
        handles, labels = ax.get_legend_handles_labels()
        order = sorted(range(len(labels)), key=lambda i: labels[i].startswith("target"))
        ax.legend(
            [handles[i] for i in order],
            [labels[i] for i in order],
            loc="upper center",
            bbox_to_anchor=(0.5, below),
            ncol=3,
            fontsize="small",
        )
    return _save(fig, path)


def _recall_panel(ax: Any, recall: Mapping[str, tuple[float, float]], target: float) -> None:
    names = list(recall)
    width = 0.38
    x = list(range(len(names)))
    for k, (offset, color) in enumerate(((-width / 2, EXTRA), (width / 2, OURS))):
        bars = ax.bar(
            [i + offset for i in x],
            [recall[n][k] for n in names],
            width,
            color=color,
            label=f"recall@{(1, 5)[k]}",
        )
        ax.bar_label(bars, fmt="%.2f", fontsize="small", padding=2)
    ax.axhline(target, color=TARGET, linestyle=":", label=f"target: recall@5 ≥ {target:g}")
    # Slanted: nine names of up to 14 characters would run into each other.
    ax.set_xticks(x, [textwrap.fill(n, 14) for n in names], rotation=30, ha="right")
    ax.set_ylim(0, 1.05)
    ax.set_yticks([i / 5 for i in range(6)])
    ax.set_ylabel("recall (share of queries)")
    ax.set_xlabel(
        "ranker: each adds one step to the one before; the last is mcp-code-mode", labelpad=2
    )
    ax.set_title("search quality on the held-out queries")


def _time_panel(
    ax: Any, timing: Mapping[str, Sequence[tuple[int, float]]], target_ms: float
) -> None:
    sizes: list[int] = []
    for name, points in timing.items():
        color = OURS if name == "mcp-code-mode" else DIRECT
        ax.plot([p[0] for p in points], [p[1] for p in points], "o-", color=color, label=name)
        sizes += [p[0] for p in points]
    ax.axhline(target_ms, color=TARGET, linestyle=":", label=f"target: ≤ {target_ms:g} ms")
    ax.set_xscale("log")
    ax.set_yscale("log")
    _plain_log_ticks(ax.xaxis, sizes)
    _log_ticks_125(ax.yaxis)
    ax.set_ylim(top=target_ms * 2)
    ax.set_xlabel("tools in the catalog (log scale)")
    ax.set_ylabel("p50 ms per query (log scale)")
    ax.set_title("search time per query, in process")
    ax.grid(True, alpha=0.3)
