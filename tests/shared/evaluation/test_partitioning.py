"""The labels a caller gives a batch's rows are checked alike on both paths: numpy's for
a columnar batch, plain Python's for a few rows taken one by one."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cerfleet.evaluation.partitioning import checked_labels, checked_positions

_labels = st.one_of(
    st.integers(-5, 40),
    st.integers(-(2**70), 2**70),
    st.booleans(),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
)


def _verdict(check: Any, positions: Any, n: int, next_free: int) -> Any:
    try:
        out = check(positions, n, next_free)
    except (ValueError, TypeError) as exc:
        return type(exc)
    return out.tolist() if isinstance(out, np.ndarray) else out


@settings(max_examples=800, deadline=None, database=None)
@given(
    st.lists(_labels, max_size=6),
    st.integers(0, 7),
    st.integers(-3, 20),
    st.booleans(),
)
def test_python_labels_agree_with_numpys(
    positions: list[Any], n: int, next_free: int, ascending: bool
) -> None:
    if ascending:  # mostly valid labels: the usual case
        positions = sorted({p for p in positions if type(p) is int})
        n = len(positions)
    assert _verdict(checked_labels, positions, n, next_free) == _verdict(
        checked_positions, positions, n, next_free
    )


def test_labels_given_as_an_array_are_checked_and_listed() -> None:
    assert checked_labels(np.array([3, 5, 9]), 3, 3) == [3, 5, 9]
    with pytest.raises(ValueError, match="strictly increasing"):
        checked_labels([3, 3], 2, 0)
    with pytest.raises(ValueError, match="below the next free position 4"):
        checked_labels([3, 5], 2, 4)
