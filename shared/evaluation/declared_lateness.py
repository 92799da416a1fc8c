"""Lateness against the declared partition, for queries whose substreams also split on
keys made from equality correlations (``cea.equality_keys``).

Such a key must change nothing a user can see, and lateness is visible: an event is late
when its clock is below the latest clock of its *declared* partition (the whole stream
without PARTITION BY), whatever its other keys. This holds that latest clock per
declared key and decides lateness before the event reaches its substream; the events
it lets through are in clock order per declared key, so no substream sees one late.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from cerfleet.evaluation.partitioning import partition_groups

if TYPE_CHECKING:
    import numpy as np
else:
    from cerfleet.lazy_numpy import np

Key = tuple[Any, ...]


class DeclaredLateness:
    def __init__(
        self, attrs: tuple[str, ...], key_of: Callable[[Mapping[str, Any]], Key | None]
    ) -> None:
        self.attrs = attrs
        self.key_of = key_of
        self.latest: dict[Key, float] = {}

    def late(self, event: Mapping[str, Any], clock: float | None) -> bool:
        """Whether the event is late (and if not, its clock becomes its key's latest)."""
        if clock is None or clock != clock:
            return False
        key = self.key_of(event)
        if key is None:
            return False  # in no declared partition: in no substream either
        if clock < self.latest.get(key, float("-inf")):
            return True
        self.latest[key] = clock
        return False

    def batch(
        self,
        columns: Mapping[str, np.ndarray],
        clocks: np.ndarray,
        n: int,
        row: Callable[[int], Mapping[str, Any]],
    ) -> np.ndarray:
        """The late rows of a columnar batch, as a boolean mask."""
        late = np.zeros(n, dtype=bool)
        groups = partition_groups(self.attrs, columns, n)
        if groups is None:  # keys of a kind columns cannot group: row by row
            for i in range(n):
                late[i] = self.late(row(i), float(clocks[i]))
            return late
        for group_key, idx in groups:
            if not len(idx):
                continue
            key = self.key_of(row(int(idx[0]))) or group_key
            own = clocks[idx]
            start = self.latest.get(key, float("-inf"))
            before = np.fmax.accumulate(np.concatenate(([start], own)))
            late[idx] = own < before[:-1]
            if before[-1] != float("-inf"):
                self.latest[key] = float(before[-1])
        return late

    def split(
        self,
        groups: Sequence[tuple[Key, np.ndarray]],
        columns: Mapping[str, np.ndarray],
        clocks: np.ndarray,
        n: int,
        row: Callable[[int], Mapping[str, Any]],
    ) -> tuple[Sequence[tuple[Key, np.ndarray]], list[int], int]:
        """The batch's substream groups without their late rows, the late rows, and how
        many of those are in no group (late in their declared partition, but lacking a
        key made from an equality)."""
        late = self.batch(columns, clocks, n, row)
        if not late.any():
            return groups, [], 0
        grouped = np.zeros(n, dtype=bool)
        for _, idx in groups:
            grouped[idx] = True
        kept = [(key, idx[~late[idx]]) for key, idx in groups]
        return kept, np.flatnonzero(late).tolist(), int((late & ~grouped).sum())

    def export(self) -> list[list[Any]]:
        return [[list(key), clock] for key, clock in self.latest.items()]

    def load(self, rows: list[list[Any]]) -> None:
        self.latest = {tuple(key): clock for key, clock in rows}
