"""Output records of a language whose output is rows (MATCH_RECOGNIZE), not complex
events.

The language's own output stage (``cerfleet.languages.row_writer``, the one ``cerfleet
run`` prints with) turns each complex event into its rows; each row is published as one
record whose value is the JSON object ``cerfleet run`` prints for it. The stage carries
state from one complex event to the next (MATCH_RECOGNIZE's MATCH_NUMBER, per PARTITION BY
key): a query keeps one stage per keyed partition, fed every complex event in order,
replayed ones included, and its state is part of the partition's checkpoint, so a
successor numbers matches on where its predecessor stopped.

The worker's own fields on an event (its source record, its stream) are not attributes
of the row: ALL ROWS PER MATCH prints the row as it came in.
"""

from __future__ import annotations

import json
from typing import Any

from cerfleet.complex_event import ComplexEvent
from cerfleet.fleet.registry import Registered
from cerfleet.languages import RowWriter, row_writer
from cerfleet.workers.keyed_events import SOURCE_FIELD, STREAM_FIELD

__all__ = ["TRUNCATED_HEADER", "RowOutputs"]

# A row record carries the flag ``"truncated": true`` of a complex-event record as this
# header instead: the row's fields are the query's (a measure may be named truncated).
TRUNCATED_HEADER = "cerfleet-truncated"
# A row over this many bytes (an ALL ROWS PER MATCH row of a very large event, measures
# copying large strings) would be refused by the producer on every replay: its values
# are published as null and the record names them in the OMITTED_HEADER.
MAX_ROW_BYTES = 900_000
OMITTED_HEADER = "cerfleet-omitted"
# As ``cerfleet run`` encodes rows: compact, non-ASCII kept, any integer.
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_WORKER_FIELDS = (SOURCE_FIELD, STREAM_FIELD)


class RowOutputs:
    """One query's output stage in one keyed partition."""

    __slots__ = ("writer",)

    def __init__(self, writer: RowWriter) -> None:
        self.writer = writer

    @classmethod
    def of(cls, entry: Registered, state: Any = None) -> RowOutputs | None:
        """The stage of ``entry``'s language, continuing from ``state`` (a checkpoint's;
        None: a fresh one); None when the language outputs complex events."""
        return cls.for_query(entry.spec.query_language, entry.spec.ceql, state)

    @classmethod
    def for_query(cls, language: str, text: str, state: Any = None) -> RowOutputs | None:
        """``of`` for a query given by its language and text (a backfill's)."""
        writer = row_writer(language, text)
        if writer is None:
            return None
        if state is not None:
            writer.restore(state)
        return cls(writer)

    def values(self, ce: ComplexEvent) -> list[tuple[bytes, list[str]]]:
        """The record values of ``ce``'s rows, in order, each with the fields it had to
        leave out (null) to fit a record."""
        out = []
        for row in self.writer.rows(ce):
            for name in _WORKER_FIELDS:
                row.pop(name, None)
            value = _encode(row).encode()
            omitted: list[str] = []
            if len(value) > MAX_ROW_BYTES:
                omitted = list(row)
                value = _encode(dict.fromkeys(row)).encode()
            out.append((value, omitted))
        return out

    def export(self) -> Any:
        """The stage's state as JSON, for the checkpoint."""
        return self.writer.export()
