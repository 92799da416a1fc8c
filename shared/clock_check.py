"""Watching a window's clock as events stream by: a time window over a field the events
lack finds nothing, silently, unless someone says so.

``ClockCheck`` looks at each batch's clock column (the time field of a time window, the
attribute of ``WITHIN n [attr]``): it reports each event whose clock value is present
but cannot be read as one (``"timestamp": "yesterday"``), the first ``REPORTED`` of
them line by line and all of them in a count, and whether any event so far had a
clock at all, so ``cerfleet run`` can warn after the first batch and in its summary.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cerfleet import pattern
from cerfleet.plan import QueryPlan

__all__ = ["REPORTED", "ClockCheck"]

REPORTED = 10  # unreadable clock values reported line by line; the rest are counted


class ClockCheck:
    """The clock of ``query``'s window over the batches of one input."""

    def __init__(self, query: QueryPlan) -> None:
        window = query.pattern.within
        self.active = query.clock is not None and window is not None
        self.field = ""
        self.what = ""
        if window is not None and query.clock is not None:
            if window.kind is pattern.WindowKind.TIME:
                self.field, self.what = query.time_field, "a time"
            else:
                self.field, self.what = window.attr or "", "a number"
        self._clock = query.clock
        self.events = 0
        self.with_clock = 0
        self.unreadable = 0

    def batch(self, columns: Mapping[str, Any], lines: Sequence[int]) -> list[tuple[int, str]]:
        """Count the clocks of a columnar batch (``columns`` holds the query's attributes,
        ``lines`` the line of each row); the reports of its unreadable ones (capped)."""
        if not self.active or self._clock is None:
            return []
        self.events += len(lines)
        col = columns.get(self.field)
        if col is None:
            return []
        if col.dtype.kind in "iu":  # numbers: every one is a clock
            self.with_clock += len(col)
            return []
        if col.dtype.kind == "f":  # NaN is how a number column spells missing
            self.with_clock += int((col == col).sum())
            return []
        reports: list[tuple[int, str]] = []
        clock, name = self._clock, self.field
        for i, value in enumerate(col.tolist()):
            if value is None:
                continue
            if clock({name: value}) is None:
                self.unreadable += 1
                if self.unreadable <= REPORTED:
                    if type(value) is int:  # beyond every float
                        what = f"an integer of {len(str(abs(value)))} digits, too large for"
                        shown = f"{name!r} is {what} a clock"
                    else:
                        shown = f"{name!r} is {value!r}, not {self.what}"
                    reports.append(
                        (
                            lines[i],
                            f"{shown}: the event has no clock for WITHIN (it takes part "
                            "only inside complex events)",
                        )
                    )
            else:
                self.with_clock += 1
        return reports

    def warning(self) -> str | None:
        """Why the window cannot work, when no event so far had a readable clock."""
        if not self.active or not self.events or self.with_clock:
            return None
        hint = " (set --time-field)" if self.what == "a time" else ""
        return (
            f"warning: none of the {self.events} events so far has {self.what} in "
            f"{self.field!r}, which the query's WITHIN reads{hint}: no complex event can "
            "start or end"
        )
