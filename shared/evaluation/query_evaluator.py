"""A whole query over a stream: PARTITION BY, window clocks, LIMIT, positions.

``PARTITION BY`` runs one Algorithm-1 ``Evaluator`` per key (CORE §4.4); nodes hold
global input positions; ``WITHIN n EVENTS`` counts the partition's own events. Correlated
queries (``cea.correlation``) check their correlations while enumerating.

Positions only label events (windows never measure them): by default 0, 1, 2, …
(``position`` is the next one); a caller may label them instead (``process(event,
position)``, ``positions=``), e.g. with log offsets, gaps allowed, each label greater
than every one before. Complex events carry those labels.

Time must not go backwards within a substream under a time or attribute window: an
event whose clock is below the latest clock seen in its substream is *late*. It keeps its
input position but is dropped from the substream and counted in ``late``; ``last_late``
says whether the latest event was one. Dropping rather than failing keeps an endless
stream alive, as CORE's own evaluator does.

Consumption: once a complex event is output at position j, ``CONSUME BY PARTITION``
restarts the partition's evaluator and ``CONSUME BY ANY`` every partition's, in O(1):
ANY bumps an epoch each substream compares with its own on its next event.

Idle keys are forgotten: once a PARTITION BY key's substream holds no partial match (every
run has expired from its window, been consumed, or died), the substream is
evicted (a small batch's at its end), so memory follows the keys with live runs.
This changes no output: a fresh substream behaves as the idle one would (EVENTS
clocks only ever compare with each other, and an idle substream has nothing
for a CONSUME BY ANY restart to drop), except for lateness, which remembers the
key's latest clock: under a time or attribute window an evicted key keeps that
one number (``evicted``), and nothing under an EVENTS window or none. Under a
time or attribute window the lateness horizon (``horizon``) also makes events far
behind the whole stream's newest clock late, which lets keys whose runs can no
longer complete and old ``evicted`` clocks go (see ``horizon`` for the rule and
why it changes nothing else); PREV's lag histories stay (``lag``).

Columnar batches (``process_columns``) give the same output as their rows one by one;
complex events hold rows rebuilt from the columns, or the caller's events (``events=``),
which are read instead where a column cannot stand for them exactly.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from cerfleet.cea.vector_predicates import RowView
from cerfleet.complex_event import ComplexEvent, KeyValue
from cerfleet.evaluation.columnar_run import few_per_key, run_columns
from cerfleet.evaluation.correlated import Correlator, correlated_complex_events
from cerfleet.evaluation.declared_lateness import DeclaredLateness
from cerfleet.evaluation.enumeration import complex_events
from cerfleet.evaluation.evicted import EvictedClocks
from cerfleet.evaluation.horizon import Horizon
from cerfleet.evaluation.lag import Lags, lag_groups
from cerfleet.evaluation.partitioning import (
    checked_labels,
    checked_positions,
    column_length,
    partition_groups,
)
from cerfleet.evaluation.snapshot import dump
from cerfleet.evaluation.substream import SubstreamEvaluator
from cerfleet.evaluation.tecs import Node
from cerfleet.evaluation.window import batch_clocks
from cerfleet.pattern import Consume, Strategy
from cerfleet.plan import QueryPlan

# Batches of at most this many rows run row by row (``process_columns``); a row batch
# of at most EVICT_AT_END evicts its idle keys at its end, a larger one as they go.
ROW_BATCH = 32
EVICT_AT_END = 1024

if TYPE_CHECKING:
    import numpy as np
else:
    from cerfleet.lazy_numpy import np

Key = tuple[KeyValue, ...]
Row = Callable[[int], Mapping[str, Any]]


class QueryEvaluator:
    """Feeds events one at a time (or in batches) and returns the complex events they end."""

    def __init__(self, query: QueryPlan) -> None:
        self.query = query
        self.position = 0  # global position of the next event
        self.substreams: dict[Key, SubstreamEvaluator] = {}
        self.epoch = 0  # bumped by each CONSUME BY ANY restart
        self.evicted = EvictedClocks()  # evicted keys' latest clocks, for lateness
        self._idle: dict[Key, SubstreamEvaluator] | None = None  # a row batch's (``_rows``)
        self.late = 0
        self.last_late = False
        self.late_rows: list[int] = []  # late rows of the last columnar batch, unordered
        self.unpartitioned = 0  # events lacking a PARTITION BY attribute
        # The host's bound on the complex events one event may end (None: unbounded): like
        # LIMIT it stops enumeration; unlike LIMIT, cuts are recorded (``truncated``, and
        # ``truncated_ends`` until the caller clears it). A setting: no snapshot holds it.
        self.max_outputs: int | None = None
        self.truncated = 0
        self.truncated_ends: list[int] = []
        self.lags = Lags(query.lags) if query.lags else None  # what PREV reads
        self.correlator = None if query.correlation is None else Correlator(query.correlation)
        self.declared: DeclaredLateness | None = None  # keys from equalities (plan)
        if query.implicit_keys and query.clock is not None:
            self.declared = DeclaredLateness(query.partition_attrs, query.lateness_key)
        self.horizon: Horizon | None = None
        if query.keyed and query.clock is not None:
            # Only Algorithm 1's runs never outrank one another (see horizon).
            plain = query.strategy in (Strategy.ALL, Strategy.STRICT)
            self.horizon = Horizon(query.epsilon, drops_live=plain)

    def process(self, event: Mapping[str, Any], position: int | None = None) -> list[ComplexEvent]:
        """Process one event labelled ``position`` (default and minimum: ``self.position``,
        which becomes the label plus one); return the complex events ending at it."""
        out = self._one(event, position)
        if self.horizon is not None:
            self.horizon.sweep(self)
        return out

    def _one(self, event: Mapping[str, Any], position: int | None) -> list[ComplexEvent]:
        """``process`` without the horizon's sweep, which a batch does once at its end
        (it only frees keys and clocks no later event can use: never an output)."""
        if position is None:
            j = self.position
        else:
            j = operator.index(position)
            if j < self.position:
                raise ValueError(f"position {j} is below the next free position {self.position}")
        self.position = j + 1
        self.last_late = False
        query = self.query
        if self.declared is not None and self.declared.late(event, query.clock(event)):  # type: ignore[misc]
            self.late, self.last_late = self.late + 1, True
            return []
        key = query.partition_key(event)
        if key is None:
            self.unpartitioned += 1
            return []
        sub = self._substream(key)
        clock_fn = query.clock
        if clock_fn is None:
            clock: float | None = sub.clock
        else:
            clock = clock_fn(event)
            horizon = self.horizon
            if clock is not None and (
                clock < sub.last_clock or (horizon is not None and horizon.behind(clock))
            ):
                self.late += 1
                self.last_late = True
                self._evict_if_idle(key, sub)
                return []
            if clock is not None and horizon is not None:
                horizon.see(clock)
        sub.clock += 1
        lags = self.lags
        if lags is None:
            out = self._advance(sub, key, j, event, query.dcea.letter(event), clock)
        else:
            # The event keeps its lagged values: the output stage may judge it again.
            seen = lags.view(key, event)
            lags.push(key, [lags.own(event)])
            out = self._advance(sub, key, j, seen, query.dcea.letter(seen), clock)
        # PREV's history is the partition's rows, matched or not: it stays (lag.py).
        self._evict_if_idle(key, sub)
        return out

    def process_batch(
        self, events: Iterable[Mapping[str, Any]], positions: Sequence[int] | None = None
    ) -> list[ComplexEvent]:
        """``process`` each event, labelled by ``positions`` if given (strictly increasing
        from at least ``self.position``, checked first)."""
        out: list[ComplexEvent] = []
        one = self._one
        if positions is None:
            for event in events:
                out.extend(one(event, None))
        else:
            events = events if isinstance(events, Sequence) else list(events)
            labels = checked_labels(positions, len(events), self.position)
            for event, j in zip(events, labels, strict=True):
                out.extend(one(event, j))
        if self.horizon is not None:
            self.horizon.sweep(self)
        return out

    def process_columns(
        self,
        columns: Mapping[str, np.ndarray],
        *,
        events: Sequence[Mapping[str, Any]] | None = None,
        positions: np.ndarray | Sequence[int] | None = None,
    ) -> list[ComplexEvent]:
        """Process a batch given as numpy columns (one array per attribute, the type
        column included; NaN marks a missing number). Same output as ``process`` on each
        row in order, but events that change nothing are skipped in bulk (see ``batch``).

        ``events``: the original event of each row (``cerfleet.events.columns.columns_of``
        builds columns for them); complex events then hold these very objects instead of
        rows rebuilt from the columns. ``positions``: labels of the rows, as for
        ``process_batch``. Both must have the columns' length (``ValueError``)."""
        self.late_rows = []
        n = column_length(columns) if columns or events is None else len(events)
        if events is not None and len(events) != n:
            raise ValueError(f"{len(events)} events for columns of length {n}")
        query = self.query
        row: Row = RowView(columns).at if events is None else events.__getitem__
        if self.by_rows(n) or few_per_key(query.key_attrs, columns, n):
            listed = None if positions is None else checked_labels(positions, n, self.position)
            return self._rows(row, n, events, listed)
        labels = None if positions is None else checked_positions(positions, n, self.position)
        groups = partition_groups(query.key_attrs, columns, n)
        if groups is None:
            return self._rows(row, n, events, labels)
        clocks = behind = None
        if query.clock is not None:
            clocks = self._clocks(columns, n, events)
            if clocks is None:
                return self._rows(row, n, events, labels)
            if self.horizon is not None:
                in_partition = np.zeros(n, dtype=bool)
                for _, idx in groups:
                    in_partition[idx] = True
                behind = self.horizon.batch(clocks, in_partition)
        exact_keys = events is not None and query.keyed
        outside = 0  # late rows in no substream
        if self.declared is not None and clocks is not None:
            groups, late, outside = self.declared.split(groups, columns, clocks, n, row)
            self.late += len(late)
            self.late_rows += late
        if self.lags is None:
            letters = self._letters(columns, n, events is not None, row)
        else:
            keyed = lag_groups(self, groups, clocks, row, exact_keys)
            lagged, row = self.lags.batch(keyed, row, n, columns)  # rows keep their lags
            letters = self._letters({**columns, **lagged}, n, events is not None, row)
        base = self.position
        self.position = base + n if labels is None or not n else int(labels[-1]) + 1
        self.last_late = False
        # The key of a complex event is its end event's, as a Python value of that event.
        out: list[ComplexEvent] = []
        in_partitions = 0
        for group_key, idx in groups:
            if not len(idx):
                continue  # an empty batch: no substream to create, as row by row
            in_partitions += len(idx)
            key = group_key
            if exact_keys:
                key = query.partition_key(row(int(idx[0]))) or group_key
            sub = self._substream(key)
            key_clocks = None if clocks is None else clocks[idx]
            forced = None if behind is None else behind[idx]
            at = base + idx if labels is None else labels[idx]
            out += run_columns(
                self, sub, key, at, letters[idx], (key_clocks, forced), row, idx, exact_keys
            )
            self._evict_if_idle(key, sub)
        if self.horizon is not None:
            self.horizon.sweep(self)
        self.unpartitioned += n - in_partitions - outside
        if len(groups) > 1:
            out.sort(key=lambda ce: ce.end)  # stable: one end per key, enumeration order kept
        return out

    def by_rows(self, n: int) -> bool:
        """Whether ``process_columns`` takes ``n`` rows row by row, never reading columns:
        small batches (vector set-up costs more than a few rows) and restarts coupling all
        keys. Keys of another kind or with few rows each (``few_per_key``), or clocks
        floats cannot hold exactly, are found in the columns: row by row too."""
        return n <= ROW_BATCH or (self.query.keyed and self.query.consume is Consume.ANY)

    def process_records(
        self,
        records: Sequence[bytes],
        *,
        lines: Sequence[int] | None = None,
        on_malformed: Callable[[int, str], None] | None = None,
    ) -> list[ComplexEvent]:
        """Process raw JSON records (file lines, Kafka values): the attributes the query
        reads are decoded straight into columns; events keep their bytes. A record that
        is not an event takes no position and goes to ``on_malformed(line, reason)``."""
        batch = self.query.json_decoder.decode(records, lines)
        if on_malformed is not None:
            for line, reason in batch.problems:
                on_malformed(line, reason)
        return self.process_columns(batch.columns, events=batch.events)

    def _rows(
        self,
        row: Row,
        n: int,
        events: Sequence[Mapping[str, Any]] | None,
        labels: np.ndarray | list[int] | None,
    ) -> list[ComplexEvent]:
        """A columnar batch row by row (rows rebuilt from columns one at a time)."""
        rows = events if events is not None else (row(i) for i in range(n))
        at: Sequence[int | None] = [None] * n
        if labels is not None:
            at = labels if isinstance(labels, list) else labels.tolist()
        out: list[ComplexEvent] = []
        one = self._one
        self._idle = {} if n <= EVICT_AT_END else None  # a key idle now may come back
        try:
            for i, (event, j) in enumerate(zip(rows, at, strict=True)):
                out.extend(one(event, j))
                if self.last_late:
                    self.late_rows.append(i)
        finally:
            idle, self._idle = self._idle or {}, None
            for key, sub in idle.items():
                if self.substreams.get(key) is sub and sub.idle:
                    self._evict_if_idle(key, sub)
        if self.horizon is not None:
            self.horizon.sweep(self)
        return out

    def _letters(
        self, columns: Mapping[str, np.ndarray], n: int, originals: bool, row: Row
    ) -> np.ndarray:
        """The batch's letters: vector passes where they are surely exact, else one
        scalar letter per row (of the original events when given)."""
        query = self.query
        if query.batch_letters_exact(columns, originals=originals):
            return query.batch.letters(columns, n)
        letter = query.dcea.letter
        return np.fromiter((letter(row(i)) for i in range(n)), dtype=np.int64, count=n)

    def _clocks(
        self, columns: Mapping[str, np.ndarray], n: int, events: Sequence[Mapping[str, Any]] | None
    ) -> np.ndarray | None:
        query = self.query
        assert query.clock is not None and query.pattern.within is not None
        return batch_clocks(query.pattern.within, query.time_field, query.clock, columns, n, events)

    def _substream(self, key: Key) -> SubstreamEvaluator:
        sub = self.substreams.get(key)
        if sub is None:
            sub = self.substreams[key] = self.query.substream_evaluator()
            sub.epoch = self.epoch
            last = self.evicted.pop_clock(key)
            if last is not None:
                sub.tick(last)  # an evicted key: its later events are late below this
        elif sub.epoch != self.epoch:
            sub.reset()  # a CONSUME BY ANY restart happened since this key's last event
            sub.epoch = self.epoch
        return sub

    def _evict_if_idle(self, key: Key, sub: SubstreamEvaluator) -> None:
        # Without PARTITION BY there is one substream: nothing to gain, and its
        # reclaimer's sweep rhythm is best left unbroken.
        horizon = self.horizon
        if not self.query.keyed or not sub.idle:
            if horizon is not None:
                horizon.touch(key, sub.last_clock)
            return
        if self._idle is not None:
            self._idle[key] = sub
            return
        del self.substreams[key]  # its entries in the horizon's queue go in its sweep
        if self.query.clock is not None and sub.last_clock != float("-inf"):
            self.evicted[key] = sub.last_clock

    def _advance(
        self,
        sub: SubstreamEvaluator,
        key: Key,
        j: int,
        event: Mapping[str, Any],
        letter: int,
        clock: float | None,
    ) -> list[ComplexEvent]:
        query = self.query
        finals = sub.advance(j, event, letter, clock)
        if not finals:
            return []
        out = self._output(finals, sub.tau, j, query.visible_key(key))
        if out and query.consume is not Consume.NONE:
            sub.reset()
            if query.consume is Consume.ANY:
                self.epoch += 1
                sub.epoch = self.epoch
        return out

    def _output(
        self, finals: list[Node], tau: float, j: int, key: Key | None
    ) -> list[ComplexEvent]:
        args = (finals, tau, j, key, self.query.limit, self.max_outputs)
        if self.correlator is None:
            out, cut = complex_events(*args)
        else:
            out, cut = correlated_complex_events(self.correlator, self.query.strategy, *args)
        if cut:  # one more complex event exists: the bound cut this event's output
            self.truncated += 1
            self.truncated_ends.append(j)
        return out

    def snapshot(self) -> bytes:
        """The evaluator's whole state as bytes; ``CompiledQuery.restore`` reverses it."""
        return dump(self)
