"""The report's figures (matplotlib, Agg backend, PNG)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt

DIRECT, OURS, EXTRA = "#c44e52", "#4c72b0", "#8da0cb"


def _save(fig: Any, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def footprint(
    path: Path, sizes: Sequence[int], rows: Sequence[Mapping[str, Any]], *, target: int
) -> Path:
    fig, ax = plt.subplots(figsize=(6.4, 4))
    ax.plot(
        sizes,
        [r["direct"] for r in rows],
        "o-",
        color=DIRECT,
        label="direct: upstreams' tools/list",
    )
    ax.plot(sizes, [r["ours"] for r in rows], "o-", color=OURS, label="mcp-code-mode tools/list")
    ax.axhline(target, color="grey", linestyle=":", label=f"target {target} tokens")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("tools in the upstream catalog")
    ax.set_ylabel("tokens (cl100k_base)")
    ax.legend()
    ax.grid(True, which="major", alpha=0.3)
    return _save(fig, path)


def workflows(path: Path, rows: Sequence[tuple[str, int, int, int]]) -> Path:
    fig, ax = plt.subplots(figsize=(7.5, 0.55 * len(rows) + 1.4))
    names = [r[0] for r in rows]
    y = range(len(rows))
    height = 0.27
    ax.barh([i - height for i in y], [r[1] for r in rows], height, color=DIRECT, label="direct")
    ax.barh(y, [r[3] for r in rows], height, color=EXTRA, label="code mode, strict")
    ax.barh([i + height for i in y], [r[2] for r in rows], height, color=OURS, label="code mode")
    ax.set_yticks(list(y), names)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("context tokens")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=3)
    ax.grid(True, axis="x", alpha=0.3)
    return _save(fig, path)


def latency(path: Path, rows: Sequence[tuple[str, float, float]]) -> Path:
    fig, ax = plt.subplots(figsize=(7.5, 0.42 * len(rows) + 1.2))
    names = [r[0] for r in rows]
    y = list(range(len(rows)))
    ax.barh(y, [r[1] for r in rows], color=OURS, label="p50")
    ax.scatter([r[2] for r in rows], y, color=DIRECT, marker="|", s=200, label="p95", zorder=3)
    ax.set_yticks(y, names)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("milliseconds")
    ax.legend(loc="lower right")
    ax.grid(True, axis="x", alpha=0.3)
    return _save(fig, path)


def search(
    path: Path,
    recall: Mapping[str, tuple[float, float]],
    timing: Mapping[str, Sequence[tuple[int, float]]],
) -> Path:
    fig, (left, right) = plt.subplots(1, 2, figsize=(9.5, 3.8))
    names = list(recall)
    width = 0.38
    x = range(len(names))
    left.bar([i - width / 2 for i in x], [recall[n][0] for n in names], width, label="recall@1")
    left.bar([i + width / 2 for i in x], [recall[n][1] for n in names], width, label="recall@5")
    left.axhline(0.9, color="grey", linestyle=":", label="recall@5 target")
    left.set_xticks(list(x), names)
    left.set_ylim(0, 1.25)
    left.legend(loc="upper left", ncol=2, fontsize="small")
    left.set_title("search quality (held-out queries)")
    for name, points in timing.items():
        right.plot([p[0] for p in points], [p[1] for p in points], "o-", label=name)
    right.axhline(5, color="grey", linestyle=":", label="5 ms target")
    right.set_xlabel("tools in the catalog")
    right.set_ylabel("p50 ms per query")
    right.set_xscale("log")
    right.legend()
    right.set_title("search time")
    right.grid(True, alpha=0.3)
    return _save(fig, path)
