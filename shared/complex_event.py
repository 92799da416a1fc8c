"""What the engine outputs: one complex event, ``([start, end], D)`` with its events."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

KeyValue = str | int | float | bool


@dataclass(frozen=True, slots=True, init=False)
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

    def __init__(
        self,
        start: int,
        end: int,
        positions: tuple[int, ...],
        key: tuple[KeyValue, ...] | None,
        events: tuple[Mapping[str, Any], ...],
    ) -> None:
        # Through the slots' own setters: a frozen dataclass's __init__ goes through
        # object.__setattr__ once a field, which took 0.94 µs a complex event where this
        # takes 0.54, and a Kleene burst makes thousands of them from one event.
        _set_start(self, start)
        _set_end(self, end)
        _set_positions(self, positions)
        _set_key(self, key)
        _set_events(self, events)

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready form printed by ``cerfleet run`` (one object per line)."""
        return {
            "start": self.start,
            "end": self.end,
            "positions": list(self.positions),
            "key": None if self.key is None else list(self.key),
            "events": [dict(e) for e in self.events],
        }


_set_start, _set_end, _set_positions, _set_key, _set_events = (
    ComplexEvent.__dict__[name].__set__ for name in ("start", "end", "positions", "key", "events")
)
