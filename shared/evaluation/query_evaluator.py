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
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from shared.complex_event import ComplexEvent, KeyValue
from shared.evaluation.enumeration import enumerate_node
from shared.evaluation.evaluator import Evaluator

if TYPE_CHECKING:
    from shared.query import CompiledQuery

Key = tuple[KeyValue, ...]


class QueryEvaluator:
    """Feeds events one at a time (or in batches) and returns the complex events they end."""

    def __init__(self, query: CompiledQuery) -> None:
        self.query = query
        self.position = 0  # global position of the next event
        self.substreams: dict[Key, Evaluator] = {}
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
            sub = self.substreams[key] = Evaluator(query.dcea, query.epsilon)
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
        return self._output(finals, sub.tau, j, key if query.partitioned else None)

    def process_batch(self, events: Iterable[Mapping[str, Any]]) -> list[ComplexEvent]:
        out: list[ComplexEvent] = []
        for event in events:
            out.extend(self.process(event))
        return out

    def _output(self, finals: list, tau: float, j: int, key: Key | None) -> list[ComplexEvent]:
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
