"""The worker spells error types as `protocol.ErrorCode`; the host owns `ErrorType`."""

from __future__ import annotations

from typing import get_args

from mcp_code_mode.errors import ErrorType
from mcp_code_mode.sandbox.protocol import ErrorCode


def test_the_worker_and_the_host_name_the_same_error_types() -> None:
    assert set(get_args(ErrorCode)) == {member.value for member in ErrorType}
