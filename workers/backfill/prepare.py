"""The first task pass: classify each archived record and give it its place in the order.

For each record: whether the fleet would evaluate it (JSON object with a string
type field, obeying the declared schema), its evaluation unit (the PARTITION BY
values as JSON, normalised as the coordinator keys records, so 1, 1.0 and true
make one unit) and its order time ``t``: the query's time field in ms when the
event has one, else the record's Kafka timestamp, else null (first). Events are
evaluated in ``(t, topic, partition, offset)`` order within their unit.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from cerfleet.events.timestamps import parse_timestamp
from cerfleet.fleet.keyed import key_of
from cerfleet.fleet.records import Rejected, decode_event
from cerfleet.workers.backfill.job_query import JobQuery
from cerfleet.workers.backfill.schemas import BAD, GOOD, PREPARED, UNKEYED

__all__ = ["prepare", "prepare_batches"]

# An archive keeps tombstones; say so rather than "not a JSON object".
_TOMBSTONE = Rejected("tombstone", "no value (a tombstone)")


def prepare(job: JobQuery, batch: pa.RecordBatch) -> pa.RecordBatch:
    """Archive (or archive-like) rows in, ``PREPARED`` rows out, one for one."""
    query = job.compiled()
    attrs = query.partition_attrs if query.partitioned else None
    type_field, time_field = job.type_field, job.time_field
    values = batch.column("value").to_pylist()
    names = batch.schema.names
    stamps = batch.column("timestamp").to_pylist() if "timestamp" in names else [None] * len(values)
    status: list[int] = []
    errors: list[str | None] = []
    units: list[str | None] = []
    times: list[float | None] = []
    for value, stamp in zip(values, stamps, strict=True):
        event = _TOMBSTONE if value is None else decode_event(value)
        problem: str | None
        if isinstance(event, Rejected):
            problem = event.error
        elif not isinstance(event.get(type_field), str):
            problem = f"type field {type_field!r} missing or not a string"
        else:
            problem = query.check_event(event)
        if problem is not None:
            status.append(BAD)
            errors.append(problem)
            units.append(None)
            times.append(None)
            continue
        assert isinstance(event, dict)
        if attrs is None:
            unit: str | None = ""
        else:
            key = key_of(event, attrs)
            unit = None if key is None else key.decode()
        t = parse_timestamp(event.get(time_field))
        if t is None and stamp is not None:
            t = float(stamp)
        status.append(GOOD if unit is not None else UNKEYED)
        errors.append(None)
        units.append(unit)
        times.append(t)
    return pa.RecordBatch.from_pydict(
        {
            "topic": batch.column("topic"),
            "partition": batch.column("partition").cast(pa.int32()),
            "offset": batch.column("offset").cast(pa.int64()),
            "value": batch.column("value"),
            "status": pa.array(status, pa.int8()),
            "error": pa.array(errors, pa.string()),
            "unit": pa.array(units, pa.string()),
            "t": pa.array(times, pa.float64()),
        },
        schema=PREPARED,
    )


def prepare_batches(job: JobQuery, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body of the first pass."""
    for batch in batches:
        yield prepare(job, batch)
