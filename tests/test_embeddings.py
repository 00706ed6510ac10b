"""`embedder`: wordllama's vectors loaded offline; `embeddings`: the per-upstream disk cache."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy
import pytest

from mcp_code_mode import disk_cache
from mcp_code_mode.catalog import Catalog
from mcp_code_mode.embedder import Embedder, Vectors, load_embedder
from mcp_code_mode.embeddings import EmbeddingStore, default_cache_dir
from tests.test_catalog import DESCRIPTIONS, TOOLS, tool


def real() -> Embedder:
    embedder = load_embedder()
    assert embedder is not None, "wordllama's files are part of the install"
    return embedder


class Counting(Embedder):
    """The real model, counting what it is asked to embed."""

    def __init__(self) -> None:
        super().__init__(real().tokenizer, real().table)
        self.documents = 0

    def embed_documents(self, documents: Sequence[Sequence[str]]) -> Vectors:
        self.documents += len(documents)
        return super().embed_documents(documents)


def test_vectors_are_unit_length_deterministic_and_zero_for_no_text() -> None:
    vectors = real().embed(["list the files", "", "list the files", "x" * 100_000, "\ud800\x00"])
    assert vectors.shape == (5, 256)
    assert numpy.allclose(numpy.linalg.norm(vectors[[0, 3]], axis=1), 1.0, atol=1e-5)
    assert not vectors[1].any()
    assert (vectors[0] == vectors[2]).all()


def test_similar_meanings_are_closer_than_unrelated_ones() -> None:
    folder, directory, weather = real().embed(["folder", "directory", "weather"])
    assert folder @ directory > folder @ weather + 0.2


def test_loading_leaves_logging_and_the_network_alone() -> None:
    code = (
        "import logging, sys\n"
        "from mcp_code_mode.embedder import load_embedder\n"
        "assert load_embedder() is not None\n"
        "assert 'wordllama' not in sys.modules and 'requests' not in sys.modules, sorted(sys.modules)\n"
        "assert logging.getLogger().handlers == []\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.endswith("_PROXY")}
    env["HTTPS_PROXY"] = env["HTTP_PROXY"] = "http://127.0.0.1:9"  # any download would fail
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=60)


def test_a_restart_embeds_nothing_again(tmp_path: Path) -> None:
    first = Counting()
    before = Catalog(
        TOOLS,
        DESCRIPTIONS,
        embeddings=EmbeddingStore(tmp_path, embedder=lambda: first),
        background=False,
    )
    assert first.documents == 25
    disk_cache.flush()
    assert len(list(tmp_path.glob("*.vectors"))) == len(TOOLS)  # one file per upstream
    again = Counting()
    after = Catalog(
        TOOLS,
        DESCRIPTIONS,
        embeddings=EmbeddingStore(tmp_path, embedder=lambda: again),
        background=False,
    )
    for query in ("remove a meeting", "unread letters", "commit history"):
        assert after.search(query, limit=10) == before.search(query, limit=10)
    assert again.documents == 0


def test_one_changed_upstream_is_the_only_one_embedded_again(tmp_path: Path) -> None:
    counting = Counting()
    store = EmbeddingStore(tmp_path, embedder=lambda: counting)
    Catalog(TOOLS, DESCRIPTIONS, embeddings=store, background=False)
    changed = {**TOOLS, "mail": [*TOOLS["mail"], tool("unsubscribe", "Leave a mailing list.")]}
    counting.documents = 0
    catalog = Catalog(
        changed,
        DESCRIPTIONS,
        embeddings=EmbeddingStore(tmp_path, embedder=lambda: counting),
        background=False,
    )
    assert counting.documents == len(changed["mail"])
    assert catalog.search("leave a mailing list")[0].tool == "unsubscribe"


@pytest.mark.parametrize("damage", [b"", b"not an array", b"\x93NUMPY garbage"])
def test_a_damaged_cache_file_is_embedded_again(tmp_path: Path, damage: bytes) -> None:
    EmbeddingStore(tmp_path).vectors([[("a", "b")]])
    disk_cache.flush()
    (cached,) = tmp_path.glob("*.vectors")
    cached.write_bytes(damage)
    counting = Counting()
    vectors = EmbeddingStore(tmp_path, embedder=lambda: counting).vectors([[("a", "b")]])
    assert counting.documents == 1 and vectors is not None and vectors.shape == (1, 256)


def test_an_unwritable_cache_directory_costs_nothing_but_the_cache(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    caplog.set_level(logging.INFO)
    catalog = Catalog(
        TOOLS, DESCRIPTIONS, embeddings=EmbeddingStore(blocker / "embeddings"), background=False
    )
    assert catalog.search("remove a meeting")[0].tool == "delete_event"
    disk_cache.flush()
    assert "embedding cache not written" in caplog.text


def test_the_cache_directory_follows_the_settings(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("MCP_CODE_CACHE_DIR", str(tmp_path))
    assert default_cache_dir() == tmp_path / "mcp-code-mode" / "embeddings"
    monkeypatch.delenv("MCP_CODE_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "mcp-code-mode" / "embeddings"


TOOL_TEXTS = [
    "read file. Read the complete contents of a file from the file system. path head tail",
    "create pull request. Open a PR: title, body, base branch (main) and draft flag!",
    "get weather forecast. 5-day forecast for a city; units metric/imperial. Weather API",
    "ünïcödé 日本語 emoji 😀 mixed_case_words camelCaseName HTTP2Server",
]


@pytest.mark.parametrize("text", TOOL_TEXTS)
def test_a_text_embeds_as_the_mean_of_its_whole_tokenization(text: str) -> None:
    embedder = real()
    ids = embedder.tokenizer.encode(text, add_special_tokens=False).ids
    words = [
        i for w in text.split() for i in embedder.tokenizer.encode(w, add_special_tokens=False).ids
    ]
    assert words == ids  # no token spans a space: tokenizing word by word is the same
    whole = embedder.table[ids].astype(numpy.float32).mean(axis=0)
    whole /= numpy.linalg.norm(whole)
    (vector,) = embedder.embed([text])
    assert float(vector @ whole) > 0.99999


def test_whitespace_runs_count_as_one_space() -> None:
    a, b, c = real().embed(["list  the\n\nfiles", "list the files", "   "])
    assert numpy.allclose(a, b) and not c.any()
