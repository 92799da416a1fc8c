"""A whole query over a stream: PARTITION BY, window clocks, LIMIT, global positions.

``PARTITION BY`` runs one Algorithm-1 ``Evaluator`` per key (CORE §4.4). Nodes
hold global input positions, so complex events come out numbered as in the
input; ``WITHIN n EVENTS`` still counts positions of the partition's own
substream through the evaluator's clock.

Time must not go backwards within a substream under a time or attribute window:
an event whose clock is smaller than the latest clock already seen in its
substream is *late*. It keeps its input position but is dropped from the
substream (it never takes part in a complex event) and counted in ``late``;
``last_late`` says whether the latest processed event was one. The CLI reports
these; dropping rather than failing keeps an endless stream alive, as CORE's
own evaluator does.

Consumption: once a complex event is output at position j, ``CONSUME BY
PARTITION`` restarts the partition's evaluator (every later complex event there
starts after j) and ``CONSUME BY ANY`` restarts every partition's. Restarting is
O(1): the active states are dropped, not scanned, and ANY bumps an epoch that
each substream compares with its own on its next event.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from shared.cea.vector_predicates import RowView
from shared.ceql.ast import Consume
from shared.complex_event import ComplexEvent, KeyValue
from shared.evaluation.batch import (
    NextRelevant,
    Relevance,
    clock_column,
    column_length,
    partition_groups,
)
from shared.evaluation.enumeration import enumerate_node
from shared.evaluation.substream import SubstreamEvaluator
from shared.evaluation.tecs import Node

if TYPE_CHECKING:
    from shared.query import CompiledQuery

Key = tuple[KeyValue, ...]


class QueryEvaluator:
    """Feeds events one at a time (or in batches) and returns the complex events they end."""

    def __init__(self, query: CompiledQuery) -> None:
        self.query = query
        self.position = 0  # global position of the next event
        self.substreams: dict[Key, SubstreamEvaluator] = {}
        self.epoch = 0  # bumped by each CONSUME BY ANY restart
        self.epochs: dict[Key, int] = {}  # the epoch each substream last restarted in
        self.late = 0
        self.last_late = False
        self.unpartitioned = 0  # events lacking a PARTITION BY attribute

    def process(self, event: Mapping[str, Any]) -> list[ComplexEvent]:
        """Give ``event`` the next position; return the complex events ending at it."""
        j = self.position
        self.position = j + 1
        self.last_late = False
        query = self.query
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
            if clock is not None and clock < sub.last_clock:
                self.late += 1
                self.last_late = True
                return []
        sub.clock += 1
        return self._advance(sub, key, j, event, query.dcea.letter(event), clock)

    def process_batch(self, events: Iterable[Mapping[str, Any]]) -> list[ComplexEvent]:
        out: list[ComplexEvent] = []
        for event in events:
            out.extend(self.process(event))
        return out

    def process_columns(self, columns: Mapping[str, np.ndarray]) -> list[ComplexEvent]:
        """Process a batch given as numpy columns (one array per attribute, the type
        column included; NaN marks a missing number). Same output as ``process`` on each
        row in order, but events that change nothing are skipped in bulk (see ``batch``)."""
        n = column_length(columns)
        query = self.query
        rows = RowView(columns)
        groups = partition_groups(query.partition_attrs, columns, n)
        if groups is None or (query.partitioned and query.consume is Consume.ANY):
            # Keys of another kind, or restarts that couple all keys: row by row.
            return self.process_batch(rows.at(i) for i in range(n))
        letters = query.batch.letters(columns, n)
        clocks = None if query.clock is None else clock_column(query, columns, n)
        base = self.position
        self.position += n
        self.last_late = False
        out: list[ComplexEvent] = []
        in_partitions = 0
        for key, idx in groups:
            in_partitions += len(idx)
            sub = self._substream(key)
            key_clocks = None if clocks is None else clocks[idx]
            out += self._run_columns(sub, key, base + idx, letters[idx], key_clocks, rows, idx)
        self.unpartitioned += n - in_partitions
        if len(groups) > 1:
            out.sort(key=lambda ce: ce.end)  # stable: one end per key, enumeration order kept
        return out

    def _run_columns(
        self,
        sub: SubstreamEvaluator,
        key: Key,
        positions: np.ndarray,
        letters: np.ndarray,
        clocks: np.ndarray | None,
        rows: RowView,
        idx: np.ndarray,
    ) -> list[ComplexEvent]:
        """One substream's events of a batch: ``positions`` are their global positions,
        ``idx`` their rows in the batch."""
        n = len(positions)
        if clocks is None:
            local = sub.clock + np.arange(n)  # EVENTS windows count every event
            late = np.zeros(n, dtype=bool)
        else:
            # The latest clock before each event; an event below it is late.
            before = np.fmax.accumulate(np.concatenate(([sub.last_clock], clocks)))
            late = clocks < before[:-1]
            self.late += int(late.sum())
            local = sub.clock + np.cumsum(~late) - 1
        finder = NextRelevant(letters, late)
        rel = Relevance(self.query.dcea, finder.letters)
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
            event = rows.at(row_of[i])
            out += self._advance(sub, key, position_of[i], event, letter_of[i], clock)
            i += 1
        if n:
            # Leave the window where the row-by-row path would: at the batch's last clock.
            sub.clock = local_of[-1] + 1
            if clock_of is None or before_of is None:
                sub.tick(local_of[-1])
            else:
                last = clock_of[-1]
                if not last >= before_of[-1]:  # NaN or late: the last event moved nothing
                    last = before_of[-1]
                if last != float("-inf"):
                    sub.tick(last)
        return out

    def _substream(self, key: Key) -> SubstreamEvaluator:
        sub = self.substreams.get(key)
        if sub is None:
            sub = self.substreams[key] = self.query.substream_evaluator()
            self.epochs[key] = self.epoch
        elif self.epochs[key] != self.epoch:
            sub.reset()  # a CONSUME BY ANY restart happened since this key's last event
            self.epochs[key] = self.epoch
        return sub

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
        out = self._output(finals, sub.tau, j, key if query.partitioned else None)
        if out and query.consume is not Consume.NONE:
            sub.reset()
            if query.consume is Consume.ANY:
                self.epoch += 1
                self.epochs[key] = self.epoch
        return out

    def _output(
        self, finals: list[Node], tau: float, j: int, key: Key | None
    ) -> list[ComplexEvent]:
        limit = self.query.limit
        out: list[ComplexEvent] = []
        for node in finals:
            for start, positions, events in enumerate_node(node, tau):
                out.append(ComplexEvent(start, j, positions, key, events))
                if limit is not None and len(out) >= limit:
                    return out
        return out

    def snapshot(self) -> bytes:
        """The evaluator's whole state as bytes; ``CompiledQuery.restore`` reverses it."""
        from shared.evaluation.snapshot import dump

        return dump(self)
