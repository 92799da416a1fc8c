"""Which of the columnar paths in-process tests exercise.

In production, small batches, batches of many keys and small key groups run row by row
(``query_evaluator.ROW_BATCH``, ``columnar_run.ROWS_PER_KEY``, ``columnar_run.FEW``):
the vector passes' set-up costs more than a few rows. The differential suites draw
small streams, so under those thresholds they would compare the row path with itself;
the test run lowers them so that every batch takes the vector paths, as before they
existed, and the tests that check the thresholds themselves restore the shipped values
(``shipped_thresholds``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from cerfleet.evaluation import columnar_run, query_evaluator

Thresholds = tuple[int, int, int]
SHIPPED: Thresholds = (query_evaluator.ROW_BATCH, columnar_run.FEW, columnar_run.ROWS_PER_KEY)
VECTOR: Thresholds = (0, 1, 0)


def current() -> Thresholds:
    return (query_evaluator.ROW_BATCH, columnar_run.FEW, columnar_run.ROWS_PER_KEY)


def use(thresholds: Thresholds) -> None:
    query_evaluator.ROW_BATCH, columnar_run.FEW, columnar_run.ROWS_PER_KEY = thresholds


@contextmanager
def shipped_thresholds() -> Iterator[None]:
    """The production thresholds, for the duration of the block."""
    before = current()
    use(SHIPPED)
    try:
        yield
    finally:
        use(before)
