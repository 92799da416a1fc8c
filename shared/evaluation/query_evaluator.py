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
from shared.evaluation.batch import NextRelevant, Relevance, clock_column, column_length
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
        column included; NaN marks a missing number). Same output as ``process`` on
        each row in order, but events that change nothing are skipped in bulk (see ``batch``)."""
        n = column_length(columns)
        query = self.query
        rows = RowView(columns)
        if query.partitioned:
            # Per-key clocks and restarts need the key of every event: row by row.
            return self.process_batch(rows.at(i) for i in range(n))
        letters = query.batch.letters(columns, n)
        sub = self._substream(())
        base, eps = self.position, query.epsilon
        self.position += n
        self.last_late = False
        if query.clock is None:
            clocks = None
            local = sub.clock + np.arange(n)  # EVENTS windows count every event
            late = np.zeros(n, dtype=bool)
        else:
            clocks = clock_column(query, columns, n)
            # The latest clock before each event; an event below it is late.
            before = np.fmax.accumulate(np.concatenate(([sub.last_clock], clocks)))
            late = clocks < before[:-1]
            self.late += int(late.sum())
            local = sub.clock + np.cumsum(~late) - 1
        finder = NextRelevant(letters, late)
        rel = Relevance(query.dcea, finder.letters)
        # Python lists: the loop reads single values, which numpy scalars make slow.
        letter_of = letters.tolist()
        local_of = local.tolist()
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
                sub.last_clock = before_of[i]
                if sub.last_clock != float("-inf"):
                    sub.tau = sub.last_clock - eps
                clock = clock_of[i]
                if clock != clock:  # NaN: the event has no clock
                    clock = None
            sub.clock = local_of[i] + 1
            out += self._advance(sub, (), base + i, rows.at(i), letter_of[i], clock)
            i += 1
        if n:
            sub.clock = int(local[-1]) + 1
            if clocks is None:
                sub.tau = max(sub.tau, sub.clock - 1 - eps)
            else:
                sub.last_clock = float(np.fmax(before[-1], clocks[-1]))
                if sub.last_clock != float("-inf"):
                    sub.tau = sub.last_clock - eps
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
