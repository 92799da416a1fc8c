"""Arrow schemas of the archive and of the backfill's intermediate and output rows.

The archive keeps each Kafka record as it was (key, value and headers as bytes)
with its coordinates, so a backfill can name the input record behind every
matched event exactly as the fleet does.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

# One row per Kafka record. ``date`` (UTC, from the record timestamp) is the
# directory partition of the Parquet archive.
ARCHIVE = pa.schema(
    [
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp", pa.int64()),  # ms since the epoch; null when unknown
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("headers", pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))),
        ("date", pa.string()),
    ]
)
COORDINATES = ("topic", "partition", "offset")
UNKNOWN_DATE = "unknown"


def dates_of(timestamps: list[int | None]) -> list[str]:
    """The archive's ``date`` of each timestamp (ms): its UTC day, or ``UNKNOWN_DATE``."""
    ms = np.array([-1 if t is None else t for t in timestamps], dtype=np.int64)
    days = np.datetime_as_string(ms.astype("datetime64[ms]").astype("datetime64[D]"))
    return [UNKNOWN_DATE if t is None else str(d) for t, d in zip(timestamps, days, strict=True)]


# Row status after preparation.
GOOD, BAD, UNKEYED = 0, 1, 2

# What ``prepare`` adds to the coordinates and value: the evaluation unit (the
# PARTITION BY key as JSON, "" for a query without PARTITION BY), the order
# time ``t`` (ms) and, for bad records, why.
ADDED = pa.schema(
    [
        ("status", pa.int8()),
        ("error", pa.string()),
        ("unit", pa.string()),
        ("t", pa.float64()),
    ]
)
PREPARED = pa.schema(
    [
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("value", pa.binary()),
        *ADDED,
    ]
)

# What the evaluation tasks emit: one schema for three kinds of rows, so that a
# single Spark stage yields matches, bad records and per-task counts.
MATCH, BAD_RECORD, STATS = "match", "bad", "stats"
RESULT = pa.schema(
    [
        ("kind", pa.string()),
        ("query", pa.string()),
        ("key", pa.string()),  # match: the PARTITION BY values as JSON (null without)
        ("start", pa.int64()),
        ("end", pa.int64()),
        ("value", pa.binary()),  # match: the output record; bad: the record as archived
        ("error", pa.string()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("events", pa.int64()),  # stats: events evaluated
        ("keys", pa.int64()),  # stats: evaluation units (keys or time slices)
        ("unkeyed", pa.int64()),  # stats: events without the PARTITION BY attributes
        ("matches", pa.int64()),  # stats: complex events emitted
        ("bad", pa.int64()),  # stats: bad records emitted
    ]
)
