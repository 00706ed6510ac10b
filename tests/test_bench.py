"""Smoke test of the benchmark suite: `python -m bench --quick` runs and writes its report.

Numbers are not checked here (benchmarks are scripts, not timed tests); what is checked is
that every section ran for real and the report holds its tables and figures.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # whole commands in subprocesses

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.timeout(600)
def test_quick_benchmark_run_writes_the_report(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--out", str(tmp_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=580,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = (tmp_path / "BENCHMARKS.md").read_text()
    assert report.startswith("# Benchmarks")
    assert f"{os.cpu_count()} cores" in report and sys.version.split()[0] in report
    for title in (
        "## Context footprint",
        "## Workflow token savings",
        "## Latency",
        "## Search quality and speed",
        "## Memory",
        "## Flood",
        "## Reconnect",
        "## Scaling out over HTTP",
        "## Speed against same-run baselines",
    ):
        assert title in report
    assert "while one client floods call_tools" in report
    assert "| 50 realistic tools |" in report
    assert "big refunds" in report and "call_tools fan-out: 10 calls" in report
    assert "recall@5" in report and "per warm worker" in report
    assert "bare `exec` fastmcp server" in report and "fastmcp CodeMode" in report
    assert '`mcp-code-mode exec --code "1+1"`' in report and "| 40 tools | 3 |" in report
    for figure in ("footprint", "workflows", "latency", "search"):
        png = tmp_path / "figures" / f"{figure}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"(figures/{figure}.png)" in report


@pytest.mark.timeout(150)
def test_bench_rejects_an_unknown_section(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--only", "sped", "--out", str(tmp_path)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 2
    assert "unknown section(s) sped" in proc.stderr
    assert not (tmp_path / "BENCHMARKS.md").exists()


@pytest.mark.timeout(150)
def test_a_partial_run_needs_its_own_folder() -> None:
    before = (ROOT / "BENCHMARKS.md").read_text()
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--only", "search"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 2
    assert "give --out DIR" in proc.stderr
    assert (ROOT / "BENCHMARKS.md").read_text() == before


def test_corpus_and_query_sets_are_consistent() -> None:
    sys.path.insert(0, str(ROOT))
    try:
        from bench import corpus, corpus_data, corpus_heldout
    finally:
        sys.path.remove(str(ROOT))
    corpus_data._check()
    corpus_heldout._check()
    kept, dropped = corpus.held_out_queries()
    assert len(kept) + dropped == len(corpus_heldout.HELDOUT)
    assert len(kept) >= 50
    tuning = {q.text.lower() for q in corpus_data.QUERIES}
    assert not tuning & {q.text.lower() for q in kept}


def test_the_held_out_search_set_is_the_frozen_one_and_names_real_tools() -> None:
    from bench.corpus import SERVERS
    from bench.heldout_report import load

    queries = load()  # refuses a file whose SHA-256 is not the frozen one
    tools = {f"{s.name}.{t.name}" for s in SERVERS for t in s.tools}
    assert len(queries) == 247
    assert {q["kind"] for q in queries} == {"single", "multi", "none"}
    assert all(set(q["expected"]) <= tools for q in queries)
    assert all(not q["expected"] for q in queries if q["kind"] == "none")
