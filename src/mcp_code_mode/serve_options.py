"""The command-line options of serving (`mcp-code-mode serve`, `python -m ...executor_server`).

Their own module so the CLI can build its parser without importing the server.
"""

from __future__ import annotations

import argparse

__all__ = ["add_serve_arguments"]


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help="mcp_servers.json path (default: MCP_SERVERS_CONFIG)")
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    loopback_only = "http: address to bind; any but loopback needs MCP_CODE_HTTP_TOKEN"
    parser.add_argument("--host", default="127.0.0.1", help=loopback_only)
    parser.add_argument("--port", type=int, default=8765, help="http: port (0: any free one)")
