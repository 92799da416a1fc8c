"""Bounded out-of-orderness for a query in the fleet: ``cerfleet run --max-lateness``
per keyed partition, its buffer part of the partition's checkpoint.

Each query with a lateness bound holds its keyed partition's events in a reorder
buffer (``events.reorder``) and evaluates them in time order as the watermark (the
largest time seen minus the bound) passes them; an event below the watermark when it
arrives is late and takes part in nothing, as in ``cerfleet run``. Released events are
numbered in release order: those numbers are the positions the engine sees (they
must increase), while the output records name each event's input record as always.

What is released depends only on the keyed partition's records, so a successor that
restores the checkpoint (the evaluator and this buffer, held events included) and
replays the records after it releases and emits exactly what the failed worker would
have: exactly-once holds as without a bound. Nothing is released at an end of input,
which a topic does not have: the last events wait for later ones.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cerfleet.complex_event import ComplexEvent
from cerfleet.events.columns import columns_of
from cerfleet.events.reorder import Reorder
from cerfleet.events.timestamps import parse_timestamp
from cerfleet.fleet.registry import Registered
from cerfleet.query import Evaluator

__all__ = ["Lateness", "in_time_order", "stage_of"]

Held = tuple[Mapping[str, Any], int]  # the event, its keyed offset (for the record)


class Lateness:
    """One query's reorder stage in one keyed partition."""

    __slots__ = ("buffer", "late", "released", "time_field")

    def __init__(self, max_lateness: float, time_field: str) -> None:
        self.buffer: Reorder[Held] = Reorder(max_lateness)
        self.time_field = time_field
        self.released = 0  # events released so far: the next one's position
        self.late = 0

    def feed(
        self, events: Sequence[Mapping[str, Any]], offsets: Sequence[int]
    ) -> tuple[list[Mapping[str, Any]], list[int]]:
        """Push a batch's events (in offset order); return those released, in time
        order, with their positions."""
        out: list[Mapping[str, Any]] = []
        buffer = self.buffer
        field = self.time_field
        for event, offset in zip(events, offsets, strict=True):
            time = parse_timestamp(event.get(field))
            if buffer.beyond(time):
                self.late += 1
                continue
            out += [held for held, _ in buffer.push(time, (event, offset))]
        first = self.released
        self.released += len(out)
        return out, list(range(first, self.released))

    def export(self) -> dict[str, Any]:
        """JSON-able state for the checkpoint (held events as plain mappings: their
        source and stream fields included, as in an engine snapshot)."""
        return {
            "time_field": self.time_field,
            "released": self.released,
            "late": self.late,
            "buffer": self.buffer.export(lambda held: [dict(held[0]), held[1]]),
        }

    @classmethod
    def restore(cls, state: Mapping[str, Any]) -> Lateness:
        stage = cls.__new__(cls)
        stage.time_field = str(state["time_field"])
        stage.released = int(state["released"])
        stage.late = int(state["late"])
        stage.buffer = Reorder.restore(state["buffer"], lambda item: (item[0], int(item[1])))
        return stage


def stage_of(entry: Registered, state: Mapping[str, Any] | None) -> Lateness | None:
    """The reorder stage of a registered query (``state``: from its checkpoint), or None
    when it has no bound (``max_lateness``, else its BOUNDED_TIME quarantine)."""
    bound = entry.spec.max_lateness
    if bound is None:
        bound = entry.query.pattern.max_lateness
    if bound is None:
        return None
    if state is not None:
        return Lateness.restore(state)
    return Lateness(bound, entry.spec.time_field)


def in_time_order(
    stage: Lateness,
    evaluator: Evaluator,
    events: Sequence[Mapping[str, Any]],
    offsets: Sequence[int],
) -> list[ComplexEvent]:
    """Evaluate what ``events`` release from ``stage``; the complex events that ends."""
    released, positions = stage.feed(events, offsets)
    if not released:
        return []
    # Row by row (a few events released), the engine reads the events, not columns.
    by_rows = evaluator.by_rows(len(released))
    columns = {} if by_rows else columns_of(released, evaluator.query.attributes)
    return evaluator.process_columns(columns, events=released, positions=positions)
