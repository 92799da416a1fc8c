"""When a columnar batch's keys are so many that it goes row by row (the shipped
threshold: the tests run with it lowered, ``tests.batch_paths``)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from cerfleet.evaluation.columnar_run import few_per_key
from tests import batch_paths

ROWS_PER_KEY = batch_paths.SHIPPED[2]


@pytest.fixture(autouse=True)
def shipped() -> Iterator[None]:
    with batch_paths.shipped_thresholds():
        yield


def test_a_batch_with_few_events_per_key_goes_row_by_row() -> None:
    names = np.array([f"T{i % 10}" for i in range(60)])
    assert few_per_key(("name",), {"name": names}, 60)
    many = np.array([f"T{i % 10}" for i in range(ROWS_PER_KEY * 10 + 1)])
    assert not few_per_key(("name",), {"name": many}, len(many))
    assert few_per_key(("name",), {"name": many[: ROWS_PER_KEY * 10]}, ROWS_PER_KEY * 10)


def test_keys_of_several_attributes_are_counted_as_tuples() -> None:
    a = np.array([0, 0, 1, 1] * 8, dtype=np.int64)
    b = np.array([0, 1] * 16, dtype=np.float64)
    # Two values each, four keys together: 8 rows per key, fewer than ROWS_PER_KEY.
    assert few_per_key(("a", "b"), {"a": a, "b": b}, 32)
    assert few_per_key(("a",), {"a": a}, 32)  # two keys: 16 rows each
    a40 = np.array([0, 1] * 20, dtype=np.int64)
    assert not few_per_key(("a",), {"a": a40}, 40)  # two keys: 20 rows each


def test_no_key_no_column_or_objects_leave_the_choice_to_the_columns() -> None:
    names = np.array([f"T{i}" for i in range(20)])
    assert not few_per_key((), {"name": names}, 20)
    assert not few_per_key(("desk",), {"name": names}, 20)
    objects = np.array([[1], [2]] * 10 + [None], dtype=object)[:20]
    assert not few_per_key(("name",), {"name": objects}, 20)
    assert not few_per_key(("name",), {"name": np.arange(2000)}, 2000)  # too many to count
