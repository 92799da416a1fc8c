"""The coordinator's merge of input partitions in time order, against the sorted merge
of every partition's records, over random fetch interleavings."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from itertools import pairwise
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cerfleet.coordinator import time_merge
from cerfleet.coordinator.time_merge import Run, TimeMerge

TP = tuple[str, int]
Record = tuple[int, int, float | None]  # partition, offset, clock

INF = float("inf")


@st.composite
def backlogs(draw: st.DrawFn) -> tuple[list[list[list[Record]]], list[int]]:
    """Per partition, its records (time-ordered, some without a clock) cut in fetched
    chunks; and an interleaving of the fetches (partition numbers, each partition's
    chunks in order)."""
    n = draw(st.integers(1, 5))
    clocks = [sorted(draw(st.lists(st.integers(0, 50), max_size=30))) for _ in range(n)]
    return _fetched(draw, clocks, none_in=10, cuts=6)


def _fetched(
    draw: st.DrawFn, clocks: list[list[int]], none_in: int, cuts: int
) -> tuple[list[list[list[Record]]], list[int]]:
    """Partitions of these ascending clocks (about one in ``none_in`` left without),
    each cut in up to ``cuts`` + 1 fetched chunks, and an interleaving of the fetches."""
    parts: list[list[list[Record]]] = []
    for p, mine in enumerate(clocks):
        records: list[Record] = [
            (p, o, None if draw(st.integers(0, none_in - 1)) == 0 else float(c))
            for o, c in enumerate(mine)
        ]
        at = sorted(draw(st.sets(st.integers(1, max(1, len(records) - 1)), max_size=cuts)))
        bounds = [0, *[c for c in at if c < len(records)], len(records)]
        parts.append([records[a:b] for a, b in pairwise(bounds) if b > a])
    order = [p for p, chunks in enumerate(parts) for _ in chunks]
    order = draw(st.permutations(order))
    return parts, order


def _run(
    merge: TimeMerge[list[Record]],
    parts: list[list[list[Record]]],
    order: list[int],
    takes: list[list[Record]] | None = None,
    fed: list[int] | None = None,
) -> list[Record]:
    """Feed the chunks in ``order`` (a partition's EOF right after its last chunk) and
    return what ``take`` forwards after each fetch (each take's records into ``takes``;
    the chunks fed per partition counted in ``fed``)."""
    tps: list[TP] = [("in", p) for p in range(len(parts))]
    merge.assign(tps, now=0.0)
    out: list[Record] = []
    left = [len(chunks) for chunks in parts]
    fed = [0] * len(parts) if fed is None else fed
    for p in order:
        chunk = parts[p][fed[p]]
        fed[p] += 1
        merge.push(tps[p], chunk, [r[2] for r in chunk], now=0.0)
        left[p] -= 1
        if not left[p]:
            merge.end(tps[p])
        took = [r for _, payload, start, stop in merge.take(now=0.0) for r in payload[start:stop]]
        out += took
        if takes is not None:
            takes.append(took)
    for p, chunks in enumerate(parts):
        if not chunks:
            merge.end(tps[p])
    for _, payload, start, stop in merge.take(now=0.0):
        out += payload[start:stop]
    return out


def _lag_of(parts: list[list[list[Record]]], fed: list[int]) -> Callable[[TP], int | None]:
    """Each partition's lag as the coordinator's consumer knows it: unknown until its
    first chunk is fed, then the records of its chunks not fed yet."""

    def lag(tp: TP) -> int | None:
        p = tp[1]
        return None if not fed[p] else sum(map(len, parts[p][fed[p] :]))

    return lag


def _effective(records: list[Record]) -> list[float]:
    """Each record's clock as the merge orders it: one without goes with the one before."""
    last, out = -INF, []
    for _, _, t in records:
        last = last if t is None else t
        out.append(last)
    return out


def _each_once_in_offset_order(
    out: list[Record], parts: list[list[list[Record]]]
) -> dict[tuple[int, int], float]:
    """Asserts every record left once and each partition's in offset order (commits stay
    exact); returns each record's effective clock by (partition, offset)."""
    everything = [r for chunks in parts for chunk in chunks for r in chunk]
    assert sorted(out) == sorted(everything)
    for p in range(len(parts)):
        offsets = [r[1] for r in out if r[0] == p]
        assert offsets == sorted(offsets)
    clock: dict[tuple[int, int], float] = {}
    for chunks in parts:
        flat = [r for c in chunks for r in c]
        clock.update({(r[0], r[1]): t for r, t in zip(flat, _effective(flat), strict=True)})
    return clock


@settings(max_examples=300, deadline=None)
@given(backlogs())
def test_the_merge_forwards_every_record_once_in_time_order(
    case: tuple[list[list[list[Record]]], list[int]],
) -> None:
    parts, order = case
    out = _run(TimeMerge(idle=INF), parts, order)
    clock = _each_once_in_offset_order(out, parts)
    # And all of them in time order: no partition's clock ran ahead of another's.
    times = [clock[(r[0], r[1])] for r in out]
    assert times == sorted(times)


@settings(max_examples=200, deadline=None)
@given(backlogs())
def test_with_every_empty_partition_idle_each_take_is_in_time_order(
    case: tuple[list[list[list[Record]]], list[int]],
) -> None:
    """Idle partitions hold nothing back, so records leave as soon as fetched: a later
    fetch may bring older clocks (the documented cost of idleness), but whatever one
    take forwards is in time order, and every record leaves once, in offset order."""
    parts, order = case
    takes: list[list[Record]] = []
    out = _run(TimeMerge(idle=0.0), parts, order, takes)
    clock = _each_once_in_offset_order(out, parts)
    for took in takes:
        times = [clock[(r[0], r[1])] for r in took]
        assert times == sorted(times)


@settings(max_examples=200, deadline=None)
@given(backlogs())
def test_knowing_the_lag_keeps_time_order_even_without_an_idle_wait(
    case: tuple[list[list[list[Record]]], list[int]],
) -> None:
    """With each partition's lag known (unknown before its first fetch, then the records
    not fetched yet), no partition with records still to come is idle, so records leave
    in time order although an empty partition caught up is idle at once."""
    parts, order = case
    fed = [0] * len(parts)
    out = _run(TimeMerge(idle=0.0, lag=_lag_of(parts, fed)), parts, order, fed=fed)
    clock = _each_once_in_offset_order(out, parts)
    times = [clock[(r[0], r[1])] for r in out]
    assert times == sorted(times)


def test_a_partition_not_heard_from_holds_the_others_back_until_it_is_idle() -> None:
    merge: TimeMerge[list[int]] = TimeMerge(idle=2.0)
    a, b = ("in", 0), ("in", 1)
    merge.assign([a, b], now=0.0)
    merge.push(a, [0, 1, 2], [10.0, 20.0, 30.0], now=0.5)
    assert merge.take(now=1.0) == []  # b may still bring clocks below 10
    assert merge.buffered(a) == 3
    assert merge.take(now=2.0) == [(a, [0, 1, 2], 0, 3)]  # b idle for 2 s
    # b's records now leave as they come; a, empty since 2.0, holds them back again.
    merge.push(b, [5], [5.0], now=2.5)
    assert merge.take(now=2.5) == []
    merge.end(a)
    assert merge.take(now=2.5) == [(b, [5], 0, 1)]


def test_a_partition_with_records_left_on_the_broker_is_never_idle() -> None:
    """Lag unknown (never fetched) or positive: the partition holds the others back
    however long it stays empty; caught up (lag 0): idle after ``idle`` seconds; at its
    end: at once."""
    lags: dict[TP, int | None] = {}
    merge: TimeMerge[list[int]] = TimeMerge(idle=2.0, lag=lambda tp: lags.get(tp))
    a, b = ("in", 0), ("in", 1)
    merge.assign([a, b], now=0.0)
    merge.push(a, [0, 1, 2], [10.0, 20.0, 30.0], now=0.5)
    assert merge.take(now=100.0) == []  # b's lag unknown
    lags[b] = 4
    assert merge.take(now=100.0) == []  # b has 4 records the consumer has not handed out
    lags[b] = 0
    assert merge.take(now=1.0) == []  # caught up, but empty for 1 s only
    assert merge.take(now=2.0) == [(a, [0, 1, 2], 0, 3)]
    merge.push(b, [5], [5.0], now=3.0)
    lags[a] = None
    merge.end(a)
    assert merge.take(now=3.0) == [(b, [5], 0, 1)]


def test_a_partition_at_its_end_holds_nothing_back_and_force_forwards_all() -> None:
    merge: TimeMerge[list[int]] = TimeMerge(idle=INF)
    a, b, c = ("in", 0), ("in", 1), ("in", 2)
    merge.assign([a, b, c], now=0.0)
    merge.push(a, [0, 1], [3.0, 9.0], now=0.0)
    merge.push(b, [0, 1], [1.0, 4.0], now=0.0)
    merge.end(b)
    # c unheard of: nothing leaves; forced, everything leaves in time order.
    assert merge.take(now=0.0) == []
    runs = merge.take(now=0.0, force=True)
    assert runs == [(b, [0, 1], 0, 1), (a, [0, 1], 0, 1), (b, [0, 1], 1, 2), (a, [0, 1], 1, 2)]
    merge.revoke([a])
    assert a not in merge and merge.buffered(a) == 0


@settings(max_examples=300, deadline=None)
@given(backlogs(), st.sampled_from([0.0, 3.0, 20.0]), st.sampled_from([0.0, 1.0]))
def test_waiting_for_partitions_read_to_their_end_keeps_each_record_within_the_slack(
    case: tuple[list[list[list[Record]]], list[int]], slack: float, idle: float
) -> None:
    """A stream still written to: every fetch reads its partition to the end. Waiting
    for such partitions (``end_wait``), no record leaves more than the slack behind
    the newest clock forwarded before it, which is what keeps it within the horizon of
    the workers' PARTITION BY queries; without the wait, the order is the fetches'."""
    parts, order = case
    parts = [[[(p, o, t) for p, o, t in c if t is not None] for c in cs] for cs in parts]
    parts = [[c for c in cs if c] for cs in parts]
    order = [p for p in order if p < len(parts)]
    order = [p for i, p in enumerate(order) if order[:i].count(p) < len(parts[p])]
    # Each partition's first chunk comes first: a partition never heard of holds nothing.
    firsts = [p for p, cs in enumerate(parts) if cs]
    rest = list(order)
    for p in firsts:
        rest.remove(p)
    for wait in (INF, 0.0):
        merge: TimeMerge[list[Record]] = TimeMerge(idle, end_wait=wait)
        merge.slack["in"] = slack
        tps: list[TP] = [("in", p) for p in range(len(parts))]
        merge.assign(tps, now=0.0)
        fed = [0] * len(parts)
        out: list[Record] = []
        for step, p in enumerate([*firsts, *rest]):
            merge.push(tps[p], parts[p][fed[p]], [r[2] for r in parts[p][fed[p]]], now=step)
            fed[p] += 1
            merge.end(tps[p])
            if step >= len(firsts) - 1:
                out += [r for _, pl, a, b in merge.take(now=float(step)) for r in pl[a:b]]
        out += [r for _, pl, a, b in merge.take(now=INF, force=True) for r in pl[a:b]]
        _each_once_in_offset_order(out, parts)
        high, behind = -INF, 0.0
        for _, _, t in out:
            assert t is not None
            behind = max(behind, high - t)
            high = max(high, t)
        if wait:
            assert behind <= slack
    # (With no wait, records fall further behind in some cases: the wait is what bounds it.)


def test_a_partition_read_to_its_end_caps_the_others_while_it_is_waited_for() -> None:
    merge: TimeMerge[list[int]] = TimeMerge(idle=INF, end_wait=0.5)
    merge.slack["in"] = 10.0
    a, b = ("in", 0), ("in", 1)
    merge.assign([a, b], now=0.0)
    merge.push(a, [0], [100.0], now=0.0)
    merge.end(a)
    merge.push(b, [0, 1, 2], [105.0, 110.0, 111.0], now=0.0)
    merge.end(b)
    # a's record and b's up to a's clock plus the slack leave; b's own records are not
    # capped by b, nor b's 111 held back by anything but a.
    assert merge.take(now=0.1) == [(a, [0], 0, 1), (b, [0, 1, 2], 0, 2)]
    assert merge.high == 110.0
    assert merge.waiting(0.5) == [a]  # the gauge of what holds the others back
    assert merge.take(now=0.5) == []  # a emptied at 0.1: waited for until 0.6
    assert merge.waiting(0.6) == []
    assert merge.take(now=0.6) == [(b, [0, 1, 2], 2, 3)]
    # a's next record, 20 behind, leaves; a is empty again and behind what was forwarded
    # (111): b's 200 waits for a's next records until a's wait is over.
    merge.push(a, [1], [91.0], now=0.7)
    merge.end(a)
    merge.push(b, [3], [200.0], now=0.7)
    merge.end(b)
    assert merge.take(now=0.7) == [(a, [1], 0, 1)]
    assert merge.waiting(1.1) == [a]
    assert merge.take(now=1.1) == []
    assert merge.take(now=1.2) == [(b, [3], 0, 1)]
    # A forced take forwards everything, caps or not.
    merge.push(a, [2], [200.0], now=1.3)
    merge.end(a)
    merge.push(b, [4], [250.0], now=1.3)
    assert merge.take(now=1.3) == [(a, [2], 0, 1)]
    assert merge.take(now=1.3, force=True) == [(b, [4], 0, 1)]


def test_a_partition_quiet_since_assigned_is_waited_for_when_the_others_records_come() -> None:
    """Its wait begins when the others' first records are buffered, not when it was
    found at its end: a stream's first records do not leave before a partition fetched
    a little later is heard from. Never having had a clock, it holds back every clock
    while nothing has been forwarded, and then every clock above what was forwarded
    when its wait began."""
    merge: TimeMerge[list[int]] = TimeMerge(idle=INF, end_wait=0.5)
    a, b = ("in", 0), ("in", 1)
    merge.assign([a, b], now=0.0)
    merge.end(a)
    merge.push(b, [0], [5.0], now=2.0)
    merge.end(b)
    assert merge.take(now=2.0) == []
    assert merge.waiting(2.2) == [a]
    assert merge.end_wait_left(2.2) == pytest.approx(0.3)
    assert merge.take(now=2.4) == []
    assert merge.take(now=2.5) == [(b, [0], 0, 1)]
    # Within the wait's length of b's last records, b's next leave at once.
    merge.push(b, [1], [6.0], now=2.9)
    assert merge.take(now=2.9) == [(b, [1], 0, 1)]
    # After a pause as long as the wait, a, which never had a clock, is not waited for
    # again: nothing of it can fall behind b's clocks.
    merge.push(b, [2], [7.0], now=3.4)
    assert merge.waiting(3.4) == []
    assert merge.take(now=3.4) == [(b, [2], 0, 1)]
    # A record without a clock leaves at once; a, still without one, then holds b's
    # next records back for its wait.
    merge.push(a, [0], [None], now=4.0)
    merge.end(a)
    merge.push(b, [3], [8.0], now=4.0)
    merge.end(b)
    assert merge.take(now=4.0) == [(a, [0], 0, 1)]
    assert merge.take(now=4.5) == [(b, [3], 0, 1)]
    # Once a has had a clock, it is waited for again after a pause, capping at 8.5.
    merge.push(a, [1], [8.5], now=4.6)
    merge.end(a)
    assert merge.take(now=4.6) == []  # b, heard from, is waited for
    assert merge.take(now=5.1) == [(a, [1], 0, 1)]
    merge.push(b, [4], [9.0], now=6.0)
    merge.end(b)
    assert merge.take(now=6.0) == []
    assert merge.waiting(6.1) == [a]
    assert merge.take(now=6.5) == [(b, [4], 0, 1)]


def test_a_partition_never_written_to_is_not_waited_for_when_a_stream_resumes() -> None:
    """A replay after a warm-up that reached some partitions only, within ``idle`` of the
    assignment: the partitions never written to do not hold back the resumed stream (each
    record of the replay's first 0.2 s waited for them); those written to are waited for
    again until their records come."""
    merge: TimeMerge[list[int]] = TimeMerge(idle=2.0, end_wait=0.2)
    merge.slack["in"] = 5.0
    a, b, empty = ("in", 0), ("in", 1), ("in", 2)
    merge.assign([a, b, empty], now=0.0)
    merge.end(empty)
    merge.push(a, [0], [10.0], now=0.1)
    merge.push(b, [0], [10.5], now=0.1)
    merge.end(a)
    merge.end(b)
    assert merge.take(now=0.1) == []  # the warm-up waits for the empty one once
    assert merge.take(now=0.35) == [(a, [0], 0, 1), (b, [0], 0, 1)]
    # Resumed a second later: a's records come first; b, heard from, is waited for.
    merge.push(a, [1], [100.0], now=1.3)
    merge.end(a)
    assert merge.take(now=1.3) == []
    assert merge.waiting(1.3) == [b]
    merge.push(b, [1], [100.5], now=1.31)
    merge.end(b)
    assert merge.take(now=1.31) == [(a, [1], 0, 1), (b, [1], 0, 1)]


def test_a_stream_that_pauses_is_waited_for_again_when_it_resumes() -> None:
    """Partitions read to their end whose waits ran out before a pause are waited for
    again when the others' records come after it, even with no slack and behind what
    was forwarded: a replay paused after its first events lost records of a partition
    fetched a few milliseconds after the others at the resumption."""
    merge: TimeMerge[list[int]] = TimeMerge(idle=INF, end_wait=0.2)
    a, b = ("in", 0), ("in", 1)
    merge.assign([a, b], now=0.0)
    merge.push(a, [0], [10.0], now=0.0)
    merge.end(a)
    merge.push(b, [0], [12.0], now=0.0)
    merge.end(b)
    assert merge.take(now=0.0) == [(a, [0], 0, 1)]  # b's 12 waits for a (no slack)
    assert merge.take(now=0.2) == [(b, [0], 0, 1)]  # a's wait is over
    # A second's pause, and b's next records come first: a, behind (10 < 12), is waited
    # for again, so nothing above 12 leaves before it is heard from.
    merge.push(b, [1, 2], [12.0, 13.0], now=1.2)
    merge.end(b)
    assert merge.take(now=1.2) == [(b, [1, 2], 0, 1)]
    merge.push(a, [1], [12.5], now=1.25)
    merge.end(a)
    assert merge.take(now=1.25) == [(a, [1], 0, 1)]
    # Records coming while others are still held do not begin a's wait again: its wait
    # from 1.25 runs out at 1.45.
    merge.push(b, [3], [14.0], now=1.3)
    merge.end(b)
    assert merge.take(now=1.3) == []
    assert merge.take(now=1.4) == []
    assert merge.take(now=1.5) == [(b, [1, 2], 1, 2), (b, [3], 0, 1)]


def test_a_partition_quiet_for_long_is_not_waited_for_again_after_a_pause() -> None:
    """Only the partitions heard from within ``idle`` seconds of a pause are waited for
    again after it: one nobody writes to holds back a sparse stream's records once."""
    merge: TimeMerge[list[int]] = TimeMerge(idle=2.0, end_wait=0.2)
    a, b = ("in", 0), ("in", 1)
    merge.assign([a, b], now=0.0)
    merge.end(a)
    merge.push(b, [0], [10.0], now=5.0)
    merge.end(b)
    assert merge.take(now=5.0) == []  # a's wait begins: it never had a clock
    assert merge.take(now=5.3) == [(b, [0], 0, 1)]
    # A pause, then b's next record: a, quiet since it was assigned, holds nothing back.
    merge.push(b, [1], [11.0], now=6.0)
    merge.end(b)
    assert merge.take(now=6.0) == [(b, [1], 0, 1)]
    # Once heard from, a is waited for again after the next pause.
    merge.push(a, [0], [11.5], now=6.5)
    merge.end(a)
    assert merge.take(now=6.5) == []  # b, heard from at 6.0, is waited for
    assert merge.take(now=6.8) == [(a, [0], 0, 1)]
    merge.push(b, [2], [12.0], now=7.8)
    merge.end(b)
    assert merge.take(now=7.8) == []
    assert merge.take(now=8.1) == [(b, [2], 0, 1)]


class _Rescanning(TimeMerge[list[Record]]):
    """The merge as first written: every head rescanned and sorted per run, records
    leaving in (clock, partition) order (the reference for the heap's and the sort's
    choices: the same runs, ties included). A partition read to its end and waited for
    (``end_wait``, from the first take that finds it empty and others' records
    buffered) caps the clocks of the others' records at its last plus its slack, from
    the take's start; empty, at the newest clock forwarded when its wait began if that
    is more."""

    def take(self, now: float, *, force: bool = False) -> list[Run[list[Record]]]:
        runs = self._rescan(now, force)
        if not force:
            self._start_waits(now)
        return runs

    def _start_waits(self, now: float) -> None:
        parts = self._parts.values()
        if self.end_wait and any(part.size for part in parts):
            for part in parts:
                if part.at_end and not part.size and part.wait_from is None:
                    part.wait_from = now
                    part.base = self.high

    def _rescan(self, now: float, force: bool) -> list[Run[list[Record]]]:
        runs: list[Run[list[Record]]] = []
        parts = self._parts
        caps: dict[TP, float] = {}
        if not force:
            self._start_waits(now)
        for tp, part in parts.items():
            start = part.wait_from
            waited = part.size > 0 or (start is not None and now - start < self.end_wait)
            if force or not part.at_end or not waited or not self.end_wait:
                continue
            cap = part.last + self.slack.get(tp[0], 0.0)
            if not part.size:
                cap = max(cap, part.base)
            if cap == cap:
                caps[tp] = cap
        while True:
            heads: list[tuple[float, TP]] = []
            for tp, part in parts.items():
                if part.size:
                    chunk = part.chunks[0]
                    heads.append((chunk.times[chunk.pos], tp))
                elif not force and not part.at_end:
                    lag = 0 if self.lag is None else self.lag(tp)
                    if now - part.empty_since < self.idle or lag is None or lag > 0:
                        return runs
            if not heads:
                return runs
            heads.sort()
            tp = heads[0][1]
            limit = min([c for other, c in caps.items() if other != tp], default=INF)
            if heads[0][0] > limit:
                return runs
            other = heads[1] if len(heads) > 1 else (INF, tp)
            part = parts[tp]
            chunk = part.chunks[0]
            start, times = chunk.pos, chunk.times
            stop = start + 1
            # Up to the next other head in (clock, partition) order, and the cap.
            while stop < len(times) and (times[stop], tp) <= other and times[stop] <= limit:
                stop += 1
            runs.append((tp, chunk.payload, start, stop))
            self.high = max([self.high, *times[start:stop]])
            part.size -= stop - start
            if stop == len(times):
                part.chunks.popleft()
            else:
                chunk.pos = stop
            if not part.size:
                part.empty_since = now


@st.composite
def distinct_backlogs(draw: st.DrawFn) -> tuple[list[list[list[Record]]], list[int]]:
    """As ``backlogs``, but larger and with no clock shared by two partitions (runs
    cut by clocks alone, not by ties)."""
    n = draw(st.integers(2, 6))
    sizes = [draw(st.integers(0, 60)) for _ in range(n)]
    shuffled = draw(st.permutations(range(sum(sizes))))
    bounds = [0, *itertools.accumulate(sizes)]
    clocks = [sorted(shuffled[a:b]) for a, b in pairwise(bounds)]
    return _fetched(draw, clocks, none_in=20, cuts=4)


def _same_runs_as_rescanning(
    case: tuple[list[list[list[Record]]], list[int]],
    idle: float,
    clock: list[tuple[float, bool]],
    lagged: bool = False,
    end_wait: tuple[float, float, int] = (0.0, 0.0, 0),
) -> None:
    # Same pushes, ends, clocks and forced takes on both: the same runs, one by one.
    # ``lagged``: both know each partition's lag (unknown until its first chunk, then
    # the records of its chunks not pushed yet), as the coordinator's consumer does.
    # ``end_wait``: the wait for a partition read to its end, the slack of the topic of
    # the even partitions (the odd ones' is 0), and every how many fetches a partition
    # is read to its end after a chunk not its last, as in a stream still written to
    # (0: never).
    parts, order = case
    fed = [0] * len(parts)
    lag = _lag_of(parts, fed)
    wait, slack, ends = end_wait
    merges = (
        TimeMerge[list[Record]](idle, lag if lagged else None, wait),
        _Rescanning(idle, lag if lagged else None, wait),
    )
    tps: list[TP] = [("in" if p % 2 else "even", p) for p in range(len(parts))]
    for merge in merges:
        merge.slack["even"] = slack
        merge.assign(tps, now=0.0)
    now = 0.0
    for step, p in enumerate(order):
        advance, force = clock[step % len(clock)]
        now += advance
        chunk = parts[p][fed[p]]
        fed[p] += 1  # as the consumer hands the chunk out: both merges see the new lag
        runs = []
        for merge in merges:
            merge.push(tps[p], chunk, [r[2] for r in chunk], now=now)
            if (fed[p] == len(parts[p]) and step % 3 == 0) or (ends and step % ends == 0):
                merge.end(tps[p])
            runs.append(merge.take(now=now, force=force))
        assert runs[0] == runs[1]
        assert merges[0].high == merges[1].high
    assert merges[0].take(now=now, force=True) == merges[1].take(now=now, force=True)


CLOCKS = st.lists(st.tuples(st.floats(0, 3), st.booleans()), min_size=1, max_size=40)


# No wait for ends; a wait of a second or forever, with a slack of 0 or 5 on half the
# partitions, and partitions read to their end every other or every fifth fetch.
END_WAITS = st.one_of(
    st.just((0.0, 0.0, 0)),
    st.tuples(st.sampled_from([1.0, INF]), st.sampled_from([0.0, 5.0]), st.sampled_from([2, 5])),
)


@settings(max_examples=500, deadline=None)
@given(backlogs(), st.sampled_from([0.0, 1.0, INF]), CLOCKS, st.booleans(), END_WAITS)
def test_the_heap_takes_the_runs_a_rescan_of_every_head_takes(
    case: tuple[list[list[list[Record]]], list[int]],
    idle: float,
    clock: list[tuple[float, bool]],
    lagged: bool,
    end_wait: tuple[float, float, int],
) -> None:
    with patch.object(time_merge, "_SORTED_FROM", 10**9):  # the heap alone
        _same_runs_as_rescanning(case, idle, clock, lagged, end_wait)


@settings(max_examples=500, deadline=None)
@given(
    st.one_of(backlogs(), distinct_backlogs()),
    st.sampled_from([0.0, 1.0, INF]),
    CLOCKS,
    st.booleans(),
    END_WAITS,
)
def test_sorting_the_clocks_takes_the_runs_a_rescan_of_every_head_takes(
    case: tuple[list[list[list[Record]]], list[int]],
    idle: float,
    clock: list[tuple[float, bool]],
    lagged: bool,
    end_wait: tuple[float, float, int],
) -> None:
    # Sorting from the first buffered record on, and one partition alone too, not only
    # where the heap would cost more.
    with (
        patch.object(time_merge, "_SORTED_FROM", 1),
        patch.object(time_merge, "_SORTED_PARTITIONS", 1),
    ):
        _same_runs_as_rescanning(case, idle, clock, lagged, end_wait)


def test_interleaved_partitions_are_merged_by_sorting_into_the_heaps_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Twenty partitions whose clocks interleave record by record, fetched a chunk per
    partition at a time, as the coordinator sees a topic keyed by ticker: the takes
    sort, and hand out the rescanning merge's runs."""
    sorted_runs: list[int] = []  # runs handed out by sorting, per take (-1: by the heap)
    original = TimeMerge._take_sorted

    def spy(self: TimeMerge[list[Record]], now: float, force: bool, cap: float) -> object:
        runs = original(self, now, force, cap)
        sorted_runs.append(-1 if runs is None else len(runs))
        return runs

    monkeypatch.setattr(TimeMerge, "_take_sorted", spy)
    n, per = 20, 90
    parts = [
        [[(p, o, float(o * n + p)) for o in range(a, a + 30)] for a in range(0, per, 30)]
        for p in range(n)
    ]
    order = [p for _ in range(per // 30) for p in range(n)]
    _same_runs_as_rescanning((parts, order), INF, [(0.0, False)])
    # Runs of one record each (the clocks interleave), nearly all of them sorted.
    assert sum(r for r in sorted_runs if r > 0) >= n * per - 64


def test_the_wait_left_for_a_partition_read_to_its_end() -> None:
    merge: TimeMerge[list[int]] = TimeMerge(idle=INF, end_wait=0.5)
    a, b = ("in", 0), ("in", 1)
    merge.assign([a, b], now=0.0)
    merge.end(b)
    assert merge.end_wait_left(0.0) == INF  # nothing buffered: no wait begun
    merge.push(a, [0], [1.0], now=0.0)
    merge.end(a)
    assert merge.end_wait_left(0.0) == INF  # records buffered: a's wait has not begun
    assert merge.take(now=1.0) == []  # b's begins: no clock yet, it holds back a's 1.0
    assert merge.end_wait_left(1.2) == pytest.approx(0.3)
    assert merge.take(now=1.5) == [(a, [0], 0, 1)]
    assert merge.end_wait_left(1.5) == INF  # over: nothing is buffered to wait for
