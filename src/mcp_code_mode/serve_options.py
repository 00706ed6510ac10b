"""The command-line options of serving (`mcp-code-mode serve`, `python -m ...executor_server`).

Their own module so the CLI can build its parser without importing the server.
"""

from __future__ import annotations

import argparse

__all__ = ["LOG_LEVELS", "add_log_level", "add_serve_arguments"]

LOG_LEVELS = ("debug", "info", "warning", "error")


def add_log_level(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--log-level",
        choices=LOG_LEVELS,
        default="warning",
        help="what the gateway logs on stderr (default: warning)",
    )


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help="mcp_servers.json path (default: MCP_SERVERS_CONFIG)")
    parser.add_argument(
        "--transport", choices=["stdio", "http"], default="stdio", help="default: stdio"
    )
    add_log_level(parser)
    loopback_only = "http: address to bind; any but loopback needs MCP_CODE_HTTP_TOKEN"
    parser.add_argument("--host", help=loopback_only + " (default 127.0.0.1)")
    parser.add_argument("--port", type=_port, help="http: port (default 8765; 0: any free one)")


def _port(text: str) -> int:
    """A TCP port, 0-65535 (a larger number would wrap around to another port)."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port: use 0-65535 (0: any free one)")
    return port
