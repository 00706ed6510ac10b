"""Where guest code runs: the AST policy, worker processes and the executors.

This package's `__init__` imports nothing heavy: the worker process imports
`mcp_code_mode.sandbox.child.worker` and must not pay for pydantic, fastmcp or dspy.
"""

__all__: list[str] = []
