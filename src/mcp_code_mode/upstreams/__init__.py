"""The upstream MCP servers: one `UpstreamConnection` each, held by an `MCPServerManager`.

Importing this package is cheap: fastmcp's client stack (`client`, `errors`) is imported
when the first upstream connects.
"""

from __future__ import annotations

from .cache import ToolCache
from .connection import Admit
from .manager import Connect, MCPServerManager, ServerStatus

__all__ = ["Admit", "Connect", "MCPServerManager", "ServerStatus", "ToolCache"]
