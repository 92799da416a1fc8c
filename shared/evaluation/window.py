"""Window clocks: what ``WITHIN`` measures ``clock(end) − clock(start) <= ε`` on.

* ``WITHIN n EVENTS``: the position in the (partition's) substream;
* ``WITHIN n MILLISECONDS|SECONDS|MINUTES|HOURS``: the time field, in ms;
* ``WITHIN n [attr]``: a numeric attribute (booleans are not numbers).

An event without a clock value cannot start or end a complex event under a
time or attribute window (it may still sit in the middle of one).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from cerfleet import pattern
from cerfleet.cea.vector_predicates import Columns, RowView
from cerfleet.events.timestamps import parse_timestamp

if TYPE_CHECKING:
    import numpy as np
else:
    from cerfleet.lazy_numpy import np

ClockFn = Callable[[Mapping[str, Any]], float | None]


# An integer clock is subtracted from float bounds: one that no float can hold (float()
# overflows from this magnitude on) cannot be.
_TOO_LARGE = 2**1024 - 2**970


def _numeric_attribute(name: str) -> ClockFn:
    def clock(event: Mapping[str, Any]) -> float | None:
        value = event.get(name)
        if isinstance(value, int | float) and not isinstance(value, bool):
            if isinstance(value, int) and not -_TOO_LARGE < value < _TOO_LARGE:
                return None  # no clock, as a value that is no number
            return value
        return None

    return clock


def _timestamp(field: str) -> ClockFn:
    def clock(event: Mapping[str, Any]) -> float | None:
        return parse_timestamp(event.get(field))

    return clock


def clock_of(window: pattern.Window | None, time_field: str) -> ClockFn | None:
    """The clock function of a window; None when the clock is the substream position."""
    if window is None or window.kind is pattern.WindowKind.EVENTS:
        return None
    if window.kind is pattern.WindowKind.TIME:
        return _timestamp(time_field)
    assert window.attr is not None
    return _numeric_attribute(window.attr)


def epsilon_of(window: pattern.Window | None) -> float:
    return float("inf") if window is None else float(window.epsilon)


def clock_column(
    window: pattern.Window, time_field: str, clock: ClockFn, cols: Columns, n: int
) -> np.ndarray:
    """The window clock of every event of a columnar batch as floats, NaN where an event
    has none (``clock`` is ``clock_of(window, time_field)``)."""
    name = window.attr if window.attr is not None else time_field
    col = cols.get(name)
    if col is None:
        return np.full(n, np.nan)
    if col.dtype.kind in "iuf":
        return col.astype(np.float64)
    rows = RowView(cols)
    return np.array([np.nan if (v := clock(rows.at(i))) is None else v for i in range(n)], float)


# Integers up to this size are exact as floats.
_EXACT = 2**53


def batch_clocks(
    window: pattern.Window,
    time_field: str,
    clock: ClockFn,
    columns: Columns,
    n: int,
    events: Sequence[Mapping[str, Any]] | None,
) -> np.ndarray | None:
    """The window clock of every row of a columnar batch (NaN: none); from the original
    ``events`` when their column is not numbers. None when some clock has no exact float
    form (NaN, an integer beyond 2**53): the batch must then go row by row."""
    col = columns.get(window.attr if window.attr is not None else time_field)
    if events is None or col is None or col.dtype.kind in "iuf":
        return clock_column(window, time_field, clock, columns, n)
    values = [clock(event) for event in events]
    for v in values:
        if v is not None and (v != v or (isinstance(v, int) and abs(v) > _EXACT)):
            return None
    return np.array(values, dtype=np.float64)  # None becomes NaN
