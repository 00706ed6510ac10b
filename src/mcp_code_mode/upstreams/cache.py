"""The upstreams' tool lists on disk, so the catalog is there before the upstreams are.

One JSON file per upstream under `<cache dir>/mcp-code-mode/tools/`, named by a hash of what
starts and identifies it (its name, transport, command, args, env, cwd, URL and headers):
change any of those and the old entry is simply not found. Values of `env` and `headers`
(API keys) are only hashed, never written. An entry is a hint, not the truth: the
gateway serves it while the upstream connects and replaces it with what the upstream
lists. A file that cannot be read or parsed is a miss; a cache that cannot be written is
silently skipped (the gateway works the same, it only starts slower).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import stat
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import mcp_types
from pydantic import ValidationError

from ..server_config import ServerConfig

__all__ = ["ToolCache", "cache_key"]

logger = logging.getLogger(__name__)

_FORMAT = 2  # bump when the file layout changes: old files become misses
_MAX_FILE_BYTES = 64 << 20  # a larger file is not ours (or not sane): a miss
_KEPT_FILES = 256  # the most recently written; configs come and go (tests, temp dirs)


def cache_key(name: str, server: ServerConfig) -> str:
    """The hash that names a server's entry: what starts it and where it is."""
    identity = {"format": _FORMAT, "name": name, **server.identity()}
    text = json.dumps(identity, sort_keys=True, ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


class ToolCache:
    """Tool lists (raw `tools/list` entries, before allow/deny filtering) by server.

    Args:
        directory: where the files go; None keeps nothing (every load is a miss).
    """

    def __init__(self, directory: str | Path | None) -> None:
        self.directory = None if directory is None else Path(directory)

    def load(self, name: str, server: ServerConfig) -> list[dict[str, Any]] | None:
        """The tools last stored for this server, or None."""
        path = self._path(name, server)
        if path is None:
            return None
        try:
            data = json.loads(_read_regular_file(path, _MAX_FILE_BYTES))
        except (OSError, ValueError, RecursionError, MemoryError):
            return None
        tools = data.get("tools") if isinstance(data, dict) else None
        if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
            return None
        return tools

    def store(self, name: str, server: ServerConfig, tools: Sequence[dict[str, Any]]) -> None:
        """Write the server's tools atomically (readable by this user only); errors are skipped."""
        path = self._path(name, server)
        if path is None:
            return
        body = json.dumps({"server": name, "tools": list(tools)}, ensure_ascii=False)
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".tools-", suffix=".tmp")
            try:
                with os.fdopen(fd, "w", encoding="utf-8", errors="replace") as f:
                    f.write(body)
                os.replace(temp, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temp)
                raise
        except OSError as exc:
            logger.debug("tool cache: cannot write %s: %s", path, exc)
            return
        _prune(path.parent)

    def load_tools(self, name: str, server: ServerConfig) -> list[mcp_types.Tool] | None:
        """The tools last stored for this server as MCP tools; None when there are none or
        they are not valid tools."""
        raw = self.load(name, server)
        if raw is None:
            return None
        try:
            tools = [mcp_types.Tool.model_validate(t) for t in raw]
            for tool in tools:  # what cannot be dumped again would fail every comparison later
                tool.model_dump(mode="json", by_alias=True, exclude_none=True)
        except (ValidationError, ValueError, RecursionError):
            return None
        return tools

    def known_tools(self, servers: Mapping[str, ServerConfig]) -> dict[str, list[mcp_types.Tool]]:
        """The stored tools of each of `servers` that has them (see `load_tools`)."""
        found = {name: self.load_tools(name, server) for name, server in servers.items()}
        return {name: tools for name, tools in found.items() if tools is not None}

    def store_tools(self, name: str, server: ServerConfig, tools: Sequence[mcp_types.Tool]) -> None:
        """Write the server's MCP tools (see `store`); tools nested past pydantic's limit are
        not worth keeping."""
        try:
            dumped = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]
        except (ValueError, RecursionError):
            return
        self.store(name, server, dumped)

    def _path(self, name: str, server: ServerConfig) -> Path | None:
        if self.directory is None:
            return None
        return self.directory / f"{cache_key(name, server)}.json"


def _read_regular_file(path: Path, limit: int) -> bytes:
    """The bytes of `path` if it is a regular file (not a link, FIFO or device) of at most
    `limit` bytes; OSError otherwise. Opening never blocks (a planted FIFO)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            raise OSError(f"{path} is not a regular file of at most {limit} bytes")
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise OSError(f"{path} grew past {limit} bytes")
    return data


def _prune(directory: Path) -> None:
    """Remove all but the `_KEPT_FILES` most recently written entries."""
    try:
        files = sorted(directory.glob("*.json"), key=lambda f: f.stat().st_mtime, reverse=True)
    except OSError:  # one vanished meanwhile (another process pruned): next time
        return
    for stale in files[_KEPT_FILES:]:
        with contextlib.suppress(OSError):
            stale.unlink()
