"""The evaluation times of an RSEP-QL query, and which of them first reports a result
of an unrestricted SEQ chain.

Evaluation times (seed 003, Definition 5's ET as report policies): every instant of
the streamset (*content change*), or, when a window has a STEP, that window's closes
— the multiples of its step from the first instant up to the first at or after the
last (*window close*; the union over STEP windows).

At an evaluation time T a RANGE α STEP β window holds the items with
c − α < t ≤ c, c = ⌊T/β⌋·β (β the time unit, 1 ms, without STEP): an item at t is
in it exactly for T in [⌈t/β⌉·β, ⌈(t + α)/β⌉·β). A result is visible at T when T is
at or after its last item and each of its items is in its window, so the T where it
is visible form one interval, and the first evaluation time in it reports it.
Both are computed, not listed: ET can hold a close per second of a month.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Sequence

from cerfleet.rsepql import syntax as s

__all__ = ["Closes", "evaluation_times"]


def _ceil(t: int, beta: int) -> int:
    return -(-t // beta) * beta


def _steps(query: s.Query) -> list[int]:
    return sorted({w.step_ms for w in query.stepped() if w.step_ms is not None})


def evaluation_times(query: s.Query, times: Sequence[int]) -> Iterator[int]:
    """ET over instants at ``times`` (ms, increasing), in order, computed as they are
    needed (a STEP of a second over a month of epoch times is millions of closes)."""
    steps = _steps(query)
    if not steps or not times:
        yield from times
        return
    # The next close of each step, merged.
    heap = [(_ceil(times[0], beta), beta) for beta in steps]
    heapq.heapify(heap)
    last = None
    while heap:
        close, beta = heapq.heappop(heap)
        if close != last:
            yield close
            last = close
        if close < times[-1]:
            heapq.heappush(heap, (close + beta, beta))


class Closes:
    """``report_time(item times)``: the evaluation time that first reports the
    result of the chain with items at those times (ms), None if none does."""

    def __init__(self, query: s.Query, times: Sequence[int]) -> None:
        self.steps = _steps(query)
        self.first, self.last = times[0], times[-1]
        self.windows = [query.windows[query.events[name].window] for name in query.chain]

    def report_time(self, items: Sequence[int]) -> int | None:
        lo, hi = items[-1], None
        for w, t in zip(self.windows, items, strict=True):
            if w.kind == "range":
                beta = w.step_ms or 1
                lo = max(lo, _ceil(t, beta))
                end = _ceil(t + w.ms, beta)
                hi = end if hi is None else min(hi, end)
            elif w.kind == "landmark" and t < w.ms:
                return None
        # The first close at or after lo of any step: each step's closes run from
        # the first instant to the first at or after the last instant.
        best = None
        for beta in self.steps:
            close = _ceil(max(lo, self.first), beta)
            if close < self.last + beta and (best is None or close < best):
                best = close
        if best is not None and (hi is None or best < hi):
            return best
        return None
