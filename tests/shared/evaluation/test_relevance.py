"""``NextRelevant`` against a scan: the listed search of small batches, numpy's of
large ones, and the walk past the cached sets all find the same next event."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cerfleet.evaluation.relevance import NextRelevant


def scan(letters: list[int], skip: list[bool], i: int, relevant: frozenset[int]) -> int | None:
    return next((k for k in range(i, len(letters)) if not skip[k] and letters[k] in relevant), None)


batches = st.integers(0, 300).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(0, 7), min_size=n, max_size=n),
        st.lists(st.booleans(), min_size=n, max_size=n),
    )
)
asks = st.lists(
    st.tuples(st.integers(0, 310), st.frozensets(st.integers(0, 8), max_size=4)), max_size=40
)


@pytest.mark.parametrize("listed", [0, NextRelevant._LISTED, 10_000])
@settings(max_examples=300, deadline=None)
@given(batch=batches, asked=asks, max_sets=st.sampled_from([1, 3, 64]))
def test_next_relevant_finds_what_a_scan_finds(
    listed: int,
    batch: tuple[list[int], list[bool]],
    asked: list[tuple[int, frozenset[int]]],
    max_sets: int,
) -> None:
    letters, skip = batch
    finder_class = type("Finder", (NextRelevant,), {"_LISTED": listed, "_MAX_SETS": max_sets})
    finder = finder_class(np.array(letters, dtype=np.int64), np.array(skip, dtype=bool))
    assert finder.letters == sorted({v for v, s in zip(letters, skip, strict=True) if not s})
    for i, relevant in asked:
        assert finder.first_from(i, relevant) == scan(letters, skip, i, relevant)
