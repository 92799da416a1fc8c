"""Time slices: how a query without PARTITION BY still runs in parallel.

A windowed query's complex event lies within ε of its last event, in the order
time ``t``. So the stream is cut into slices of width ``w >= ε`` by ``t``; each
slice is evaluated from scratch over its own events plus the events of the
previous slice that lie within ε of its start (the overlap), and it emits only
the complex events whose last event is its own. Every complex event is found
by exactly one slice, and with the same events as over the whole stream.

This holds when the engine's window clock is ``t`` itself (a time window on the
query's time field, or ``WITHIN n [attr]`` on that same field) and when nothing
older than the window changes what is found: no consumption (``CONSUME BY
NONE``), and selection ``ALL`` or ``STRICT``. ``NEXT``, ``LAST`` and ``MAX``
choose among runs before the window cuts them, so a run that began before the
overlap can hide a complex event inside it: such queries run as one stream. The
property tests check slices against whole-stream evaluation.

Slice numbers are ``floor((t - t0) / w)``; an event is copied into the next
slice when ``floor((t + pad - t0) / w)`` is larger, where ``pad`` is ε widened
a little so that rounding in ``t + ε`` never drops an event the window needs.
Both are monotone in ``t`` in floating point, so the overlap of a slice is
exactly the last events of the slice before it. An event without ``t`` sorts
first and belongs to slice 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from cerfleet import pattern
from cerfleet.query import CompiledQuery

__all__ = ["SlicePlan", "label_bases", "slice_epsilon"]

_SLICEABLE = (pattern.Strategy.ALL, pattern.Strategy.STRICT)


def slice_epsilon(query: CompiledQuery, time_field: str) -> float | None:
    """ε in ``t`` units (ms) when ``query`` can run in time slices, else None."""
    within = query.pattern.within
    if (
        query.partitioned
        # The standard's selection: where matches start depends on every earlier row.
        or query.selecting
        or within is None
        or query.consume is not pattern.Consume.NONE
        or query.strategy not in _SLICEABLE
    ):
        return None
    if within.kind is pattern.WindowKind.TIME or (
        within.kind is pattern.WindowKind.ATTRIBUTE and within.attr == time_field
    ):
        epsilon = float(query.epsilon)
        return epsilon if math.isfinite(epsilon) else None
    return None


@dataclass(frozen=True)
class SlicePlan:
    t0: float
    width: float
    pad: float

    @classmethod
    def of(cls, t_min: float, t_max: float, epsilon: float, slices: int) -> SlicePlan:
        pad = epsilon * (1 + 1e-9) + 1e-6
        span = max(0.0, t_max - t_min)
        # At least ``pad`` wide, so an event is copied into one later slice at most.
        width = max(pad * 1.0001, span / max(1, slices), 1e-3)
        return cls(t_min, width, pad)

    def core(self, t: float | None) -> int:
        return 0 if t is None else max(0, math.floor((t - self.t0) / self.width))

    def copied(self, t: float | None) -> bool:
        """Whether the event also belongs to the overlap of slice ``core(t) + 1``."""
        if t is None:
            return False
        return max(0, math.floor((t + self.pad - self.t0) / self.width)) > self.core(t)


def label_bases(
    core_counts: Mapping[int, int], overlap_counts: Mapping[int, int]
) -> dict[int, tuple[int, int]]:
    """Per slice: (position of its first own event in the whole stream, events in its
    overlap). Overlap events are the last events of the slice before, so their
    positions are the ``m`` just below the base."""
    out: dict[int, tuple[int, int]] = {}
    base = 0
    for s in sorted(set(core_counts) | set(overlap_counts)):
        out[s] = (base, overlap_counts.get(s, 0))
        base += core_counts.get(s, 0)
    return out
