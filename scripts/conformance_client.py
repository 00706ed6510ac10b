"""The gateway's client side under the MCP conformance suite's client scenarios.

    python scripts/conformance_client.py URL

`npx @modelcontextprotocol/conformance client --command "python scripts/conformance_client.py"
--scenario NAME` starts a test server for scenario NAME, appends its URL to the command and
sets MCP_CONFORMANCE_SCENARIO. This writes a one-server config for that URL (server name
`conformance`) and runs the scenario's code through `mcp-code-mode exec --json`, so
everything the suite sees comes from the gateway's own client (connect, tools/list, the
calls, reconnects). Prints the §3 result object; exits 1 when the run failed. `.ci/conformance`
runs it over the scenarios that apply to a gateway.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

# What each scenario needs a client to do, as guest code; unknown scenarios only connect.
SCENARIOS = {
    # connect: initialize, notifications/initialized, tools/list
    "initialize": None,  # CONNECT_ONLY
    "tools_call": "tools.conformance.add_numbers(a=5, b=3)",
    # the server closes the call's SSE stream with a `retry` hint; the reply arrives after
    # the client reconnects (GET with Last-Event-ID) when it said to
    "sse-retry": "tools.conformance.test_reconnection()",
    # Mcp-Method / Mcp-Name headers (SEP-2243), a hyphenated name included
    "http-standard-headers": (
        "[call_tool('conformance', 'test_headers'), call_tool('conformance', 'my-hyphenated-tool')]"
    ),
    # Mcp-Param-* headers mirrored from x-mcp-header arguments, Base64 where a value needs it
    "http-custom-headers": (
        "[tools.conformance.test_custom_headers(region='us-west', priority=5, verbose=False,"
        " debug=True, empty_val='', method_val='POST', float_val=1.5, non_ascii_val='café',"
        " whitespace_val=' padded ', leading_space_val=' lead', trailing_space_val='trail ',"
        " internal_space_val='in side', control_char_val='bell\\x07', crlf_val='a\\r\\nb',"
        " tab_val='\\tx', query='q'),"
        " tools.conformance.test_custom_headers_null(region='eu', priority=1, verbose=None,"
        " query='q')]"
    ),
    # tools with invalid x-mcp-header declarations are left out; the valid one still works
    "http-invalid-tool-headers": "tools.conformance.valid_tool(region='us-west')",
}
# Discovery waits 5 s for a server still starting, then says `starting`: on a busy machine
# the connection may take longer, which is slow, not broken; ask again (the run may take 110 s).
CONNECT_ONLY = """
for _ in range(20):
    states = [s['status'] for s in list_servers()]
    if 'starting' not in states:
        break
states
"""


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    url = argv[0]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    code = SCENARIOS.get(scenario) or CONNECT_ONLY
    with tempfile.TemporaryDirectory(prefix="mcp-conformance-") as tmp:
        config = Path(tmp) / "mcp_servers.json"
        config.write_text(json.dumps({"servers": {"conformance": {"url": url, "timeout_s": 20}}}))
        # The gateway's own settings, not whatever the calling shell has in MCP_*.
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MCP_CODE_", "DSPY_"))}
        command = [
            sys.executable,
            "-m",
            "mcp_code_mode.cli",
            "exec",
            "--code",
            code,
            "--timeout",
            "110",
        ]
        proc = subprocess.run(
            [*command, "--config", str(config), "--json"],
            env={**env, "MCP_CODE_POOL_SIZE": "1"},
            cwd=tmp,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    sys.stderr.write(proc.stderr)
    print(proc.stdout.strip())
    try:
        result = json.loads(proc.stdout)
    except ValueError:
        return proc.returncode or 1
    if code == CONNECT_ONLY and result.get("result") != ["ok"]:
        return 1  # the run itself was fine, but the gateway could not connect
    return 0 if result.get("ok") else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
