"""Timestamp synchronisation of input partitions: records leave in event-time order.

Workers judge lateness in the order a keyed partition receives its records (the
lateness horizon, ``evaluation.horizon``): an event more than the horizon behind the
newest clock seen there is dropped. A coordinator that copied one input partition's
backlog before another's would make the keyed partition's clock run ahead of the
slower one, whose events would then arrive late. So the merge buffers what was fetched
per input partition and forwards records as Kafka Streams does (``max.task.idle.ms``):
always from the partition whose next record has the smallest clock (ties: the
partition sorted first), and only while every assigned partition has buffered records
or is *idle*: read to its end (partition EOF), or empty for ``idle`` seconds with
nothing known to be left on the broker. As since KIP-695, a partition whose lag is
unknown or positive is never idle (a 1M-event backlog's first records of some partitions
came more than 2 s after the assignment). A record written later to an idle partition
with an older clock than what was forwarded stays behind; a partition whose leader
stays unreachable holds the others back until it answers.

A partition read to its end is not waited for as such, but the others' records may
run only so far ahead of it: for ``end_wait`` seconds from when it first lacks records
the others have (as Kafka Streams times ``max.task.idle.ms``), they leave only up to its
last clock plus its topic's *slack*, the skew the queries reading it tolerate
(``partition_keys.tolerated_skew``), or up to the newest clock forwarded when its wait
began if that is later. So a partition fetched a little after the others loses none of
its records to the horizon however fast the stream's clock runs (a replay at 20k
events/s passes a minute of clock in 60 ms), even with no slack (a PARTITION BY key
spread over partitions). After everything has left and nothing came for ``end_wait``, the
partitions with a clock heard within ``idle`` seconds are waited for again (a replay
paused after its first events lost up to 38 records of one fetched a few ms late), not the
others: one nobody writes to held back a sparse stream, or a warmed-up replay.

A record without a clock goes with the record before it in its partition (first: at
once). A partition's records leave in offset order: the committed offset is the one after
the last forwarded, and what is buffered on a rebalance is read again by the next owner.

The merge holds opaque *chunks* (a fetched batch of one partition, with its clocks)
and hands out runs ``(partition, chunk, start, stop)``: the coordinator extracts keys
and produces a whole run at once. When clocks interleave, runs are a record or two long
and a heap of heads cost about a microsecond per run: with every buffered chunk's clocks
ascending (the usual case), one stable sort gives the same runs (``_take_sorted``).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from heapq import heapify, heappop, heapreplace
from typing import Generic, TypeVar

import numpy as np

__all__ = ["Run", "TimeMerge"]

T = TypeVar("T")
TP = tuple[str, int]
Run = tuple[TP, T, int, int]

_NO_CLOCK = float("-inf")
_NO_CAP = float("inf")
# Below this many records leaving, the heap is cheaper than numpy's set-up.
_SORTED_FROM = 64
# ... and with fewer partitions holding records (one: whole chunks leave, nothing to sort).
_SORTED_PARTITIONS = 2


@dataclass(slots=True)
class _Chunk(Generic[T]):
    payload: T
    times: list[float]
    ordered: bool  # ``times`` ascending: runs are found by bisection
    pos: int = 0
    array: np.ndarray | None = None  # ``times`` as float64, made when first sorted


@dataclass(slots=True)
class _Partition(Generic[T]):
    empty_since: float
    chunks: deque[_Chunk[T]] = field(default_factory=deque)
    size: int = 0  # buffered records
    at_end: bool = False  # consumed up to the end of the partition, nothing buffered since
    last: float = _NO_CLOCK  # clock of the last record pushed
    wait_from: float | None = None  # at its end and empty: when it first lacked others' records
    base: float = _NO_CLOCK  # the newest clock forwarded when that wait began


class TimeMerge(Generic[T]):
    """Buffers fetched chunks per input partition; ``take`` forwards them in time order."""

    def __init__(
        self,
        idle: float,
        lag: Callable[[TP], int | None] | None = None,
        end_wait: float = 0.0,
    ) -> None:
        """``lag(tp)``: how many records of ``tp`` the broker holds past those pushed,
        None while unknown; without it, an empty partition counts as caught up.
        ``end_wait``: seconds a partition read to its end caps the others (none: 0)."""
        self.idle = idle
        self.lag = lag
        self.end_wait = end_wait
        self.slack: dict[str, float] = {}  # per topic; 0 where unset
        self.high = _NO_CLOCK  # the newest clock forwarded
        self._parts: dict[TP, _Partition[T]] = {}
        self._busy = float("-inf")  # when records were last pushed or forwarded

    def __contains__(self, tp: TP) -> bool:
        return tp in self._parts

    def partitions(self) -> list[TP]:
        return list(self._parts)

    def buffered(self, tp: TP) -> int:
        part = self._parts.get(tp)
        return 0 if part is None else part.size

    def holding(self) -> bool:  # whether records are buffered
        return any(part.size for part in self._parts.values())

    def end_wait_left(self, now: float) -> float:
        """Seconds until the soonest running wait for an empty partition ends (or inf)."""
        left = _NO_CAP
        for part in self._parts.values():
            start = part.wait_from
            if not part.size and start is not None and self._end_waited(part, now):
                left = min(left, start + self.end_wait - now)
        return left

    def waiting(self, now: float) -> list[TP]:
        """The empty partitions that hold back the others' buffered records: not heard
        from, or read to their end and waited for with a cap below a buffered clock."""
        parts = self._parts
        newest = max((part.last for part in parts.values() if part.size), default=None)
        if newest is None:
            return []
        return [
            tp
            for tp, part in parts.items()
            if not part.size
            and (self._holds_back(tp, part, now, False) or self._cap_of(tp, part, now) < newest)
        ]

    def assign(self, tps: Iterable[TP], now: float) -> None:
        for tp in tps:
            if tp not in self._parts:
                self._parts[tp] = _Partition(empty_since=now)

    def revoke(self, tps: Iterable[TP]) -> None:
        """Forget ``tps`` and what is buffered of them (never forwarded, never committed)."""
        for tp in tps:
            self._parts.pop(tp, None)

    def push(self, tp: TP, payload: T, times: Sequence[float | None], now: float) -> None:
        """Buffer the next fetched records of ``tp`` (``times``: their clocks or None)."""
        part = self._parts.get(tp)
        if part is None:
            part = self._parts[tp] = _Partition(empty_since=now)
        if not times:
            return
        if self.end_wait > 0 and now - self._busy >= self.end_wait and not self.holding():
            busy, idle = self._busy, self.idle  # lacking nothing: waited for again if live
            for o in self._parts.values():
                if o.at_end and not o.size and o.last > _NO_CLOCK and busy - o.empty_since < idle:
                    o.wait_from = None
        self._busy = now
        clocks: list[float] = []
        last = part.last
        for t in times:
            if t is not None:
                last = t
            clocks.append(last)
        part.last = last
        part.chunks.append(_Chunk(payload, clocks, clocks == sorted(clocks)))
        part.size += len(clocks)
        part.at_end = False
        part.wait_from = None

    def end(self, tp: TP) -> None:
        """``tp`` is consumed up to its end (partition EOF)."""
        part = self._parts.get(tp)
        if part is not None:
            part.at_end = True

    def take(self, now: float, *, force: bool = False) -> list[Run[T]]:
        """The runs that may be forwarded now, in order; ``force`` forwards everything
        buffered, in time order, whether or not some partition is still to be heard."""
        if not force:
            self._begin_waits(now)
        runs = self._take(now, force)
        if runs:
            self._busy = now
            if not force:  # for those it emptied, while others' records remain
                self._begin_waits(now)
        return runs

    def _take(self, now: float, force: bool) -> list[Run[T]]:
        cap, capper, cap2 = self._caps(now, force)
        sorted_runs = self._take_sorted(now, force, cap)
        if sorted_runs is not None:
            return sorted_runs
        runs: list[Run[T]] = []
        parts = self._parts
        # The partitions' next clocks in a heap: rescanning and sorting every head per
        # run was the router's largest cost after Kafka's own (4 partitions: 70k runs).
        heads: list[tuple[float, TP]] = []
        for tp, part in parts.items():
            if part.size:
                chunk = part.chunks[0]
                heads.append((chunk.times[chunk.pos], tp))
            elif self._holds_back(tp, part, now, force):
                return runs  # it may yet get records older than every head
        heapify(heads)
        high = self.high
        while heads:
            head, tp = heads[0]
            limit = cap2 if tp == capper else cap
            if head > limit:
                break  # a partition read to its end is waited for
            n = len(heads)
            # The next other head: this run goes up to it, and takes the records of
            # equal clock too when this partition is sorted first (ties go by partition).
            if n == 1:
                bound, first = float("inf"), True
            else:
                other = heads[1] if n == 2 else min(heads[1], heads[2])
                bound, first = other[0], tp < other[1]
            part = parts[tp]
            chunk = part.chunks[0]
            start = chunk.pos
            times = chunk.times
            if chunk.ordered:
                stop = (bisect_right if first else bisect_left)(times, bound, start)
                if limit < bound:
                    stop = min(stop, bisect_right(times, limit, start))
            else:
                stop = start + 1
                while (
                    stop < len(times)
                    and (times[stop] < bound or (first and times[stop] == bound))
                    and times[stop] <= limit
                ):
                    stop += 1
            # The head itself is the smallest (clock, partition): one record at least leaves.
            stop = max(stop, start + 1)
            last = times[stop - 1]
            if not (chunk.ordered and last == last):  # unordered, or NaN: every clock
                last = max((t for t in times[start:stop] if t == t), default=_NO_CLOCK)
            if last > high:
                high = last
            runs.append((tp, chunk.payload, start, stop))
            part.size -= stop - start
            if stop == len(times):
                part.chunks.popleft()
            else:
                chunk.pos = stop
            if part.size:
                chunk = part.chunks[0]
                heapreplace(heads, (chunk.times[chunk.pos], tp))
                continue
            part.empty_since = now
            heappop(heads)
            if self._holds_back(tp, part, now, force):
                break
        self.high = high
        return runs

    def _take_sorted(self, now: float, force: bool, cap: float) -> list[Run[T]] | None:
        """The heap's runs from one stable sort of the clocks that may leave (up to
        ``cap``, the smallest of ``_caps``), or None where that might differ from them or
        cost more. With each partition's clocks ascending, the heap forwards records in
        (clock, partition) order and stops right after the last buffered record of the
        first partition that empties and may still get records (``_holds_back``): what
        leaves is known before ordering, their order is a stable sort of their clocks laid
        out partition after partition, and a run is a stretch of one chunk in it."""
        parts = self._parts
        tps = sorted(parts)
        holding = 0  # partitions with records buffered
        for tp in tps:
            if parts[tp].size:
                holding += 1
            elif self._holds_back(tp, parts[tp], now, force):
                return []
        if holding < _SORTED_PARTITIONS:
            return None  # one partition: the heap takes whole chunks, nothing to order
        buffered: list[tuple[TP, _Partition[T], _Chunk[T], np.ndarray]] = []
        stop_at: tuple[float, TP] | None = None  # the last record the take may forward
        for tp in tps:
            part = parts[tp]
            if not part.size:
                continue
            last = _NO_CLOCK
            for chunk in part.chunks:
                if not chunk.ordered:
                    return None
                if chunk.array is None:
                    chunk.array = np.asarray(chunk.times, dtype=np.float64)
                a = chunk.array[chunk.pos :]
                if not a[0] >= last:  # a clock going back, or NaN
                    return None
                last = a[-1]
                buffered.append((tp, part, chunk, a))
            if not force and not part.at_end and (self.idle > 0 or self._behind(tp)):
                stop_at = (last, tp) if stop_at is None else min(stop_at, (last, tp))
        # A partition's own records are at or below its cap (its clocks ascend): the
        # smallest cap bounds every partition's.
        leaving: list[np.ndarray] = []
        for tp, _, _, a in buffered:
            if stop_at is not None and tp != stop_at[1]:
                a = a[: np.searchsorted(a, stop_at[0], "right" if tp < stop_at[1] else "left")]
            if len(a) and cap < a[-1]:
                a = a[: np.searchsorted(a, cap, "right")]
            leaving.append(a)
        lengths = np.fromiter((len(a) for a in leaving), dtype=np.int64, count=len(leaving))
        n = int(lengths.sum())
        if n < _SORTED_FROM:
            return None
        times = np.concatenate(leaving)
        if np.isnan(times).any():
            return None  # NaN orders against nothing: the heap's comparisons decide
        self.high = max(self.high, float(times.max()))
        order = np.argsort(times, kind="stable")
        chunk_of = np.repeat(np.arange(len(leaving)), lengths)[order]
        firsts = np.flatnonzero(chunk_of[1:] != chunk_of[:-1]) + 1
        starts = [0, *firsts.tolist()]
        ends = [*firsts.tolist(), n]
        offsets = np.concatenate(([0], np.cumsum(lengths)[:-1]))
        # Where each run starts in its chunk: its first record's place there.
        at = (order[starts] - offsets[chunk_of[starts]]).tolist()
        runs: list[Run[T]] = []
        for k, lo, hi, first in zip(chunk_of[starts].tolist(), starts, ends, at, strict=True):
            tp, _, chunk, _ = buffered[k]
            start = chunk.pos + first
            runs.append((tp, chunk.payload, start, start + hi - lo))
        for k, count in enumerate(lengths.tolist()):
            if not count:
                continue
            _, part, chunk, _ = buffered[k]
            chunk.pos += count
            part.size -= count
            if chunk.pos == len(chunk.times):
                part.chunks.popleft()
            if not part.size:
                part.empty_since = now
        return runs

    def _caps(self, now: float, force: bool) -> tuple[float, TP | None, float]:
        """The smallest clock a partition read to its end lets the others' records reach
        (``_cap_of``), that partition, and the second smallest (which bounds its own)."""
        first, first_tp, second = _NO_CAP, None, _NO_CAP
        if force or not self.end_wait > 0:
            return first, first_tp, second
        for tp, part in self._parts.items():
            cap = self._cap_of(tp, part, now)
            if cap < first:
                first, first_tp, second = cap, tp, first
            elif cap < second:
                second = cap
        return first, first_tp, second

    def _begin_waits(self, now: float) -> None:
        """Begin the wait of each partition read to its end and empty while the others'
        records are buffered: one quiet for long is waited for when the others' come."""
        parts = self._parts.values()
        if not self.end_wait > 0 or not any(part.size for part in parts):
            return
        for part in parts:
            if part.at_end and not part.size and part.wait_from is None:
                part.wait_from = now
                part.base = self.high

    def _cap_of(self, tp: TP, part: _Partition[T], now: float) -> float:
        """The clock ``part`` lets the others' records reach while it is waited for (else
        none): its last plus its topic's slack, or, empty and behind that, the newest
        clock forwarded when its wait began."""
        if not self.end_wait > 0 or not self._end_waited(part, now):
            return _NO_CAP
        cap = part.last + self.slack.get(tp[0], 0.0)
        if not part.size and part.base > cap:
            cap = part.base  # behind: nothing the others have now leaves ahead of it
        return cap if cap == cap else _NO_CAP  # NaN orders against nothing: no cap

    def _end_waited(self, part: _Partition[T], now: float) -> bool:
        """Whether ``part`` is read to its end and waited for: it holds records, or its
        wait (``end_wait`` seconds from when it first lacked the others' records) is on."""
        start = part.wait_from
        waited = part.size > 0 or (start is not None and now - start < self.end_wait)
        return part.at_end and waited

    def _holds_back(self, tp: TP, part: _Partition[T], now: float, force: bool) -> bool:
        """Whether ``part``, with nothing buffered, holds the others back."""
        if force or part.at_end:
            return False
        return now - part.empty_since < self.idle or self._behind(tp)

    def _behind(self, tp: TP) -> bool:
        """Whether the broker may hold records of ``tp`` not pushed yet."""
        if self.lag is None:
            return False
        lag = self.lag(tp)
        return lag is None or lag > 0
