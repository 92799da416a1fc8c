"""The latest clocks of evicted keys (``QueryEvaluator.evicted``), for lateness.

An idle ``PARTITION BY`` key is evicted, but under a time or attribute window its latest
clock must outlive it: a later event of the key below that clock is late. With the
lateness horizon, only until the horizon's floor passes the clock (``horizon``), so at
any time the store holds the keys evicted within about ``lateness`` of stream time;
with one key per event that is every event of that span, which made these clocks the
largest part of the state (an ``OrderedDict`` entry, a key tuple and a float per key).

So the store is compact and expires in bulk rather than key by key:

- keys are held in plain dicts, a one-value key (the usual ``PARTITION BY [user]``) as
  its bare value: scalars are never tuples, so the two never meet, and ``(1,)``,
  ``(1.0,)`` and ``(True,)`` are as equal as ``1``, ``1.0`` and ``True``;
- the dicts are generations by clock: a clock goes into the generation of its slice of
  ``span`` clock units (about ``lateness / GENERATIONS``); a generation goes whole once
  the floor passes its largest clock. A clock below the floor can make no event late
  (every event that is not late is at or above the floor), so keeping one a little
  longer changes nothing, and costs a slice at most (an eighth more clocks). Slices
  by clock rather than by arrival: a columnar batch evicts its keys in the order it
  groups them, not in clock order.

A key is in at most one generation (its clock is taken out when the key comes back).
Lookups and insertions try each live generation: a bounded number (``expire``), so
constant time per event.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

Key = tuple[Any, ...]

GENERATIONS = 8


def _packed(key: Key) -> Any:
    return key[0] if len(key) == 1 else key


def _unpacked(stored: Any) -> Key:
    return stored if isinstance(stored, tuple) else (stored,)


class EvictedClocks(Mapping[Key, float]):
    """Key → latest clock of the evicted keys, read as a mapping of key tuples."""

    __slots__ = ("_floor", "_generations", "_highs", "_newest", "span")

    def __init__(self, pairs: Iterable[tuple[Key, float]] = ()) -> None:
        # Per slice of clocks, its keys' clocks and the largest of them.
        self._generations: dict[float, dict[Any, float]] = {}
        self._highs: dict[float, float] = {}
        self.span = float("inf")  # of a slice; set by ``expire``
        self._floor = self._newest = float("-inf")  # as of the last ``expire``
        for key, clock in pairs:
            self[key] = clock

    def __setitem__(self, key: Key, clock: float) -> None:
        stored = _packed(key)
        self._discard(stored)
        if clock < self._floor:
            return  # it can make no event late
        slice_ = clock // self.span
        if slice_ != slice_:  # an infinite clock: a slice of its own
            slice_ = clock
        generation = self._generations.get(slice_)
        if generation is None:
            generation = self._generations[slice_] = {}
            self._highs[slice_] = clock
        elif clock > self._highs[slice_]:
            self._highs[slice_] = clock
        generation[stored] = clock

    def pop_clock(self, key: Key) -> float | None:
        """The key's clock, forgotten (None: not evicted, or forgotten already)."""
        return self._discard(_packed(key))

    def _discard(self, stored: Any) -> float | None:
        for generation in self._generations.values():
            clock = generation.pop(stored, None)
            if clock is not None:
                return clock
        return None

    def get(self, key: Key, default: Any = None) -> Any:
        stored = _packed(key)
        for generation in self._generations.values():
            clock = generation.get(stored)
            if clock is not None:
                return clock
        return default

    def __getitem__(self, key: Key) -> float:
        clock = self.get(key)
        if clock is None:
            raise KeyError(key)
        return clock  # as it was given (an int clock stays an int in snapshots)

    def __iter__(self) -> Iterator[Key]:
        for generation in self._generations.values():
            yield from map(_unpacked, generation)

    def __len__(self) -> int:
        return sum(map(len, self._generations.values()))

    def expire(self, floor: float, lateness: float) -> None:
        """Forget the generations whose clocks are all below ``floor`` (no event that is
        not late is below it, now or later: the floor never goes back).

        Later clocks go into slices of a ``GENERATIONS``-th of ``lateness`` or of how far
        the clocks moved since the previous call (a whole columnar batch comes between
        two calls), if more: so about ``2 * GENERATIONS`` generations live at most."""
        newest = floor + lateness
        moved = newest - self._newest if self._newest != float("-inf") else 0.0
        self.span = max(lateness, moved) / GENERATIONS or float("inf")
        self._floor, self._newest = floor, newest
        highs = self._highs
        for slice_ in [s for s, high in highs.items() if high < floor]:
            del highs[slice_], self._generations[slice_]
