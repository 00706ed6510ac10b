"""Two stateless instances behind HAProxy, one PostgreSQL run store: one history (contract §10).

Real parts throughout: two `mcp-code-mode serve --transport http` processes, HAProxy from the
system's package manager, a throwaway PostgreSQL cluster, fastmcp clients through the
balancer, and `mcp-code-mode runs --json` reading the shared store.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .pg_cluster import running_cluster
from .test_http_serving import (
    _config,
    _free_port,
    _own_result,
    _wait_all_up,
    haproxy,
    haproxy_binary,
    render_haproxy,
    serving,
)

pytestmark = pytest.mark.slow  # whole commands in subprocesses


@pytest.mark.timeout(300)  # may install HAProxy first
async def test_two_instances_behind_haproxy_share_one_history(
    tmp_path: Path, stats_socket: Path
) -> None:
    binary = haproxy_binary()
    config = _config(tmp_path)
    with running_cluster() as cluster:
        url = cluster.new_database()
        shared = {"MCP_CODE_HTTP_STATELESS": "true", "MCP_CODE_RUNS_DB": url}
        async with (
            serving(config, tmp_path / "mcp1.log", **shared) as one,
            serving(config, tmp_path / "mcp2.log", **shared) as two,
        ):
            lb_port = _free_port()
            rendered = tmp_path / "haproxy.cfg"
            rendered.write_text(
                render_haproxy(lb_port, {"mcp1": one.port, "mcp2": two.port}, stats_socket)
            )
            with haproxy(binary, rendered, tmp_path / "haproxy.log"):
                await _wait_all_up(stats_socket, {"mcp1", "mcp2"})
                endpoint = f"http://127.0.0.1:{lb_port}/mcp"
                results = await asyncio.gather(*(_own_result(endpoint, k) for k in range(12)))
                assert all(value == [k, k * k, True] for k, value in results), results
                log = (tmp_path / "haproxy.log").read_text(errors="replace")
                assert set(re.findall(r"mcp_code_mode/(mcp\d)", log)) == {"mcp1", "mcp2"}
            # Each instance writes on its own thread: give them a moment to have written.
            runs = await asyncio.to_thread(_listed_until, url, 12)
    inputs = sorted(json.loads(run["id_input"]) for run in runs)
    assert inputs == list(range(12))  # every run, whichever instance served it


def _listed_until(url: str, count: int) -> list[dict[str, object]]:
    """`mcp-code-mode runs --json` against the shared store, until it lists `count` runs;
    each row with its run's input (`runs ID --json`)."""
    env = {**os.environ, "MCP_CODE_RUNS_DB": url}
    command = [str(Path(sys.executable).parent / "mcp-code-mode"), "runs"]
    rows: list[dict[str, object]] = []
    for _ in range(60):
        listed = subprocess.run(
            [*command, "--json", "--last", "100"], env=env, capture_output=True, text=True
        )
        assert listed.returncode == 0, listed.stderr
        rows = json.loads(listed.stdout)
        if len(rows) >= count:
            break
        subprocess.run(["sleep", "0.5"], check=False)
    assert len(rows) == count, rows
    for row in rows:
        shown = subprocess.run(
            [*command, str(row["id"]), "--json"], env=env, capture_output=True, text=True
        )
        assert shown.returncode == 0, shown.stderr
        row["id_input"] = str(json.loads(json.loads(shown.stdout)["input"])["k"])
    return rows
