"""Error types shared by every layer: the contract's `error.type` codes and our exceptions."""

from __future__ import annotations

from enum import StrEnum

__all__ = [
    "CodeModeError",
    "ConfigError",
    "ErrorType",
    "ToolCallFailed",
    "ToolCallLimitExceeded",
    "UnknownToolError",
    "WorkerCrashed",
]


class ErrorType(StrEnum):
    """The `error.type` values of an `execute_code` result (contract §3)."""

    POLICY_VIOLATION = "POLICY_VIOLATION"
    SYNTAX_ERROR = "SYNTAX_ERROR"
    RUNTIME_ERROR = "RUNTIME_ERROR"
    TIMEOUT = "TIMEOUT"
    MEMORY_LIMIT = "MEMORY_LIMIT"
    OUTPUT_LIMIT = "OUTPUT_LIMIT"
    TOOL_CALL_LIMIT = "TOOL_CALL_LIMIT"
    TOOL_ERROR = "TOOL_ERROR"
    EXECUTOR_ERROR = "EXECUTOR_ERROR"


class CodeModeError(Exception):
    """Base of every error mcp-code-mode raises on purpose."""

    error_type: ErrorType = ErrorType.EXECUTOR_ERROR


class ConfigError(CodeModeError):
    """A config file or setting is wrong; names the file, the server and the field."""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        server: str | None = None,
        field: str | None = None,
    ) -> None:
        self.problem = message
        self.file = file
        self.server = server
        self.field = field
        where = [
            part
            for part in (
                file,
                f"server {server!r}" if server else None,
                f"field {field!r}" if field else None,
            )
            if part
        ]
        super().__init__(f"{': '.join(where)}: {message}" if where else message)


class ToolCallFailed(CodeModeError):
    """An upstream call failed: the tool reported an error, timed out, or its server is down."""

    error_type = ErrorType.TOOL_ERROR

    def __init__(self, server: str, tool: str, message: str) -> None:
        self.server = server
        self.tool = tool
        self.message = message
        super().__init__(f"{server}.{tool}: {message}")


class ToolCallLimitExceeded(CodeModeError):
    """A run tried more upstream calls than MCP_CODE_MAX_TOOL_CALLS allows; ends the run."""

    error_type = ErrorType.TOOL_CALL_LIMIT


class UnknownToolError(CodeModeError, LookupError):
    """A server or tool name that the catalog does not know; the message lists what exists."""

    error_type = ErrorType.TOOL_ERROR


class WorkerCrashed(CodeModeError):
    """A sandbox worker died or broke the pipe protocol; the worker is discarded."""

    error_type = ErrorType.EXECUTOR_ERROR
