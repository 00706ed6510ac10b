"""The scale benchmark's report: its tables, its check against issue 25, and its figure."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.common import Section, Table, p50, p95

__all__ = ["section"]

JSON = dict[str, Any]
RATIO_TARGET = 1.3
DOCS_BUDGET = 4000
SEARCH_P50_MS, SEARCH_P95_MS = 5.0, 15.0
RSS_MB = 300.0
IDLE_CPU_PCT = 2.0

INTRO = (
    "N tools spread evenly over U stdio upstreams (a stdlib JSON-RPC server that burns a "
    "fixed amount of CPU at start, as a Python server's imports do, then answers at once at "
    "any size: so many starting at once contend for the cores). In the same run, "
    "for the same upstreams: bare fastmcp `Client`s, one per upstream, all at once, each "
    "connected and its tools listed (the baseline); the gateway as a client meets it "
    "(`python -m mcp_code_mode.executor_server` over stdio, polled with `list_servers` until "
    "every upstream is `ok`); and a `Gateway` in process for search timings and recall@5 on a "
    "frozen query set (`bench/scale_queries.py`, 50 queries written before reading the "
    "ranker, whose 42 target tools stay in the catalog at every size among generated "
    "distractors). `python -m bench.scale --full` adds 10,000 tools over 100 upstreams and on "
    "one upstream that takes 60 s to answer `initialize`."
)


def _ms(samples: Sequence[float] | None) -> str:
    return f"{p50(samples):,.1f} / {p95(samples):,.1f}" if samples else "—"


def _s(value: float | None) -> str:
    return "—" if value is None else f"{value:,.1f}"


def _status(gateway: JSON) -> str:
    end = gateway.get("status_at_end", {})
    return ", ".join(f"{end[k]} {k}" for k in ("ok", "starting", "error") if end.get(k)) or "—"


def _connect_table(results: Sequence[JSON], cap_s: float) -> Table:
    table = Table(
        [
            "layout",
            "bare clients s",
            "gateway s",
            "gateway / bare",
            "gateway process start s",
            "first `1+1` s after spawn",
            "list_servers at the end",
        ]
    )
    for r in results:
        bare, gw = r["bare"]["connected_s"], r["gateway"]
        got = gw["connected_s"]
        table.rows.append(
            [
                r["label"],
                _s(bare) if bare is not None else f"not within {cap_s:g} s",
                _s(got) if got is not None else f"**not within {cap_s:g} s**",
                f"{got / bare:.2f}x" if got is not None and bare else "—",
                _s(gw["ready_s"]),
                _s(gw["first_exec_s"]),
                _status(gw),
            ]
        )
    return table


def _call_table(results: Sequence[JSON]) -> Table:
    table = Table(
        [
            "layout",
            "`1+1` p50 ms",
            "one call p50 ms",
            "search_tools over MCP p50 / p95 ms",
            "search in process p50 / p95 ms",
            "first search ms",
            "recall@5 (queries)",
        ]
    )
    for r in results:
        gw, inproc = r["gateway"], r["in_process"]
        recall = inproc.get("recall_at_5")
        table.rows.append(
            [
                r["label"],
                f"{p50(gw['exec_ms']):.1f}" if gw.get("exec_ms") else "—",
                f"{p50(gw['call_ms']):.1f}" if gw.get("call_ms") else "—",
                _ms(gw.get("search_mcp_ms")),
                _ms(inproc.get("search_ms")) + _partial(r),
                f"{inproc['first_search_ms']:.1f}" if "first_search_ms" in inproc else "—",
                _recall(r) if recall is not None else "—",
            ]
        )
    return table


def _partial(result: JSON) -> str:
    have = result["in_process"].get("catalog_tools", 0)
    return "" if _full_catalog(result) else f" (over {have:,} tools)"


def _recall(result: JSON) -> str:
    inproc, tools = result["in_process"], result["layout"]["tools"]
    text = f"{inproc['recall_at_5']:.2f} ({inproc['queries']})"
    have = inproc.get("catalog_tools", tools)
    return text if have >= tools else f"{text}, **over {have:,} of {tools:,} tools**"


def _footprint_table(results: Sequence[JSON]) -> Table:
    table = Table(
        [
            "layout",
            "first upstream's raw tools/list tokens",
            "its `get_tool_docs` tokens",
            "unknown-tool error chars",
            "gateway RSS MB (peak)",
            "idle CPU % of a core: gateway / upstreams + workers",
            "requests to upstreams while idle",
            "upstreams on 2026-07-28 / handshake era",
        ]
    )
    for r in results:
        gw = r["gateway"]
        asked = gw.get("idle_requests", {})
        table.rows.append(
            [
                r["label"],
                r["bare"]["first_upstream_tools_list_tokens"],
                gw["docs_tokens"] if _docs_ok(r) else f"failed ({gw['docs_chars']:,}-char error)",
                gw["unknown_tool_error_chars"],
                f"{gw['rss_mb']:.0f} ({gw['hwm_mb']:.0f})",
                f"{gw['idle_cpu_pct']:.2f} / {gw['idle_cpu_children_pct']:.2f}",
                ", ".join(f"{n} {m}" for m, n in sorted(asked.items())) + f" in {gw['idle_s']:g} s"
                if asked
                else f"none in {gw['idle_s']:g} s",
                _eras(gw),
            ]
        )
    return table


def _eras(gateway: JSON) -> str:
    found = gateway.get("eras", {})
    return f"{found.get('2026-07-28', 0)} / {found.get('handshake', 0)}"


def _verdict(ok: bool) -> str:
    return "met" if ok else "**not met**"


def _connected(r: JSON) -> bool:
    return r["gateway"]["connected_s"] is not None


def _full_catalog(r: JSON) -> bool:
    return r["in_process"].get("catalog_tools", 0) >= r["layout"]["tools"]


def _docs_ok(r: JSON) -> bool:
    return not r["gateway"].get("docs_error")


def _per_upstream(r: JSON) -> float:
    return float(r["layout"]["tools"] / r["layout"]["upstreams"])


def _largest(results: Sequence[JSON], size: Any, measured: Any) -> tuple[JSON | None, str]:
    """The largest result by `size` among those `measured`; and a note on bigger ones left out."""
    ranked = sorted(results, key=size, reverse=True)
    usable = [r for r in ranked if measured(r)]
    skipped = [r["label"] for r in ranked[: ranked.index(usable[0])]] if usable else []
    skipped = skipped if usable else [r["label"] for r in ranked]
    note = f"; not measurable at {', '.join(skipped)} (never all connected)" if skipped else ""
    return (usable[0] if usable else None), note


def _acceptance(results: Sequence[JSON]) -> Table:
    """Issue 25's figures against the largest layouts measured here."""
    table = Table(["target (issue 25)", "measured here", "met"], align="lll")
    ratios = []
    for r in results:
        bare, got = r["bare"]["connected_s"], r["gateway"]["connected_s"]
        ratios.append((r["label"], None if got is None or not bare else got / bare))
    worst = max(ratios, key=lambda x: float("inf") if x[1] is None else x[1])
    shown = "never connected" if worst[1] is None else f"{worst[1]:.2f}x"
    table.rows.append(
        [
            f"every upstream connected ≤ {RATIO_TARGET}x the bare clients' time, every layout",
            f"worst: {worst[0]}, {shown}",
            _verdict(worst[1] is not None and worst[1] <= RATIO_TARGET),
        ]
    )
    big, note = _largest(results, _per_upstream, _docs_ok)
    docs = big["gateway"]["docs_tokens"] if big else 0
    target = f"`get_tool_docs(server)` ≤ {DOCS_BUDGET:,} tokens"
    table.rows.append(_row(target, big, note, f"{docs:,}", docs <= DOCS_BUDGET))
    top, note = _largest(results, lambda r: r["layout"]["tools"], _full_catalog)
    search = top["in_process"]["search_ms"] if top else []
    fast = bool(search) and p50(search) <= SEARCH_P50_MS and p95(search) <= SEARCH_P95_MS
    target = f"search in process p50 ≤ {SEARCH_P50_MS:g} ms, p95 ≤ {SEARCH_P95_MS:g} ms"
    table.rows.append(_row(target, top, note, f"{_ms(search)} ms", fast))
    top, note = _largest(results, lambda r: r["layout"]["tools"], _connected)
    rss = top["gateway"]["rss_mb"] if top else 0.0
    table.rows.append(
        _row(f"gateway RSS ≤ {RSS_MB:g} MB", top, note, f"{rss:.0f} MB", rss <= RSS_MB)
    )
    most, note = _largest(results, lambda r: r["layout"]["upstreams"], _connected)
    idle = most["gateway"]["idle_cpu_pct"] if most else 0.0
    listed = most["gateway"]["idle_requests"].get("tools/list", 0) if most else 0
    target = f"idle ≤ {IDLE_CPU_PCT:g}% of a core; no periodic full listing"
    quiet = idle <= IDLE_CPU_PCT and not listed
    table.rows.append(_row(target, most, note, f"{idle:.2f}%, {listed} tools/list", quiet))
    return table


def _row(target: str, result: JSON | None, note: str, value: str, ok: bool) -> list[str]:
    if result is None:
        return [target, "not measured" + note, "—"]
    return [target, f"{value} ({result['label']}){note}", _verdict(ok)]


def section(results: Sequence[JSON], meta: JSON, figures: Path | None) -> Section:
    opts = meta["options"]
    hog = " with two busy loops (`--hog`) beside the run" if opts["hog"] else ""
    notes = [
        f"{os.cpu_count()} cores, load average {meta['load_average'][0]:.1f} when the run "
        f"began{hog}; the upstreams, the gateway, its workers and the bare clients share them. "
        f"Each upstream burns {opts['start_cpu_s']:g} s of CPU at start. "
        f"Waits are capped at {opts['cap_s']:g} s.",
        "Gateway times start when its process answered `initialize` (its own start-up, "
        "which a bare client does not pay, is the column beside); `list_servers` is polled "
        "every 0.1 s from then on (the first `1+1` runs beside the polls), and one poll may "
        "itself wait while upstreams start.",
        f"Per layout: {opts['runs']} `1+1` and one-call samples, the 50 queries once over MCP "
        f"and {opts['search_rounds']}x in process; the idle window is {opts['idle_s']:g} s "
        "after everything answered. RSS is the server process alone.",
        "The upstreams speak both protocol eras. A client's `server/discover` probe gives up "
        "after 10 s and falls back to `initialize`, so upstreams slow to start (a herd on busy "
        "cores) end up on the handshake era, where health checks can ping; the last column "
        "says where the gateway's landed.",
    ]
    notes += [
        f"{r['label']}: {r['gateway']['per_call_error']}"
        for r in results
        if r["gateway"].get("per_call_error")
    ]
    tables = [
        ("Until every upstream is connected", _connect_table(results, opts["cap_s"])),
        ("Per call and search", _call_table(results)),
        ("Discovery size, memory and idle cost", _footprint_table(results)),
        ("Against issue 25's acceptance figures", _acceptance(results)),
    ]
    out = Section("Scale: 10 to 10,000 tools", INTRO, tables=tables, notes=notes)
    if figures is not None:
        out.figures.append(
            (
                "Connect time, search, docs size and recall by layout",
                _plot(figures / "scale.png", results),
            )
        )
    top = max(results, key=lambda r: (r["layout"]["tools"], r["layout"]["upstreams"]))
    got, bare = top["gateway"]["connected_s"], top["bare"]["connected_s"]
    search = top["in_process"].get("search_ms")
    out.headline["scale"] = (
        f"{top['label']}: every upstream connected "
        + (f"in {got:.1f} s" if got is not None else "never")
        + f" through the gateway, {_s(bare)} s with bare clients; search p50 "
        + (f"{p50(search):.1f} ms{_partial(top)}" if search else "—")
        + f", recall@5 {top['in_process'].get('recall_at_5', 0):.2f}"
    )
    return out


def _plot(path: Path, results: Sequence[JSON]) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ((conn, srch), (docs, rec)) = plt.subplots(2, 2, figsize=(12, 8), layout="constrained")
    _connect_panel(conn, results)
    _search_panel(srch, results)
    _docs_panel(docs, results)
    recall = [r["in_process"].get("recall_at_5", 0) for r in results]
    bars = rec.bar(range(len(results)), recall, 0.5, color=OURS)
    rec.bar_label(bars, fmt="%.2f", fontsize=8)
    rec.set_ylim(0, 1.05)
    rec.set_title("search recall@5 on the frozen query set (higher is better)")
    labels = [r["label"].replace(" / ", "\n").replace(", ", "\n") for r in results]
    for ax in (conn, srch, docs, rec):
        ax.set_xticks(range(len(results)), labels, fontsize=7)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


BARE, OURS, TARGET = "#c44e52", "#4c72b0", "#555555"


def _thousands(ax: Any) -> None:
    from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

    ax.yaxis.set_major_locator(LogLocator(subs=(1, 2, 5)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,.12g}"))
    ax.yaxis.set_minor_locator(NullLocator())


def _connect_panel(ax: Any, results: Sequence[JSON]) -> None:
    xs = range(len(results))
    waited = [
        r["gateway"]["timeline"][-1]["t_s"] if r["gateway"]["timeline"] else 0 for r in results
    ]
    bare = [r["bare"]["connected_s"] or w for r, w in zip(results, waited, strict=True)]
    ours = [r["gateway"]["connected_s"] or w for r, w in zip(results, waited, strict=True)]
    ax.bar([x - 0.2 for x in xs], bare, 0.4, label="bare fastmcp clients", color=BARE)
    ax.bar([x + 0.2 for x in xs], ours, 0.4, label="through the gateway", color=OURS)
    for x, r, w in zip(xs, results, waited, strict=True):
        if r["gateway"]["connected_s"] is None:
            ax.bar(x + 0.2, w, 0.4, fill=False, hatch="//", edgecolor="black")
            ax.annotate("never (the wait)", (x + 0.2, w), ha="center", va="bottom", fontsize=7)
    ax.set_title("Until every upstream is connected (s, lower is better)")
    ax.legend(fontsize=8)


def _search_panel(ax: Any, results: Sequence[JSON]) -> None:
    xs = range(len(results))
    for key, where, name in (
        ("search_ms", "in_process", "in process"),
        ("search_mcp_ms", "gateway", "over MCP"),
    ):
        values = [r[where].get(key) or [float("nan")] for r in results]
        ax.plot(xs, [p50(v) for v in values], marker="o", label=f"{name} p50")
        ax.plot(xs, [p95(v) for v in values], marker="x", linestyle="--", label=f"{name} p95")
    ax.axhline(SEARCH_P50_MS, color=TARGET, linewidth=0.8, linestyle=":", label="5 ms p50 target")
    ax.set_yscale("log")
    _thousands(ax)
    ax.set_title("search_tools latency (ms, log scale, lower is better)")
    ax.legend(fontsize=8)


def _docs_panel(ax: Any, results: Sequence[JSON]) -> None:
    xs = range(len(results))
    raw = [r["bare"]["first_upstream_tools_list_tokens"] for r in results]
    ours = [r["gateway"]["docs_tokens"] for r in results]
    ax.bar([x - 0.2 for x in xs], raw, 0.4, label="its raw tools/list", color=BARE)
    ax.bar([x + 0.2 for x in xs], ours, 0.4, label="get_tool_docs(server)", color=OURS)
    budget = f"{DOCS_BUDGET:,}-token budget"
    ax.axhline(DOCS_BUDGET, color=TARGET, linewidth=0.8, linestyle=":", label=budget)
    ax.set_yscale("log")
    _thousands(ax)
    ax.set_title("The first upstream's docs (cl100k tokens, log scale)")
    ax.legend(fontsize=8)
