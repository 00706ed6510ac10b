"""How long `serve` over stdio takes to end on SIGTERM/SIGINT, beside a same-run baseline.

    python -m bench.stop                 # 5 stops of each kind, quiet machine
    python -m bench.stop --hog --runs 9  # two busy loops beside it

Each stop: `mcp-code-mode serve` (the demo config, or no upstreams) gets the client's
handshake and one `list_servers`, waits until every upstream is connected, then the signal;
timed until the process has exited. The baseline is the demo's notes upstream alone (a plain
fastmcp server): from its stdin closing, how a client ends it, until it has exited (a plain
fastmcp server ignores SIGTERM/SIGINT while serving stdio). Target: <= 1 s.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence

from bench.common import ROOT, Table
from bench.scale import _hogs

_ENV = {"FASTMCP_CHECK_FOR_UPDATES": "off", "FASTMCP_SHOW_SERVER_BANNER": "false"}
_HELLO = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench"}}
_LIST = {"name": "list_servers", "arguments": {}}


def _send(proc: subprocess.Popen[bytes], *messages: dict[str, object]) -> None:
    assert proc.stdin is not None
    for message in messages:
        proc.stdin.write((json.dumps({"jsonrpc": "2.0", **message}) + "\n").encode())
    proc.stdin.flush()


def _all_connected(proc: subprocess.Popen[bytes], ask: int) -> bool:
    assert proc.stdout is not None
    _send(proc, {"id": ask, "method": "tools/call", "params": _LIST})
    reply = proc.stdout.readline().decode()
    return not any(word in reply for word in ("starting", "connecting", "not_started"))


def gateway_stop(config: str, signum: int) -> float:
    """Seconds from `signum` to the exit of a serving gateway whose upstreams are up."""
    env = {**os.environ, **_ENV}
    command = ["mcp-code-mode", "serve", "--config", config]
    proc = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    )
    assert proc.stdout is not None
    _send(proc, {"id": 1, "method": "initialize", "params": _HELLO})
    proc.stdout.readline()
    _send(proc, {"method": "notifications/initialized"})
    ask = 2
    while not _all_connected(proc, ask) and ask < 200:
        ask += 1
        time.sleep(0.1)
    time.sleep(0.5)
    began = time.monotonic()
    proc.send_signal(signum)
    proc.wait(timeout=60)
    return time.monotonic() - began


def baseline_stop() -> float:
    """Seconds from closing a plain fastmcp server's stdin (after its handshake) to its exit."""
    env = {**os.environ, **_ENV, "FASTMCP_LOG_LEVEL": "WARNING"}
    script = str(ROOT / "examples" / "servers" / "notes_server.py")
    proc = subprocess.Popen(
        [sys.executable, script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
    )
    assert proc.stdin is not None and proc.stdout is not None
    _send(proc, {"id": 1, "method": "initialize", "params": _HELLO})
    proc.stdout.readline()
    _send(proc, {"method": "notifications/initialized"})
    time.sleep(0.5)
    began = time.monotonic()
    proc.stdin.close()
    proc.wait(timeout=60)
    return time.monotonic() - began


def _cell(samples: list[float]) -> list[str]:
    return [f"{statistics.median(samples):.2f}", f"{max(samples):.2f}"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.stop")
    parser.add_argument("--runs", type=int, default=5, help="stops of each kind")
    parser.add_argument("--hog", action="store_true", help="two busy loops beside the run")
    args = parser.parse_args(argv)
    empty = ROOT / "bench" / "servers" / "no_upstreams.json"
    demo = str(ROOT / "mcp_servers.json")
    kinds = {
        "gateway, no upstreams, SIGTERM": lambda: gateway_stop(str(empty), signal.SIGTERM),
        "gateway, demo's 3 upstreams, SIGTERM": lambda: gateway_stop(demo, signal.SIGTERM),
        "gateway, demo's 3 upstreams, SIGINT": lambda: gateway_stop(demo, signal.SIGINT),
        "baseline: plain fastmcp server, stdin closed": baseline_stop,
    }
    table = Table(["stop", "median s", "max s"])
    with _hogs(2 if args.hog else 0):
        for label, stop in kinds.items():
            table.rows.append([label, *_cell([stop() for _ in range(args.runs)])])
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"runs: {args.runs} each; hog: {args.hog}; load after: {load}\n")
    print(table.markdown())
    return 0


if __name__ == "__main__":
    sys.exit(main())
