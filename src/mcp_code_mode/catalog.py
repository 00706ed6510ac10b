"""The upstream tool catalog: identifiers, ranked search and Python-stub docs. Pure: no I/O."""

from __future__ import annotations

import difflib
import functools
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import bm25s
import numpy
import Stemmer
from mcp import types as mcp_types

from .errors import UnknownToolError
from .naming import assign_identifiers
from .search_terms import CONCEPTS, STOP_WORDS
from .tool_formatter import ToolSchemaFormatter, ToolStubSource, one_line

__all__ = ["Catalog", "Ranking", "SearchHit", "ToolEntry", "tokenize"]

# bm25s sets its own logger to DEBUG; keep its index-building chatter off our stderr.
logging.getLogger("bm25s").setLevel(logging.WARNING)

_SHOWN_CHARS = 100  # of an unknown name, in an error message
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
# Field weights: how many times a field's tokens count in a tool's document.
_NAME_WEIGHT, _PARAM_WEIGHT, _SERVER_WEIGHT = 3, 1, 1
_STEMMER = Stemmer.Stemmer("english")


@dataclass(frozen=True, slots=True)
class ToolEntry:
    """One upstream tool as the guest sees it."""

    server: str
    tool: str
    server_id: str
    tool_id: str
    schema: mcp_types.Tool

    @property
    def source(self) -> ToolStubSource:
        return ToolStubSource(self.server, self.server_id, self.tool_id, self.schema)


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


@dataclass(frozen=True, slots=True)
class Ranking:
    """How search text becomes BM25 terms, and how query terms are weighed.

    Args:
        stem: reduce words to their Snowball English stem (`deleting` → `delet`).
        concepts: match words of one meaning (`remove`, `erase` → `delete`;
            see `search_terms.CONCEPTS`).
        own_word_weight: with `concepts`, the extra weight of the user's very word over its
            synonyms ("list directory" prefers `list_directory` to `list_folders`).
        parameter_docs: index parameter descriptions as well as parameter names.
    """

    stem: bool = True
    concepts: bool = True
    own_word_weight: float = 0.1
    parameter_docs: bool = True

    def words(self, text: str) -> list[str]:
        """Words of `text` split on `_`, `-`, camelCase and digits; lower-cased, stemmed."""
        words = [w.lower() for w in _WORD.findall(text)]
        words = [w for w in words if w not in STOP_WORDS and not w.isdigit()]
        return _STEMMER.stemWords(words) if self.stem else [_fold_plural(w) for w in words]

    def tokenize(self, text: str) -> list[str]:
        """Terms of `text`: its words, each word of a concept replaced by the concept."""
        return self.fold(self.words(text))

    def fold(self, words: list[str]) -> list[str]:
        """`words` with each word of a concept replaced by the concept."""
        if not self.concepts:
            return words
        table = self._concepts()
        return [table.get(w, w) for w in words]

    def own_words(self, words: list[str]) -> list[str]:
        """Those of `words` that belong to a concept, as they are (scored again at
        `own_word_weight` against the tools' own words)."""
        if not (self.concepts and self.own_word_weight):
            return []
        table = self._concepts()
        return [w for w in words if w in table]

    def _concepts(self) -> dict[str, str]:
        return _stemmed_concepts() if self.stem else _plain_concepts()


def tokenize(text: str) -> list[str]:
    """The default `Ranking`'s terms of `text`."""
    return Ranking().tokenize(text)


def _fold_plural(word: str) -> str:
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


@functools.cache
def _plain_concepts() -> dict[str, str]:
    return {_fold_plural(w): f"~{head}" for head, words in CONCEPTS.items() for w in (head, *words)}


@functools.cache
def _stemmed_concepts() -> dict[str, str]:
    """`CONCEPTS` as stems; multi-word phrases are not supported, single words only."""
    table: dict[str, str] = {}
    for head, words in CONCEPTS.items():
        stem_head = "~" + _STEMMER.stemWord(head)
        for word in (head, *words):
            table.setdefault(_STEMMER.stemWord(word), stem_head)
    return table


class Catalog:
    """Every exposed upstream tool, with identifiers assigned by the contract §4 rule.

    Args:
        tools: per server (in config order), its tools in `tools/list` order.
        descriptions: the servers' descriptions from the config.
    """

    def __init__(
        self,
        tools: Mapping[str, Sequence[mcp_types.Tool]],
        descriptions: Mapping[str, str] | None = None,
        *,
        formatter: ToolSchemaFormatter | None = None,
        ranking: Ranking | None = None,
    ) -> None:
        self.formatter = formatter or ToolSchemaFormatter()
        self.ranking = ranking or Ranking()
        self.descriptions = dict(descriptions or {})
        self.server_ids = assign_identifiers(tools)
        self._by_server: dict[str, dict[str, ToolEntry]] = {}
        for server, server_tools in tools.items():
            ids = assign_identifiers(t.name for t in server_tools)
            self._by_server[server] = {
                t.name: ToolEntry(server, t.name, self.server_ids[server], ids[t.name], t)
                for t in server_tools
            }
        self.entries: tuple[ToolEntry, ...] = tuple(
            e for entries in self._by_server.values() for e in entries.values()
        )
        self._build_index(self.entries)

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

    def search(self, query: str, limit: int = 5, *, server: str | None = None) -> list[SearchHit]:
        """Tools ranked by BM25 over name, description, parameters and server; best first.

        With `server`, only that server's tools are ranked (the limit applies after the filter).
        """
        if server is not None:
            self._server(server)  # an unknown server is an error listing the known ones
        if limit <= 0 or not self.entries:
            return []
        exact = self._exact_matches(query)
        words = self.ranking.words(query)
        terms = [t for t in self.ranking.fold(words) if t in self._vocabulary]
        own = [w for w in self.ranking.own_words(words) if w in self._own_vocabulary]
        ranked: list[tuple[float, ToolEntry]] = []
        if terms:
            scores = self._index.get_scores(terms)
            if own:
                scores = scores + self.ranking.own_word_weight * self._own_index.get_scores(own)
            order = numpy.argsort(-scores, kind="stable")
            ranked = [(float(scores[i]), self.entries[i]) for i in order if scores[i] > 0]
        if server is not None:
            exact = [e for e in exact if e.server == server]
            ranked = [(s, e) for s, e in ranked if e.server == server]
        top = max((s for s, _ in ranked), default=1.0)
        ordered = [(top + 1.0, e) for e in exact] + [(s, e) for s, e in ranked if e not in exact]
        return [
            SearchHit(e.server, e.tool, self.signature(e), one_line(e.schema.description), s)
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
            return self.formatter.stub(self.get(server, tool).source)
        entries = self._server(server)
        header = f"# tools.{self.server_ids[server]}  (server {server!r})"
        description = self.descriptions.get(server)
        parts = [header + (f"\n# {description}" if description else "")]
        parts += [self.formatter.stub(e.source) for e in entries.values()]
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

    def _build_index(self, entries: Sequence[ToolEntry]) -> None:
        """Two BM25 indexes: of concept-folded terms, and of the tools' own words."""
        folded = [self._document(e, self.ranking.tokenize) for e in entries]
        own = [self._document(e, self.ranking.words) for e in entries]
        self._vocabulary = {t for doc in folded for t in doc}
        self._own_vocabulary = {t for doc in own for t in doc}
        self._index, self._own_index = bm25s.BM25(), bm25s.BM25()
        if entries:
            self._index.index([doc or ["_"] for doc in folded], show_progress=False)
            self._own_index.index([doc or ["_"] for doc in own], show_progress=False)

    def _document(self, entry: ToolEntry, tokenize: Callable[[str], list[str]]) -> list[str]:
        schema = entry.schema.input_schema or {}
        properties = schema.get("properties") or {}
        params = " ".join(properties)
        if self.ranking.parameter_docs:
            params += " " + " ".join(
                str(p.get("description") or "") for p in properties.values() if isinstance(p, dict)
            )
        server = f"{entry.server} {self.descriptions.get(entry.server, '')}"
        return (
            tokenize(entry.tool) * _NAME_WEIGHT
            + tokenize(entry.schema.description or "")
            + tokenize(params) * _PARAM_WEIGHT
            + tokenize(server) * _SERVER_WEIGHT
        )


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
