"""What the engine outputs: one complex event, ``([start, end], D)`` with its events."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

KeyValue = str | int | float | bool


@dataclass(frozen=True, slots=True)
class ComplexEvent:
    """A complex event ``C = ([start, end], positions)`` (CORE §2.2).

    Positions are 0-based indexes of events in the input as given to the
    evaluator (global, also under PARTITION BY), or the labels the caller gave
    the events instead (``QueryEvaluator.process(event, position)``, e.g. log
    offsets: increasing, gaps allowed). ``start`` need not be in
    ``positions``: a projected-away first event still fixes the interval.
    ``key`` holds the PARTITION BY values (None without PARTITION BY);
    ``events`` the events at ``positions``, in position order.
    """

    start: int
    end: int
    positions: tuple[int, ...]
    key: tuple[KeyValue, ...] | None
    events: tuple[Mapping[str, Any], ...]

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready form printed by ``cerfleet run`` (one object per line)."""
        return {
            "start": self.start,
            "end": self.end,
            "positions": list(self.positions),
            "key": None if self.key is None else list(self.key),
            "events": [dict(e) for e in self.events],
        }
