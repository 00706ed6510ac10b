"""The upstream tool catalog: identifiers, ranked search and Python-stub docs.

Search is `ranking`'s business; the catalog hands it each tool's text and orders its scores
(exact names first, ties in catalog order). Tool embeddings are built in a background thread
and cached on disk by `embeddings.EmbeddingStore`; everything else here is pure.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import mcp_types

from .errors import UnknownToolError
from .naming import assign_identifiers
from .tool_formatter import ToolSchemaFormatter, ToolStubSource, one_line

if TYPE_CHECKING:
    from .embeddings import EmbeddingStore
    from .ranking import Ranking, Scores
    from .search_index import SearchIndex, ToolGroup

__all__ = ["Catalog", "SearchHit", "ToolEntry"]

_SHOWN_CHARS = 100  # of an unknown name, in an error message
MAX_QUERY_CHARS = 1000  # of a search query, the part that is ranked (contract §7)
MAX_SEARCH_LIMIT = 100  # hits of one search, whatever limit is asked for
_PREFER_FACTOR = 1.15  # of the scores of the servers a search says it is already using


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
        if not background:
            self.ready().result()  # built now, embeddings included

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
        if previous is None or group is None or previous._ranking != self._ranking:
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
        """Done once search has every index it will use (built in a thread, unless the
        catalog was made with `background=False`); `await asyncio.wrap_future(catalog.ready())`
        keeps the first search off the loop. Starts the build if nothing has yet."""
        if self._index is None:
            # Imported here: numpy and the embeddings cost a run that never searches.
            from .embeddings import EmbeddingStore
            from .search_index import ToolGroup, build_index

            for server, entries in self._by_server.items():
                if server not in self._groups:
                    description = self.descriptions.get(server, "")
                    tools = [e.schema for e in entries.values()]
                    self._groups[server] = ToolGroup(server, description, tools, self.ranking)
            store = None
            if self.ranking.semantic_weight > 0 and self.entries:
                store = self._embeddings or EmbeddingStore.default()
            groups = [self._groups[server] for server in self._by_server]
            background = self._background and bool(self.entries)  # nothing to wait for
            self._index = build_index(groups, self.ranking, store, background=background)
        return self._index

    @property
    def servers(self) -> list[str]:
        return list(self._by_server)

    def tools_of(self, server: str) -> list[ToolEntry]:
        """The entries of one server; raises `UnknownToolError` naming the servers that exist."""
        return list(self._server(server).values())

    def get(self, server: str, tool: str) -> ToolEntry:
        """The entry for original MCP names; unknown names raise with the closest ones."""
        entries = self._server(server)
        if tool in entries:
            return entries[tool]
        raise UnknownToolError(
            f"server {_shown(server)} has no tool {_shown(tool)}"
            + _suggest(tool, list(entries))
            + f"; its tools: {', '.join(entries) or '(none)'}"
        )

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
        start, end = self._spans[server] if server is not None else (0, len(self.entries))
        exact = [i for i in self._exact_matches(query) if start <= i < end]
        scores = self.ready().result().scores(query[:MAX_QUERY_CHARS])
        for preferred in set(prefer):
            if preferred in self._spans:
                low, high = self._spans[preferred]
                scores[low:high] *= _PREFER_FACTOR
        window = scores[start:end]
        ranked = [start + int(i) for i in _top(window, limit + len(exact))]
        best = float(window.max(initial=0.0)) if window.size else 0.0
        ordered = [(best if best > 0 else 1.0) + 1.0 for _ in exact]
        chosen = exact + [i for i in ranked if i not in exact]
        ordered += [float(scores[i]) for i in chosen[len(exact) :]]
        return [
            self._hit(self.entries[i], score)
            for i, score in zip(chosen[:limit], ordered[:limit], strict=True)
        ]

    def _hit(self, entry: ToolEntry, score: float) -> SearchHit:
        return SearchHit(entry.server, entry.tool, self.signature(entry), _described(entry), score)

    def docs(self, server: str, tool: str | None = None) -> str:
        """Python-stub documentation of one tool, or of every tool of one server.

        Takes original names and, failing those, the identifiers of the signatures
        (`docs("my_data", "get_note")` for server `my-data`, tool `get-note`).
        """
        if server not in self._by_server:
            server = {i: s for s, i in self.server_ids.items()}.get(server, server)
        if tool is not None:
            entries = self._server(server)
            if tool not in entries:
                tool = next((e.tool for e in entries.values() if e.tool_id == tool), tool)
            return _stub(self.formatter, self.get(server, tool))
        entries = self._server(server)
        header = f"# tools.{self.server_ids[server]}  (server {server!r})"
        description = self.descriptions.get(server)
        parts = [header + (f"\n# {description}" if description else "")]
        parts += [_stub(self.formatter, e) for e in entries.values()]
        return "\n\n".join(parts)

    def _server(self, server: str) -> dict[str, ToolEntry]:
        if server in self._by_server:
            return self._by_server[server]
        names = list(self._by_server)
        raise UnknownToolError(
            f"unknown server {_shown(server)}"
            + _suggest(server, names)
            + f"; servers: {', '.join(names) or '(none)'}"
        )

    def _exact_matches(self, query: str) -> list[int]:
        """Entries named exactly like the query: original names (or `server.tool`) first,
        then identifiers; each in catalog order."""
        q = query.strip().lower()
        if not q:
            return []
        by_name, by_id = self._names
        named = by_name.get(q, [])
        return named + [i for i in by_id.get(q, []) if i not in named]

    @functools.cached_property
    def _names(self) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
        """Entry positions by lower-cased original name and `server.tool`, and by identifier."""
        by_name: dict[str, list[int]] = {}
        by_id: dict[str, list[int]] = {}
        for i, e in enumerate(self.entries):
            by_name.setdefault(e.tool.lower(), []).append(i)
            by_name.setdefault(f"{e.server}.{e.tool}".lower(), []).append(i)
            by_id.setdefault(e.tool_id.lower(), []).append(i)
        return by_name, by_id


def _top(scores: Scores, k: int) -> list[int]:
    """Positions of the `k` best positive scores, best first, ties in position order;
    O(n) numpy work and O(k log k) sorting, whatever the catalog's size."""
    import numpy

    positive = numpy.flatnonzero(scores > 0)
    if positive.size > k:
        values = scores[positive]
        kth = numpy.partition(values, positive.size - k)[positive.size - k]
        above = positive[values > kth]
        tied = positive[values == kth][: k - above.size]
        positive = numpy.concatenate([above, tied])
    order = numpy.lexsort((positive, -scores[positive]))
    return [int(i) for i in positive[order]]


def _described(entry: ToolEntry) -> str:
    description = one_line(entry.schema.description)
    if not entry.note:
        return description
    return f"[{entry.note}] {description}".rstrip()


def _stub(formatter: ToolSchemaFormatter, entry: ToolEntry) -> str:
    stub = formatter.stub(entry.source)
    return f"# {entry.note}\n{stub}" if entry.note else stub


def _shown(name: str) -> str:
    """A name for an error message: a guest may send one of 30 million characters."""
    return repr(name) if len(name) <= _SHOWN_CHARS else repr(name[:_SHOWN_CHARS]) + "…"


def _suggest(name: str, candidates: Sequence[str]) -> str:
    options = list(dict.fromkeys(candidates))
    # difflib is quadratic: a name far longer than every candidate resembles none of them.
    if len(name) > 2 * max(map(len, options), default=0) + 8:
        return ""
    close = difflib.get_close_matches(name, options, n=3, cutoff=0.5)
    return f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""
