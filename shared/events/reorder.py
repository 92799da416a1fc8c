"""Bounded out-of-orderness: events re-ordered by time within a lateness bound.

CORE's ``CREATE QUARANTINE … BOUNDED_TIME`` and Flink's bounded out-of-orderness
watermark: with a bound L, an event is held until an event with a time at least L
later has arrived (the *watermark*, the largest time seen minus L, has reached it),
then released in time order, ties in arrival order. An event that arrives with a time
below the watermark is beyond the bound (``beyond``): the caller treats it as late, as
it would without a bound. The end of the input releases everything held.

What is released, and when, depends only on the sequence of events pushed, never on
a wall clock, so a replay of the same input releases the same events at the same
points. An event without a time is held as if its time were the largest seen so far
(it keeps its place among the events around it).
"""

from __future__ import annotations

import heapq
import itertools
import math
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar

__all__ = ["Reorder", "parse_duration"]

T = TypeVar("T")

_UNITS_MS = {"ms": 1.0, "s": 1e3, "m": 60e3, "min": 60e3, "h": 3600e3}
_DURATION = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-z]*)\s*")


def parse_duration(text: str) -> float:
    """``500ms``, ``2s``, ``1.5m``/``1.5min``, ``1h`` or a bare number of milliseconds, in
    milliseconds; ``ValueError`` saying what is accepted otherwise."""
    match = _DURATION.fullmatch(text.lower())
    if match is None or match.group(2) not in {"", *_UNITS_MS}:
        raise ValueError(
            f"not a duration: {text!r} (a number with ms, s, m or h, or milliseconds alone)"
        )
    return float(match.group(1)) * _UNITS_MS.get(match.group(2), 1.0)


class Reorder(Generic[T]):
    """A reorder buffer for items with a time (milliseconds), bounded by ``max_lateness``."""

    def __init__(self, max_lateness: float) -> None:
        if not max_lateness >= 0:
            raise ValueError(f"the lateness bound must be at least 0, got {max_lateness}")
        self.max_lateness = max_lateness
        self._held: list[tuple[float, int, T]] = []
        self._arrivals: Iterator[int] = itertools.count()
        self._latest = -math.inf

    def beyond(self, time: float | None) -> bool:
        """Whether an event with this time would arrive beyond the bound (late)."""
        return time is not None and time < self._latest - self.max_lateness

    def push(self, time: float | None, item: T) -> list[T]:
        """Hold ``item``; return the items its arrival releases, in evaluation order."""
        if time is None:
            time = self._latest
        elif time > self._latest:
            self._latest = time
        heapq.heappush(self._held, (time, next(self._arrivals), item))
        return self._release(self._latest - self.max_lateness)

    def flush(self) -> list[T]:
        """Everything held, in time order (the end of the input)."""
        return self._release(math.inf)

    def __len__(self) -> int:
        return len(self._held)

    def export(self, encode: Callable[[T], Any]) -> dict[str, Any]:
        """The buffer as JSON-able data (items through ``encode``), for a checkpoint:
        ``restore`` continues it exactly, so a replay releases what this one would."""
        held = sorted(self._held)
        arrivals = max((arrival for _, arrival, _ in held), default=-1) + 1
        return {
            "max_lateness": self.max_lateness,
            "latest": None if self._latest == -math.inf else self._latest,
            "held": [[time, arrival, encode(item)] for time, arrival, item in held],
            "arrivals": arrivals,
        }

    @classmethod
    def restore(cls, state: Mapping[str, Any], decode: Callable[[Any], T]) -> Reorder[T]:
        buffer: Reorder[T] = cls(float(state["max_lateness"]))
        latest = state["latest"]
        buffer._latest = -math.inf if latest is None else float(latest)
        buffer._held = [(float(t), int(a), decode(item)) for t, a, item in state["held"]]
        heapq.heapify(buffer._held)
        buffer._arrivals = itertools.count(int(state["arrivals"]))
        return buffer

    def _release(self, watermark: float) -> list[T]:
        out: list[T] = []
        held = self._held
        while held and held[0][0] <= watermark:
            out.append(heapq.heappop(held)[2])
        return out
