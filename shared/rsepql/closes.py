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
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence

from cerfleet.rsepql import syntax as s

__all__ = ["Closes", "evaluation_times"]


def evaluation_times(query: s.Query, times: Sequence[int]) -> list[int]:
    """ET over instants at ``times`` (ms, increasing)."""
    stepped = query.stepped()
    if not stepped or not times:
        return list(times)
    out: set[int] = set()
    for w in stepped:
        beta = w.step_ms
        assert beta is not None
        first, last = -(-times[0] // beta), -(-times[-1] // beta)
        out.update(k * beta for k in range(first, last + 1))
    return sorted(out)


def _ceil(t: int, beta: int) -> int:
    return -(-t // beta) * beta


class Closes:
    """``report_time(item times)``: the evaluation time that first reports the
    result of the chain with items at those times (ms), None if none does."""

    def __init__(self, query: s.Query, times: Sequence[int]) -> None:
        self.times = evaluation_times(query, times)
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
        k = bisect_left(self.times, lo)
        if k < len(self.times) and (hi is None or self.times[k] < hi):
            return self.times[k]
        return None
