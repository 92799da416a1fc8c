"""The first task pass: classify each archived record and give it its place in the order.

For each record: whether the fleet would evaluate it (JSON object with a string
type field, obeying the declared schema), its evaluation unit (the PARTITION BY
values as JSON, normalised as the coordinator keys records, so 1, 1.0 and true
make one unit) and its order time ``t``: the query's time field in ms when the
event has one, else the record's Kafka timestamp, else null (first). Events are
evaluated in ``(t, topic, partition, offset)`` order within their unit.

The batch goes through the columnar ingestion layer (``events.ingest.JsonDecoder``),
decoding only the type, time and PARTITION BY attributes (and what the schema check
reads) into numpy columns; units and times are computed on those columns. Only the
records that layer refuses, or that the fleet's record limits may refuse (too large,
too deep: found with Arrow compute), are judged one by one, by the fleet's own rules,
so that their verdict and message are the fleet's.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from cerfleet.events.ingest import JsonDecoder
from cerfleet.events.timestamps import parse_timestamp
from cerfleet.fleet.keyed import key_of
from cerfleet.fleet.records import DEFAULT_LIMITS, Rejected, decode_event
from cerfleet.workers.backfill.job_query import JobQuery
from cerfleet.workers.backfill.schemas import ADDED, BAD, GOOD, PREPARED, UNKEYED

__all__ = ["ascii_only", "classify", "prepare"]

# An archive keeps tombstones; say so rather than "not a JSON object".
_TOMBSTONE = Rejected("tombstone", "no value (a tombstone)")
_EXACT = 2**53  # int64 keys beyond this would not equal their float64 twins in the engine


@lru_cache(maxsize=16)
def _decoder(job: JobQuery) -> JsonDecoder:
    query = job.compiled()
    declared = {name for attrs in query._schema.values() for name in attrs}
    return JsonDecoder(
        {*query.partition_attrs, job.time_field},
        job.type_field,
        check=query.check_event if query._schema else None,
        check_attributes=declared,
    )


def _judge(job: JobQuery, value: bytes | None) -> tuple[str | None, dict[str, Any] | None]:
    """The fleet's verdict on one record, one by one: (problem, event)."""
    event = _TOMBSTONE if value is None else decode_event(value)
    if isinstance(event, Rejected):
        return event.error, None
    if not isinstance(event.get(job.type_field), str):
        return f"type field {job.type_field!r} missing or not a string", None
    problem = job.compiled().check_event(event)
    return (problem, None) if problem is not None else (None, event)


def _unit(event: Any, attrs: tuple[str, ...] | None) -> str | None:
    if attrs is None:
        return ""
    key = key_of(event, attrs)
    return None if key is None else key.decode()


def ascii_only(values: pa.Array) -> bool:
    """Whether every byte of ``values`` (binary) is ASCII, in one vector pass over a numpy
    view of Arrow's data buffer (its rows' bytes only, no copy): the decoder then skips
    its own UTF-8 check, which joins and decodes the batch's records again. Null slots
    may hold bytes too (a false "no" costs only that check)."""
    n = len(values)
    _, offset_buffer, data_buffer = values.buffers()
    if not n or offset_buffer is None or data_buffer is None:
        return True
    wide = pa.types.is_large_binary(values.type) or pa.types.is_large_string(values.type)
    offsets = np.frombuffer(offset_buffer, dtype=np.int64 if wide else np.int32)
    first, last = int(offsets[values.offset]), int(offsets[values.offset + n])
    data = np.frombuffer(data_buffer, dtype=np.uint8)[first:last]
    return not len(data) or int(data.max()) < 0x80


def _suspects(values: pa.Array) -> np.ndarray:
    """Rows the fleet's record limits may refuse, or tombstones: judged one by one."""
    limits = DEFAULT_LIMITS
    size = pc.binary_length(values)
    deep = pc.add(pc.count_substring(values, "["), pc.count_substring(values, "{"))
    out = pc.or_kleene(pc.greater(size, limits.max_bytes), pc.greater(deep, limits.max_depth))
    return np.asarray(pc.fill_null(out, True).to_numpy(zero_copy_only=False), dtype=bool)


def _plain_units(columns: list[np.ndarray]) -> np.ndarray | None:
    """The units as ``key_of`` writes them, when every key column is plain (exact int64
    or strings, none missing): each distinct value is written once."""
    if not all(c.dtype.kind == "U" or c.dtype == np.int64 for c in columns):
        return None
    parts = []
    for c in columns:
        if c.dtype == np.int64 and len(c) and int(np.abs(c).max()) >= _EXACT:
            return None
        distinct, inverse = np.unique(c, return_inverse=True)
        written = np.array([orjson.dumps(v).decode() for v in distinct.tolist()], dtype=object)
        parts.append((written, inverse))
    if len(parts) == 1:
        # One key attribute: bracketed once per distinct value, not once per record.
        written, inverse = parts[0]
        out: np.ndarray = ("[" + written + "]")[inverse]
        return out
    joined = parts[0][0][parts[0][1]]
    for written, inverse in parts[1:]:
        joined = joined + "," + written[inverse]
    return "[" + joined + "]"


def _times(col: np.ndarray) -> np.ndarray:
    """Order times (ms, NaN: none) of the time field's column."""
    if col.dtype.kind in "iu":
        return col.astype(np.float64)
    if col.dtype.kind == "f":
        return np.where(np.isfinite(col), col, np.nan)
    return np.array(
        [np.nan if (t := parse_timestamp(v)) is None else t for v in col.tolist()],
        dtype=np.float64,
    )


def classify(job: JobQuery, value_col: pa.Array, stamps_col: pa.Array | None) -> pa.StructArray:
    """What ``prepare`` adds to each record (``ADDED``), from its value and its Kafka
    timestamp (None: no timestamps)."""
    query = job.compiled()
    attrs = tuple(query.partition_attrs) if query.partitioned else None
    n = len(value_col)
    if stamps_col is not None:
        stamps = stamps_col.to_numpy(zero_copy_only=False).astype(np.float64)
    else:
        stamps = np.full(n, np.nan)
    status = np.full(n, BAD, dtype=np.int8)
    errors: list[str | None] = [None] * n
    units = np.full(n, None, dtype=object)
    times = np.full(n, np.nan)

    suspect = _suspects(value_col)
    fast = np.flatnonzero(~suspect)
    slow = set(np.flatnonzero(suspect).tolist())
    if len(fast):
        # A take copies every value: only when some rows are left out.
        chosen = value_col if len(fast) == n else value_col.take(pa.array(fast))
        values = chosen.to_pylist()
        decoded = _decoder(job).decode(values, list(range(len(values))), ascii=ascii_only(chosen))
        kept = np.asarray(decoded.lines, dtype=np.int64)
        # Whatever the layer refused (or dropped: blank records) is judged one by one.
        refused = np.ones(len(fast), dtype=bool)
        refused[kept] = False
        slow.update(fast[refused].tolist())
        rows = fast[kept]
        if attrs is None:
            units[rows] = ""
        else:
            cols = [decoded.columns[a] for a in attrs]
            found = _plain_units(cols)
            if found is None:
                found = np.array([_unit(e, attrs) for e in decoded.events], dtype=object)
            units[rows] = found
        times[rows] = _times(decoded.columns[job.time_field])
        status[rows] = GOOD
    for i in sorted(slow):
        problem, event = _judge(job, value_col[i].as_py())
        if problem is not None:
            errors[i] = problem
            continue
        units[i] = _unit(event, attrs)
        t = parse_timestamp(event.get(job.time_field)) if event is not None else None
        times[i] = np.nan if t is None else t
        status[i] = GOOD
    unit_col = pa.array(units, pa.string())  # null for bad records and those without key
    status[(status == GOOD) & unit_col.is_null().to_numpy(zero_copy_only=False)] = UNKEYED
    times = np.where(np.isnan(times), stamps, times)
    return pa.StructArray.from_arrays(
        [
            pa.array(status, pa.int8()),
            pa.array(errors, pa.string()),
            unit_col,
            pa.array(times, pa.float64(), mask=(status == BAD) | np.isnan(times)),
        ],
        fields=list(ADDED),
    )


def prepare(job: JobQuery, batch: pa.RecordBatch) -> pa.RecordBatch:
    """Archive (or archive-like) rows in, ``PREPARED`` rows out, one for one."""
    names = batch.schema.names
    value_col = batch.column("value")
    added = classify(job, value_col, batch.column("timestamp") if "timestamp" in names else None)
    return pa.RecordBatch.from_pydict(
        {
            "topic": batch.column("topic"),
            "partition": batch.column("partition").cast(pa.int32()),
            "offset": batch.column("offset").cast(pa.int64()),
            "value": value_col,
            **{name: added.field(name) for name in ADDED.names},
        },
        schema=PREPARED,
    )
