"""The scale benchmark's parts: the frozen recall set, the big upstream and its catalog, and
one tiny `python -m bench.scale` run end to end (numbers are not checked, only that every
figure was measured and reported)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from bench import scale_queries
from bench.scale import Layout
from bench.servers.big_catalog import DOMAINS, QUALIFIERS, VERBS, catalog, layout

ROOT = Path(__file__).resolve().parent.parent
BIG_SERVER = ROOT / "bench" / "servers" / "big_server.py"


def _big(*args: str) -> StdioTransport:
    return StdioTransport(sys.executable, [str(BIG_SERVER), *args], keep_alive=False)


def _words(name: str) -> list[str]:
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()
    return re.split(r"[_-]", spaced)


def test_the_recall_set_is_frozen_and_its_queries_name_real_targets() -> None:
    scale_queries.check_frozen()
    names = [t.name for t in scale_queries.TARGETS]
    assert len(set(names)) == len(names)
    assert len(scale_queries.QUERIES) >= 40
    assert all(set(q.targets) <= set(names) for q in scale_queries.QUERIES)
    assert set(names) == {t for q in scale_queries.QUERIES for t in q.targets}


def test_a_changed_recall_set_has_another_digest(tmp_path: Path) -> None:
    source = Path(scale_queries.__file__).read_text()
    copy = tmp_path / "scale_queries.py"
    copy.write_text(source.replace('Query("payslip"', 'Query("salary"', 1))
    assert scale_queries.file_digest(Path(scale_queries.__file__)) == scale_queries.SHA256
    assert scale_queries.file_digest(copy) != scale_queries.SHA256


@pytest.mark.parametrize("size", [10, 100, 3000])
def test_a_catalog_of_any_size_holds_its_targets_under_unique_names(size: int) -> None:
    names = [t["name"] for t in catalog(size)]
    assert len(names) == len(set(names)) == size
    assert {t.name for t in scale_queries.TARGETS[:size]} <= set(names)


def _verb_and_noun(name: str) -> tuple[str, str]:
    """A distractor's (verb class, noun), read back from its name: [domain] verb noun [qualifier]."""
    words = _words(name)
    if words[0] in DOMAINS and words[0] not in VERBS:
        words = words[1:]
    nouns = {n: n for d in DOMAINS.values() for n in d.split()}
    nouns |= {re.sub(r"y$", "ies", n) if n.endswith("y") else n + "s": n for n in list(nouns)}
    nouns |= {n + "es": n for n in list(nouns) if n.endswith(("s", "x", "ch", "sh"))}
    for verb in sorted(VERBS, key=len, reverse=True):
        head = verb.split("_")
        if words[: len(head)] != head:
            continue
        rest = "_".join(words[len(head) :])
        for qualifier in ("", *QUALIFIERS):
            if qualifier and not rest.endswith("_" + qualifier):
                continue
            noun = rest[: len(rest) - len(qualifier) - 1] if qualifier else rest
            if noun in nouns:
                return VERBS[verb][0], nouns[noun]
    raise AssertionError(f"{name} does not read as [domain] verb noun [qualifier]")


def test_no_distractor_does_a_job_reserved_for_a_target() -> None:
    targets = {t.name for t in scale_queries.TARGETS}
    reserved = {entry for t in scale_queries.TARGETS for entry in t.reserve}
    jobs = [_verb_and_noun(t["name"]) for t in catalog(3000) if t["name"] not in targets]
    assert len(jobs) == 3000 - len(targets)
    assert not [j for j in jobs if f"{j[0]} {j[1]}" in reserved or f"* {j[1]}" in reserved]
    assert {"create", "read", "list"} <= {verb for verb, _ in jobs}


def test_a_layout_splits_the_catalog_evenly_into_named_slices() -> None:
    slices = layout(1000, 20)
    assert [s.count for s in slices] == [50] * 20
    assert [s.offset for s in slices] == list(range(0, 1000, 50))
    assert len({s.name for s in slices}) == 20
    joined = [
        t["name"] for s in slices for t in catalog(1000, start=s.offset, stop=s.offset + s.count)
    ]
    assert joined == [t["name"] for t in catalog(1000)]


def test_a_layout_reads_from_its_short_form() -> None:
    assert Layout.parse("10000x1@60") == Layout(10_000, 1, 60.0)
    assert Layout.parse("100x5").label == "100 tools / 5 upstreams"


@pytest.mark.parametrize(("era", "version"), [("dual", "2026-07-28"), ("legacy", "2025-11-25")])
async def test_the_big_upstream_serves_its_slice_in_pages_and_echoes_calls(
    tmp_path: Path, era: str, version: str
) -> None:
    log = tmp_path / "requests.log"
    args = ["--catalog-size", "300", "--offset", "100", "--tools", "50", "--page-size", "20"]
    async with Client(_big(*args, "--era", era, "--log-file", str(log))) as client:
        tools = await client.list_tools()
        result = await client.call_tool(tools[0].name, {"a": 1})
        negotiated = client.session.protocol_version
    assert negotiated == version
    assert [t.name for t in tools] == [t["name"] for t in catalog(300, start=100, stop=150)]
    assert result.structured_content == {"tool": tools[0].name, "arguments": {"a": 1}}
    methods = [line.split()[1] for line in log.read_text().splitlines()]
    assert methods.count("tools/list") == 3  # 50 tools in pages of 20
    assert methods.count("tools/call") == 1


async def test_a_slow_starting_upstream_answers_once_its_delay_is_over() -> None:
    started = time.perf_counter()
    async with Client(_big("--tools", "5", "--init-delay-s", "1.5", "--era", "legacy")) as client:
        assert len(await client.list_tools()) == 5
    assert time.perf_counter() - started >= 1.5


async def test_a_delayed_call_leaves_listings_answering() -> None:
    async with Client(_big("--tools", "5", "--call-delay-s", "2")) as client:
        tools = await client.list_tools()
        call = asyncio.create_task(client.call_tool(tools[0].name, {}))
        await asyncio.sleep(0.2)
        assert len(await client.list_tools()) == 5
        assert not call.done()
        assert (await call).structured_content == {"tool": tools[0].name, "arguments": {}}


async def test_the_big_upstream_serves_streamable_http_after_its_start_up() -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(BIG_SERVER), "--http", "0", "--tools", "30", "--init-delay-s", "1",
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        line = (await asyncio.wait_for(proc.stderr.readline(), 30)).decode()
        url = line.split("serving ", 1)[1].strip()
        started = time.perf_counter()
        async with Client(url) as client:
            tools = await client.list_tools()
            result = await client.call_tool(tools[-1].name, {"q": "x"})
        assert time.perf_counter() - started >= 0.8  # answered once start-up was over
        assert [t.name for t in tools] == [t["name"] for t in catalog(30)]
        assert result.structured_content == {"tool": tools[-1].name, "arguments": {"q": "x"}}
    finally:
        proc.kill()
        await proc.wait()


@pytest.mark.slow  # a whole benchmark run: gateways, upstreams, bare clients (~40 s)
@pytest.mark.timeout(300)
def test_a_tiny_scale_run_reports_every_figure(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    command = [sys.executable, "-m", "bench.scale", "--layouts", "10x1,60x3", "--runs", "2"]
    command += ["--idle-s", "1", "--cap-s", "120", "--out", str(tmp_path)]
    proc = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=280, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (dump,) = tmp_path.glob("scale-*.json")
    data = json.loads(dump.read_text())
    assert data["meta"]["query_set_sha256"] == scale_queries.SHA256
    assert [r["label"] for r in data["results"]] == [
        "10 tools / 1 upstream",
        "60 tools / 3 upstreams",
    ]
    for result, queries in zip(data["results"], (12, 50), strict=True):
        gateway, in_process = result["gateway"], result["in_process"]
        assert result["bare"]["connected_s"] is not None and result["bare"]["failed"] == 0
        assert gateway["connected_s"] is not None
        assert gateway["status_at_end"]["ok"] == result["layout"]["upstreams"]
        assert len(gateway["exec_ms"]) == len(gateway["call_ms"]) == 2
        assert len(gateway["search_mcp_ms"]) == len(scale_queries.QUERIES)
        assert gateway["docs_tokens"] > 0 and gateway["rss_mb"] > 0
        assert in_process["queries"] == queries and 0 <= in_process["recall_at_5"] <= 1
    report = (tmp_path / "scale.md").read_text()
    assert "## Scale: 10 to 10,000 tools" in report and "| 60 tools / 3 upstreams |" in report
    assert "(figures/scale.png)" in report
    assert (tmp_path / "figures" / "scale.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
