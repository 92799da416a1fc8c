"""The backfill's dataflow without Spark: the same task functions, with the shuffle,
the sort and the slice expressions done here in plain Python.

The Spark tests check that the job gives what this gives; the property tests check
that this gives what the engine gives over the whole stream.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import orjson
import pyarrow as pa

from cerfleet.workers.backfill.job_query import JobQuery
from cerfleet.workers.backfill.prepare import prepare
from cerfleet.workers.backfill.schemas import ARCHIVE, GOOD, PREPARED
from cerfleet.workers.backfill.slices import SlicePlan, label_bases, slice_epsilon
from cerfleet.workers.backfill.units import evaluate_batches

SLICED = pa.schema([*PREPARED, pa.field("slice", pa.int64()), pa.field("overlap", pa.bool_())])


def archive_rows(events: list[dict[str, Any]], topic: str = "in") -> list[dict[str, Any]]:
    """Events as archive rows of one partition, offsets 0.., no Kafka timestamp."""
    return [
        {
            "topic": topic,
            "partition": 0,
            "offset": i,
            "timestamp": None,
            "key": None,
            "value": orjson.dumps(e),
            "headers": None,
            "date": "unknown",
        }
        for i, e in enumerate(events)
    ]


def _order(unit: Any, row: dict[str, Any]) -> tuple[Any, ...]:
    t = row["t"]
    return (
        unit is not None,
        unit if unit is not None else "",
        t is not None,
        t if t is not None else 0.0,
        row["topic"],
        row["partition"],
        row["offset"],
    )


def _batches(rows: list[dict[str, Any]], schema: pa.Schema, size: int) -> list[pa.RecordBatch]:
    return [
        pa.RecordBatch.from_pylist(rows[i : i + size], schema=schema)
        for i in range(0, len(rows), size)
    ] or [pa.RecordBatch.from_pylist([], schema=schema)]


def local_backfill(
    job: JobQuery, rows: list[dict[str, Any]], slices: int = 1, batch_size: int = 7
) -> list[dict[str, Any]]:
    """``RESULT`` rows of a backfill of ``rows`` (archive rows), in one task."""
    prepared = prepare(job, pa.RecordBatch.from_pylist(rows, schema=ARCHIVE)).to_pylist()
    epsilon = slice_epsilon(job.compiled(), job.time_field)
    times = [r["t"] for r in prepared if r["status"] == GOOD and r["t"] is not None]
    if epsilon is None or slices <= 1 or not times:
        prepared.sort(key=lambda r: _order(r["unit"], r))
        batches = _batches(prepared, PREPARED, batch_size)
        return [r for b in evaluate_batches(job, None, None, iter(batches)) for r in b.to_pylist()]
    plan = SlicePlan.of(min(times), max(times), epsilon, slices)
    expanded = []
    for r in prepared:
        expanded.append({**r, "slice": plan.core(r["t"]), "overlap": False})
        if r["status"] == GOOD and plan.copied(r["t"]):
            expanded.append({**r, "slice": plan.core(r["t"]) + 1, "overlap": True})
    good = [r for r in expanded if r["status"] == GOOD]
    core = Counter(r["slice"] for r in good if not r["overlap"])
    overlap = Counter(r["slice"] for r in good if r["overlap"])
    bases = label_bases(core, overlap)
    expanded.sort(key=lambda r: _order(r["slice"], r))
    batches = _batches(expanded, SLICED, batch_size)
    return [r for b in evaluate_batches(job, bases, None, iter(batches)) for r in b.to_pylist()]
