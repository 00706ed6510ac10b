"""The upstream tool catalog: identifiers, ranked search and Python-stub docs.

Search is `search_index`'s business: one index part per upstream (texts, BM25 terms,
embeddings), built in a background thread and reused by the catalog that replaces this one
for every upstream whose tools did not change (`Catalog(..., previous=old)`). Docs are
`tool_docs`'s: within a fixed token budget whatever the size of a server or a tool. Errors
for unknown names name a few close ones (`close_names`), never a whole list. Nothing here
costs in proportion to the catalog per call, beyond numpy work over its scores.
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import mcp_types

from .errors import UnknownToolError
from .memory import collection_paused
from .naming import assign_identifiers
from .tool_formatter import ToolSchemaFormatter, ToolStubSource, clip, one_line

if TYPE_CHECKING:
    from .close_names import NameIndex
    from .embeddings import EmbeddingStore
    from .ranking import Ranking
    from .search_index import SearchIndex, ToolGroup

__all__ = ["Catalog", "SearchHit", "ToolEntry"]

_SHOWN_CHARS = 100  # of a name, in an error message
_LISTED_TOOLS = 5  # tool names an unknown-tool error gives at most (contract §6)
_LISTED_SERVERS = 10  # servers an unknown-server error lists, past which it names the closest
_MAX_PATTERN_CHARS = 100  # of a tool name pattern in `docs`
HIT_SIGNATURE_CHARS = 300  # of a search hit's signature
HIT_NAME_CHARS = 256  # of a search hit's tool name
MAX_QUERY_CHARS = 1000  # of a search query, the part that is ranked (contract §7)
MAX_SEARCH_LIMIT = 100  # hits of one search, whatever limit is asked for


@dataclass(frozen=True, slots=True)
class ToolEntry:
    """One upstream tool as the guest sees it."""

    server: str
    tool: str
    server_id: str
    tool_id: str
    schema: mcp_types.Tool
    needs_approval: bool = False

    @property
    def source(self) -> ToolStubSource:
        return ToolStubSource(self.server, self.server_id, self.tool_id, self.schema)

    @property
    def note(self) -> str:
        """What the model should know before calling: approval, or read-only (contract §8)."""
        if self.needs_approval:
            return "needs approval: a person is asked once per run (MCP_CODE_APPROVAL)"
        hints = self.schema.annotations
        return "read-only" if hints is not None and hints.read_only_hint is True else ""


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One ranked search result (contract §3 `search_tools`)."""

    server: str
    tool: str
    signature: str
    description: str
    score: float

    def to_json(self) -> dict[str, Any]:
        return {
            "server": self.server,
            "tool": self.tool,
            "signature": self.signature,
            "description": self.description,
            "score": round(min(max(self.score, 0.0), 1.0), 3),
        }


class Catalog:
    """Every exposed upstream tool, with identifiers assigned by the contract §4 rule.

    Args:
        tools: per server (in config order), its tools in `tools/list` order.
        descriptions: the servers' descriptions from the config.
        servers: every configured server, in config order: identifiers are assigned over
            these first, so a server keeps its identifier whichever others have tools.
        ranking: how search weighs words and meaning.
        embeddings: where tool vectors are cached (default: the process's store under the
            cache directory). With `background` (the default) the search index is built on
            first use (or `ready()`) in a thread; without, here and now.
        needs_approval: whether a tool needs approval (contract §8). Pass the same callable
            to every catalog of a gateway: with `previous`, entries are reused only then.
        previous: the catalog this one replaces. The search index parts (texts, terms,
            embeddings) and entries of each server whose tools, description and ranking are
            unchanged are taken from it, so a change to one upstream reads and embeds that
            upstream alone. `previous` is not kept.
    """

    def __init__(
        self,
        tools: Mapping[str, Sequence[mcp_types.Tool]],
        descriptions: Mapping[str, str] | None = None,
        *,
        formatter: ToolSchemaFormatter | None = None,
        ranking: Ranking | None = None,
        embeddings: EmbeddingStore | None = None,
        background: bool = True,
        needs_approval: Callable[[str, mcp_types.Tool], bool] | None = None,
        servers: Sequence[str] = (),
        previous: Catalog | None = None,
    ) -> None:
        self.formatter = formatter or ToolSchemaFormatter()
        self._ranking = ranking
        self.descriptions = dict(descriptions or {})
        # Over every configured server (`servers`, in config order) and not only those with
        # tools: an identifier must not move to another server as upstreams come and go.
        self.server_ids = assign_identifiers([*servers, *tools])
        self._needs_approval = needs_approval
        self._groups: dict[str, ToolGroup] = {}
        self._by_server: dict[str, dict[str, ToolEntry]] = {}
        with collection_paused():  # 10,000 entries set off full collections of a big heap
            for server, server_tools in tools.items():
                kept = self._reused(previous, server, server_tools)
                self._by_server[server] = (
                    kept if kept is not None else self._entries(server, server_tools)
                )
        self.entries: tuple[ToolEntry, ...] = tuple(
            e for entries in self._by_server.values() for e in entries.values()
        )
        self._spans: dict[str, tuple[int, int]] = {}  # each server's entries, start to end
        offset = 0
        for server, entries in self._by_server.items():
            self._spans[server] = (offset, offset + len(entries))
            offset += len(entries)
        self._embeddings = embeddings
        self._background = background
        self._index: Future[SearchIndex] | None = None
        self._ready: Future[Any] | None = None
        self._tool_names: dict[str, NameIndex] = {}  # per server, made on a first unknown name
        self._tool_ids: dict[str, dict[str, str]] = {}  # per server, made on first use
        self._shown_hits: dict[int, tuple[str, str, str]] = {}  # tool, signature, description
        if not background:
            self._built().result()  # built now, embeddings included

    def _entries(self, server: str, tools: Sequence[mcp_types.Tool]) -> dict[str, ToolEntry]:
        ids = assign_identifiers(t.name for t in tools)
        approval = self._needs_approval
        return {
            t.name: ToolEntry(
                server,
                t.name,
                self.server_ids[server],
                ids[t.name],
                t,
                needs_approval=bool(approval and approval(server, t)),
            )
            for t in tools
        }

    def _reused(
        self, previous: Catalog | None, server: str, tools: Sequence[mcp_types.Tool]
    ) -> dict[str, ToolEntry] | None:
        """Take `previous`'s search parts for `server` when its tools are unchanged, and its
        entries too when identifiers and approval are the same; None: make the entries."""
        group = previous._groups.get(server) if previous is not None else None
        if previous is None or group is None:
            return None
        if not group.matches(self.descriptions.get(server, ""), tools, self.ranking):
            return None
        self._groups[server] = group
        entries = previous._by_server.get(server)
        same = previous.server_ids.get(server) == self.server_ids[server]
        if entries is None or not same or previous._needs_approval != self._needs_approval:
            return None
        return entries

    @property
    def ranking(self) -> Ranking:
        """How search weighs words and meaning (default: `Ranking()`)."""
        if self._ranking is None:
            from .ranking import Ranking

            self._ranking = Ranking()
        return self._ranking

    def ready(self) -> Future[Any]:
        """Done once search answers without waiting: the index built (in a thread, unless
        the catalog was made with `background=False`) and the embedding model loaded for the
        queries (after the index, in the same thread). `await asyncio.wrap_future(
        catalog.ready())` keeps the first search off the loop. Starts the build if need be."""
        if self._ready is None:
            from .search_index import answering

            self._ready = answering(self._built())
        return self._ready

    def _built(self) -> Future[SearchIndex]:
        """The search index, built on first use (the model for queries may still load)."""
        if self._index is None:
            # Imported here: numpy and the embeddings cost a run that never searches.
            from .embeddings import EmbeddingStore
            from .search_index import ToolGroup, build_index

            for server, entries in self._by_server.items():
                if server not in self._groups:
                    description = self.descriptions.get(server, "")
                    tools = [e.schema for e in entries.values()]
                    self._groups[server] = ToolGroup(server, description, tools, self.ranking)
            cache = self._embeddings or EmbeddingStore.default()
            store = cache if self.ranking.semantic_weight > 0 and self.entries else None
            groups = [self._groups[server] for server in self._by_server]
            background = self._background and bool(self.entries)  # nothing to wait for
            self._index = build_index(
                groups,
                self.entries,
                self.ranking,
                store,
                background=background,
                cache=cache.directory,
            )
        return self._index

    @property
    def servers(self) -> list[str]:
        return list(self._by_server)

    def tools_of(self, server: str) -> list[ToolEntry]:
        """The entries of one server; raises `UnknownToolError` naming the servers that exist."""
        return list(self._server(server).values())

    def get(self, server: str, tool: str) -> ToolEntry:
        """The entry for original MCP names; unknown names raise naming the closest ones."""
        entries = self._server(server)
        if tool in entries:
            return entries[tool]
        raise self._unknown_tool(server, tool)

    def guest_index(self) -> dict[str, dict[str, Any]]:
        """What the worker needs to build `tools.<server>.<tool>`: identifiers → original names."""
        return {
            self.server_ids[server]: {
                "name": server,
                "tools": {e.tool_id: e.tool for e in entries.values()},
            }
            for server, entries in self._by_server.items()
        }

    def signature(self, entry: ToolEntry) -> str:
        return self.formatter.signature(entry.source)

    def search(
        self,
        query: str,
        limit: int = 5,
        *,
        server: str | None = None,
        prefer: Collection[str] = (),
    ) -> list[SearchHit]:
        """Tools ranked by words and meaning over name, description, parameters and server;
        best first. A tool named exactly like the query ranks first; equal scores keep
        catalog order. A query of nothing but unknown words finds nothing. Only the first
        `MAX_QUERY_CHARS` characters are ranked.

        Args:
            server: rank only that server's tools (the limit applies after the filter).
            prefer: servers the caller is already using: their matches rank a little higher.
        """
        if server is not None:
            self._server(server)  # an unknown server is an error naming the closest ones
        limit = min(limit, MAX_SEARCH_LIMIT)
        if limit <= 0 or not self.entries:
            return []
        span = self._spans[server] if server is not None else (0, len(self.entries))
        preferred = [self._spans[s] for s in set(prefer) if s in self._spans]
        index = self._built().result()
        ranked = index.ranked(
            query[:MAX_QUERY_CHARS], limit, span=span, preferred=preferred, exact=query
        )
        return [self._hit(i, score) for i, score in ranked]

    def _hit(self, position: int, score: float) -> SearchHit:
        """A hit on the entry at `position`; its texts are made once."""
        shown = self._shown_hits.get(position)
        if shown is None:
            entry = self.entries[position]
            signature = clip(self.signature(entry), HIT_SIGNATURE_CHARS)
            shown = (clip(entry.tool, HIT_NAME_CHARS), signature, _described(entry))
            self._shown_hits[position] = shown
        return SearchHit(self.entries[position].server, *shown, score)

    def docs(self, server: str, tool: str | None = None, *, page: int = 1) -> str:
        """Python-stub documentation of one tool, or of one server's tools, within a fixed
        token budget (`tool_docs.DOCS_BUDGET_TOKENS`) however many tools there are.

        Takes original names and, failing those, the identifiers of the signatures
        (`docs("my_data", "get_note")` for server `my-data`, tool `get-note`). A server's
        tools are whole stubs while they fit, else one line each, `page` by page. A `tool`
        with `*`, `?` or `[` that names no tool is a pattern (`"*issue*"`): the tools whose
        names match it, listed the same way.
        """
        from .tool_docs import Listing, listing, tool_docs

        if server not in self._by_server:
            server = self._server_by_id.get(server, server)
        entries = self._server(server)
        about = Listing(
            server, self.server_ids[server], self.descriptions.get(server, ""), total=len(entries)
        )
        if tool is None:
            return listing(self.formatter, about, list(entries.values()), page=page)
        name = tool if tool in entries else self._tool_by_id(server).get(tool, tool)
        if name in entries:
            return tool_docs(self.formatter, entries[name])
        matching = _matching(entries.values(), tool)
        if matching:
            return listing(self.formatter, replace(about, pattern=tool), matching, page=page)
        raise self._unknown_tool(server, tool)

    def _server(self, server: str) -> dict[str, ToolEntry]:
        if server in self._by_server:
            return self._by_server[server]
        names = list(self._by_server)
        message = f"unknown server {_shown(server)}"
        message += _did_you_mean(self._server_names.closest(server))
        if len(names) <= _LISTED_SERVERS:
            message += f"; servers: {', '.join(_shown(n) for n in names) or '(none)'}"
        else:
            message += f"; {len(names):,} servers: list_servers() names them"
        raise UnknownToolError(message)

    def _unknown_tool(self, server: str, tool: str) -> UnknownToolError:
        """The error for a tool `server` lacks: at most `_LISTED_TOOLS` names in it."""
        from .close_names import NameIndex

        entries = self._by_server[server]
        if server not in self._tool_names:
            self._tool_names[server] = NameIndex(list(entries))
        close = self._tool_names[server].closest(tool, _LISTED_TOOLS)
        message = f"server {_shown(server)} has no tool {_shown(tool)}" + _did_you_mean(close)
        if len(entries) <= _LISTED_TOOLS:
            message += f"; its tools: {', '.join(_shown(n) for n in entries) or '(none)'}"
        else:
            message += (
                f"; it has {len(entries):,} tools: get_tool_docs({_shown(server)}) lists them, "
                "search_tools('<what you need>') finds them by what they do"
            )
        return UnknownToolError(message)

    @functools.cached_property
    def _server_names(self) -> NameIndex:
        from .close_names import NameIndex

        return NameIndex(list(self._by_server))

    @functools.cached_property
    def _server_by_id(self) -> dict[str, str]:
        return {ident: server for server, ident in self.server_ids.items()}

    def _tool_by_id(self, server: str) -> dict[str, str]:
        """Original tool names of `server` by identifier (made on first use)."""
        if server not in self._tool_ids:
            entries = self._by_server[server].values()
            self._tool_ids[server] = {e.tool_id: e.tool for e in entries}
        return self._tool_ids[server]


def _described(entry: ToolEntry) -> str:
    description = one_line(entry.schema.description)
    if not entry.note:
        return description
    return f"[{entry.note}] {description}".rstrip()


def _shown(name: str) -> str:
    """A name for an error message: a guest may send one of 30 million characters."""
    return repr(name) if len(name) <= _SHOWN_CHARS else repr(name[:_SHOWN_CHARS]) + "…"


def _did_you_mean(names: Sequence[str]) -> str:
    return f" (did you mean {', '.join(_shown(n) for n in names)}?)" if names else ""


def _matching(entries: Iterable[ToolEntry], pattern: str) -> list[ToolEntry]:
    """The entries whose original name or identifier matches a glob pattern (any case);
    none when `pattern` has no wildcard or is too long to be one."""
    if len(pattern) > _MAX_PATTERN_CHARS or not any(c in pattern for c in "*?["):
        return []
    match = re.compile(fnmatch.translate(pattern), re.IGNORECASE).match
    return [e for e in entries if match(e.tool) or match(e.tool_id)]
