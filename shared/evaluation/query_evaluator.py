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

from shared.ceql.ast import Consume
from shared.complex_event import ComplexEvent, KeyValue
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
        sub = self.substreams.get(key)
        if sub is None:
            sub = self.substreams[key] = query.substream_evaluator()
            self.epochs[key] = self.epoch
        elif self.epochs[key] != self.epoch:
            sub.reset()  # a CONSUME BY ANY restart happened since this key's last event
            self.epochs[key] = self.epoch
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
        finals = sub.advance(j, event, query.dcea.letter(event), clock)
        if not finals:
            return []
        out = self._output(finals, sub.tau, j, key if query.partitioned else None)
        if out and query.consume is not Consume.NONE:
            sub.reset()
            if query.consume is Consume.ANY:
                self.epoch += 1
                self.epochs[key] = self.epoch
        return out

    def process_batch(self, events: Iterable[Mapping[str, Any]]) -> list[ComplexEvent]:
        out: list[ComplexEvent] = []
        for event in events:
            out.extend(self.process(event))
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
