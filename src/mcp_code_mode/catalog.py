"""The upstream tool catalog: identifiers, ranked search and Python-stub docs.

Search is `ranking`'s business; the catalog hands it each tool's text and orders its scores
(exact names first, ties in catalog order). Tool embeddings are built in a background thread
and cached on disk by `embeddings.EmbeddingStore`; everything else here is pure.
"""

from __future__ import annotations

import difflib
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
    from .ranking import Ranker, Ranking, SemanticRanker, ToolText

__all__ = ["Catalog", "SearchHit", "ToolEntry"]

_SHOWN_CHARS = 100  # of an unknown name, in an error message
MAX_QUERY_CHARS = 1000  # of a search query, the part that is ranked (contract §7)
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
            first use (or `ready()`), its embeddings in a thread; without, here and now.
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
    ) -> None:
        self.formatter = formatter or ToolSchemaFormatter()
        self._ranking = ranking
        self.descriptions = dict(descriptions or {})
        # Over every configured server (`servers`, in config order) and not only those with
        # tools: an identifier must not move to another server as upstreams come and go.
        self.server_ids = assign_identifiers([*servers, *tools])
        self._by_server: dict[str, dict[str, ToolEntry]] = {}
        for server, server_tools in tools.items():
            ids = assign_identifiers(t.name for t in server_tools)
            self._by_server[server] = {
                t.name: ToolEntry(
                    server,
                    t.name,
                    self.server_ids[server],
                    ids[t.name],
                    t,
                    needs_approval=bool(needs_approval and needs_approval(server, t)),
                )
                for t in server_tools
            }
        self.entries: tuple[ToolEntry, ...] = tuple(
            e for entries in self._by_server.values() for e in entries.values()
        )
        self._embeddings = embeddings
        self._background = background
        self._semantic: SemanticRanker | None = None
        self._built_ranker: Ranker | None = None
        if not background:
            self._ranker  # noqa: B018  # built now, embeddings included

    @property
    def ranking(self) -> Ranking:
        """How search weighs words and meaning (default: `Ranking()`)."""
        if self._ranking is None:
            from .ranking import Ranking

            self._ranking = Ranking()
        return self._ranking

    @property
    def _ranker(self) -> Ranker:
        """The search index, built on first use: a run that only calls tools never needs it
        (its lexical part takes a moment at a thousand tools, its embeddings a thread)."""
        if self._built_ranker is None:
            # Imported here: numpy, bm25s and the embeddings cost a run that never searches.
            from .embeddings import EmbeddingStore
            from .ranking import FusedRanker, LexicalRanker, SemanticRanker

            groups = [[self._text(e) for e in group.values()] for group in self._by_server.values()]
            if self.ranking.semantic_weight > 0 and self.entries:
                store = self._embeddings or EmbeddingStore.default()
                self._semantic = SemanticRanker.build(groups, store, background=self._background)
            lexical = LexicalRanker([t for group in groups for t in group], self.ranking)
            weight = self.ranking.semantic_weight
            self._built_ranker = FusedRanker(lexical, self._semantic, weight=weight)
        return self._built_ranker

    def ready(self) -> Future[Any]:
        """Done once search has every index it will use (the embeddings build in a thread);
        `await asyncio.wrap_future(catalog.ready())` keeps the first search off the loop.
        Builds the index if nothing has yet."""
        self._ranker  # noqa: B018  # built now, its embeddings in the background
        if self._semantic is None:
            done: Future[Any] = Future()
            done.set_result(None)
            return done
        return self._semantic.ready()

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
            self._server(server)  # an unknown server is an error listing the known ones
        if limit <= 0 or not self.entries:
            return []
        import numpy

        exact = self._exact_matches(query)
        scores = self._ranker.scores(query[:MAX_QUERY_CHARS])
        if prefer:
            preferred = numpy.array([e.server in prefer for e in self.entries])
            scores = numpy.where(preferred, scores * _PREFER_FACTOR, scores)
        order = numpy.argsort(-scores, kind="stable")
        ranked = [(float(scores[i]), self.entries[i]) for i in order if scores[i] > 0]
        if server is not None:
            exact = [e for e in exact if e.server == server]
            ranked = [(s, e) for s, e in ranked if e.server == server]
        top = max((s for s, _ in ranked), default=1.0)
        ordered = [(top + 1.0, e) for e in exact] + [(s, e) for s, e in ranked if e not in exact]
        return [
            SearchHit(e.server, e.tool, self.signature(e), _described(e), s)
            for s, e in ordered[:limit]
        ]

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

    def _exact_matches(self, query: str) -> list[ToolEntry]:
        """Entries named exactly like the query: original names first, then identifiers."""
        q = query.strip().lower()
        if not q:
            return []
        by_name = [e for e in self.entries if q in (e.tool.lower(), f"{e.server}.{e.tool}".lower())]
        by_id = [e for e in self.entries if q == e.tool_id.lower() and e not in by_name]
        return by_name + by_id

    def _text(self, entry: ToolEntry) -> ToolText:
        from .ranking import ToolText

        schema = entry.schema.input_schema or {}
        properties = schema.get("properties") or {}
        if not isinstance(properties, dict):  # an upstream's schema is not checked
            properties = {}
        docs = [str(p.get("description") or "") for p in properties.values() if isinstance(p, dict)]
        return ToolText(
            name=entry.tool,
            description=entry.schema.description or "",
            params=tuple(str(name) for name in properties),
            param_docs=tuple(d for d in docs if d),
            server=entry.server,
            server_description=self.descriptions.get(entry.server, ""),
        )


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
