"""One substream's events of a columnar batch (``QueryEvaluator.process_columns``).

Events whose letter changes nothing are skipped in bulk (``relevance``); the
others advance the substream one by one, with the window caught up first to
where the skipped events would have moved it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from cerfleet.complex_event import ComplexEvent, KeyValue
from cerfleet.evaluation.partitioning import GROUPED_KINDS
from cerfleet.evaluation.relevance import NextRelevant, Relevance
from cerfleet.evaluation.substream import SubstreamEvaluator
from cerfleet.plan import QueryPlan

if TYPE_CHECKING:
    import numpy as np
else:
    from cerfleet.lazy_numpy import np

Key = tuple[KeyValue, ...]
Row = Callable[[int], Mapping[str, Any]]


class QueryEvaluator(Protocol):
    """What a batch's run needs of ``query_evaluator.QueryEvaluator``."""

    query: QueryPlan
    late: int
    late_rows: list[int]

    def _advance(
        self,
        sub: SubstreamEvaluator,
        key: Key,
        j: int,
        event: Mapping[str, Any],
        letter: int,
        clock: float | None,
    ) -> list[ComplexEvent]: ...


# A substream with this few events in a batch runs them one by one: with many keys
# (one event each, say) the vector set-up per key costs far more than the events.
FEW = 16
# A batch whose PARTITION BY keys get at most this many of its events each, on average,
# runs row by row (``few_per_key``).
ROWS_PER_KEY = 16
# Batches up to this size have their keys counted (``few_per_key``); a larger one is
# grouped by numpy, whose set-up its rows then outweigh.
_COUNTED = 1024


def few_per_key(attrs: tuple[str, ...], cols: Mapping[str, np.ndarray], n: int) -> bool:
    """Whether a batch's PARTITION BY keys are so many that its substreams get
    ``ROWS_PER_KEY`` events or fewer each on average: most would then go event by event
    anyway (``_run_few``), and the batch is cheaper row by row than its vector passes and
    grouping (a worker's 60-record batches over ten tickers: 19.5 µs of CPU per event row
    by row against 29.5 through the columns, medians of three)."""
    if not attrs or n > _COUNTED:
        return False
    values = []
    for attr in attrs:
        col = cols.get(attr)
        if col is None or col.dtype.kind not in GROUPED_KINDS:
            return False  # no key or no grouping by numpy: not this function's choice
        values.append(col.tolist())
    keys = set(values[0]) if len(values) == 1 else set(zip(*values, strict=True))
    return n <= ROWS_PER_KEY * len(keys)


def run_columns(
    ev: QueryEvaluator,
    sub: SubstreamEvaluator,
    key: Key,
    positions: np.ndarray,
    letters: np.ndarray,
    timing: tuple[np.ndarray | None, np.ndarray | None],
    row: Row,
    idx: np.ndarray,
    exact_keys: bool,
) -> list[ComplexEvent]:
    """One substream's events of a batch: ``positions`` are their global positions,
    ``idx`` their rows in the batch; ``exact_keys``: each complex event's key is read
    from its end event (``row``) rather than being ``key``; ``timing``: the events'
    clocks and which are behind the horizon (late whatever their key's clock)."""
    n = len(positions)
    if n <= FEW:
        return _run_few(ev, sub, key, positions, letters, timing, row, idx, exact_keys)
    clocks, forced = timing
    if clocks is None:
        local = sub.clock + np.arange(n)  # EVENTS windows count every event
        late = np.zeros(n, dtype=bool)
    else:
        # The latest clock before each event; an event below it is late. Events
        # behind the horizon move no clock, as row by row.
        kept = clocks if forced is None else np.where(forced, np.nan, clocks)
        # As a float: an int clock beyond int64 (a huge timestamp read row by row)
        # would make the array objects, whose NaN comparisons are not fmax's.
        before = np.fmax.accumulate(np.concatenate(([float(sub.last_clock)], kept)))
        late = clocks < before[:-1]
        if forced is not None:
            late |= forced
        late_count = int(late.sum())
        if late_count:
            ev.late += late_count
            ev.late_rows += idx[late].tolist()
        local = sub.clock + np.cumsum(~late) - 1
    finder = NextRelevant(letters, late)
    rel = Relevance(ev.query.dcea, finder.letters)
    partition_key = ev.query.partition_key
    # Python lists: the loop reads single values, which numpy scalars make slow.
    letter_of = letters.tolist()
    local_of = local.tolist()
    position_of = positions.tolist()
    row_of = idx.tolist()
    clock_of = None if clocks is None else clocks.tolist()
    before_of = None if clocks is None else before.tolist()
    out: list[ComplexEvent] = []
    i = 0
    while (nxt := finder.first_from(i, sub.relevant(rel))) is not None:
        i = nxt
        clock: float | None
        if clock_of is None or before_of is None:
            clock = local_of[i]
        else:
            # The events skipped before i moved the window: catch τ up first.
            if before_of[i] != float("-inf"):
                sub.tick(before_of[i])
            clock = clock_of[i]
            if clock != clock:  # NaN: the event has no clock
                clock = None
        sub.clock = local_of[i] + 1
        event = row(row_of[i])
        end_key = (partition_key(event) or key) if exact_keys else key
        out += ev._advance(sub, end_key, position_of[i], event, letter_of[i], clock)
        i += 1
    if n:
        # Leave the window where the row-by-row path would: at the batch's last clock.
        sub.clock = local_of[-1] + 1
        if clock_of is None or before_of is None:
            sub.tick(local_of[-1])
        else:
            last = clock_of[-1]
            if late[-1] or not last >= before_of[-1]:  # NaN or late: it moved nothing
                last = before_of[-1]
            if last != float("-inf"):
                sub.tick(last)
    return out


def _run_few(
    ev: QueryEvaluator,
    sub: SubstreamEvaluator,
    key: Key,
    positions: np.ndarray,
    letters: np.ndarray,
    timing: tuple[np.ndarray | None, np.ndarray | None],
    row: Row,
    idx: np.ndarray,
    exact_keys: bool,
) -> list[ComplexEvent]:
    """``run_columns`` as ``QueryEvaluator.process`` does it, event by event."""
    clocks, forced = timing
    clock_of = None if clocks is None else clocks.tolist()
    forced_of = None if forced is None else forced.tolist()
    partition_key = ev.query.partition_key
    out: list[ComplexEvent] = []
    for t, (i, j, letter) in enumerate(
        zip(idx.tolist(), positions.tolist(), letters.tolist(), strict=True)
    ):
        clock: float | None
        if clock_of is None:
            clock = sub.clock
        else:
            clock = clock_of[t]
            if clock != clock:  # NaN: the event has no clock
                clock = None
            elif clock < sub.last_clock or (forced_of is not None and forced_of[t]):
                ev.late += 1
                ev.late_rows.append(i)
                continue
        sub.clock += 1
        event = row(i)
        end_key = (partition_key(event) or key) if exact_keys else key
        out += ev._advance(sub, end_key, j, event, letter, clock)
    return out
