"""Keyed record values → a query's columns, with the same verdicts as one by one.

A batch is judged in two steps. ``screen`` applies the fleet's record limits
(``cerfleet.fleet.records``) to every value once: tombstones, values over
``max_bytes`` and values nested deeper than ``max_depth`` become dead letters of
the record, before any decoder reads them. ``decode_rows`` then hands the rest
to a query's ``JsonDecoder`` (``cerfleet.events.ingest``), which reads just that
query's attributes into columns and judges the records it cannot take exactly as
``cerfleet run`` would; its reasons map onto the dead-letter labels: ``invalid_json``
and ``not_an_object`` belong to the record (one letter, whichever query saw it
first), ``no_type`` and ``schema`` to the query.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from cerfleet.events.columns import column
from cerfleet.events.ingest import JsonDecoder
from cerfleet.fleet.records import RecordLimits, Rejected, decode_event, near_limits
from cerfleet.workers.keyed_batch import KeyedBatch
from cerfleet.workers.keyed_events import STREAM_FIELD, KeyedEvents

__all__ = ["RECORD_REASONS", "Decoded", "Screened", "decode_rows", "screen", "segments"]

# Dead-letter reasons that are about the record, not about one query reading it.
RECORD_REASONS = frozenset({"invalid_json", "not_an_object", "too_large", "too_deep", "not_rdf"})
# The messages ``events.records.type_problem`` gives.
_TYPE_PROBLEMS = ("missing type field ", "type field ", "empty type field ")


@dataclass(slots=True)
class Screened:
    kept: list[int]  # rows within the limits, in order
    rejected: list[tuple[int, Rejected]]


@dataclass(slots=True)
class Decoded:
    """A query's view of some rows of a batch: the rows that are its events, their
    columns, events (bytes and source) and keyed offsets, and the rows it refused
    as ``(row, reason, error)``."""

    rows: Sequence[int]
    columns: dict[str, np.ndarray]
    events: KeyedEvents
    positions: list[int]
    problems: list[tuple[int, str, str]]


def screen(batch: KeyedBatch, rows: Sequence[int], limits: RecordLimits) -> Screened:
    """``rows`` of ``batch`` split into those within ``limits`` and those that are not
    (the same verdict and message as ``decode_event``)."""
    values = batch.values
    rows = list(rows)
    suspects = near_limits([values[i] for i in rows], limits)
    if not suspects:
        return Screened(rows, [])
    rejected: list[tuple[int, Rejected]] = []
    for k in suspects:
        verdict = decode_event(values[rows[k]], limits)
        if isinstance(verdict, Rejected):
            rejected.append((rows[k], verdict))
    out = {i for i, _ in rejected}
    kept = [i for i in rows if i not in out]
    return Screened(kept, rejected)


def segments(rows: list[int], registries: Sequence[int]) -> Iterator[list[int]]:
    """``rows`` in runs of equal registry offset (usually one run: the whole batch)."""
    if not rows:
        return
    if registries[rows[0]] == registries[rows[-1]] and min(registries) == max(registries):
        yield rows
        return
    start = 0
    for k in range(1, len(rows)):
        if registries[rows[k]] != registries[rows[start]]:
            yield rows[start:k]
            start = k
    yield rows[start:]


def decode_rows(
    decoder: JsonDecoder,
    batch: KeyedBatch,
    rows: Sequence[int],
    topic_streams: Mapping[str, str] | None = None,
    *,
    columns: bool = True,
) -> Decoded:
    """What ``decoder``'s query makes of ``rows`` of ``batch`` (values screened: not null).
    ``topic_streams``: the query's input topic -> stream map; each event's stream is then
    that of the topic its record was routed from (a column and ``KeyedEvent.stream``).
    ``columns``: False when the events are evaluated row by row (``Decoded.columns`` is
    then empty)."""
    values = batch.values
    # Rows are distinct and in order: as many as the batch's are all of them, the common
    # case, whose lists are used as they are rather than copied (three per batch).
    whole = len(rows) == len(values)
    records = values if whole else [values[i] for i in rows]
    decoded = decoder.decode(records, rows, columns=columns)  # type: ignore[arg-type]
    problems = [(i, _label(reason), reason) for i, reason in decoded.problems]
    kept = decoded.lines
    if len(kept) + len(problems) != len(rows):
        # The decoder drops blank records (blank lines of a file) unreported; a blank
        # record value is no JSON, as ``decode_event`` says.
        judged = {*kept, *(i for i, _, _ in problems)}
        for i in rows:
            if i not in judged:
                verdict = decode_event(values[i])
                error = verdict.error if isinstance(verdict, Rejected) else "not valid JSON"
                problems.append((i, "invalid_json", error))
        problems.sort()
    sources = batch.sources
    offsets = batch.offsets
    every = len(kept) == len(offsets)
    kept_sources = sources if every else [sources[i] for i in kept]
    arrays = decoded.columns
    streams: list[str | None] | None = None
    if topic_streams is not None:
        streams = [None if s is None else topic_streams.get(s[0]) for s in kept_sources]
        if columns:
            arrays = {**arrays, STREAM_FIELD: column(streams)}
    return Decoded(
        kept,
        arrays,
        KeyedEvents(decoded.events, kept_sources, streams),  # type: ignore[arg-type]
        offsets if every else [offsets[i] for i in kept],
        problems,
    )


def _label(reason: str) -> str:
    """The dead-letter label of a verdict of ``JsonDecoder``."""
    if reason.startswith("not a JSON object"):
        return "not_an_object"
    if reason.startswith(_TYPE_PROBLEMS):
        return "no_type"
    if reason.startswith("not valid"):
        return "invalid_json"
    return "schema"
