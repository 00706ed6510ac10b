"""`search_index`: top k by partition equals a full stable sort, and exact names."""

from __future__ import annotations

import numpy
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from mcp_code_mode.search_index import top_positions


def reference(scores: numpy.ndarray, k: int) -> list[int]:
    order = numpy.argsort(-scores, kind="stable")
    return [int(i) for i in order if scores[i] > 0][:k]


@settings(max_examples=200, deadline=None)
@given(
    scores=hnp.arrays(
        numpy.float64,
        st.integers(0, 300),
        elements=st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.5, 0.9, 1.0, -1.0]),
    ),
    k=st.integers(1, 50),
)
def test_top_positions_equal_a_full_stable_sort(scores: numpy.ndarray, k: int) -> None:
    assert top_positions(scores, k) == reference(scores, k)


def test_top_positions_of_ten_thousand_ties_keep_position_order() -> None:
    scores = numpy.full(10_000, 0.5)
    scores[7777] = 0.9
    assert top_positions(scores, 4) == [7777, 0, 1, 2]
