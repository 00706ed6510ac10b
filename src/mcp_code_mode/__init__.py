"""mcp-code-mode: an MCP gateway that lets agents call many MCP tools through sandboxed code.

Import the pieces from their modules (`mcp_code_mode.gateway.Gateway`, ...); this
package `__init__` stays light because sandbox workers import it too.
"""

import os as _os

# fastmcp reads these at import; whatever starts fastmcp through us gets quiet defaults.
_os.environ.setdefault("FASTMCP_CHECK_FOR_UPDATES", "off")
_os.environ.setdefault("FASTMCP_SHOW_SERVER_BANNER", "false")
_os.environ.setdefault("FASTMCP_LOG_LEVEL", "WARNING")

__version__ = "0.1.0"
__all__ = ["__version__"]
