"""JSON Lines files as archive rows, for archiving exports that never went through Kafka.

Each non-blank line becomes one record of ``topic``, partition 0, with its
0-based line number as the offset, so a file behaves like a one-partition
topic: a backfill over it numbers events as ``cerfleet run`` does when no line
is malformed. The timestamp (and so the archive date) is the time field's
value when it parses, else unknown. Lines are stored as they are; judging them
is the backfill's job.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson
import pyarrow as pa

from cerfleet.events.timestamps import parse_timestamp
from cerfleet.workers.backfill.schemas import ARCHIVE, dates_of

__all__ = ["jsonl_batches"]


def _stamp(line: bytes, time_field: str | None) -> int | None:
    if time_field is None:
        return None
    try:
        event = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(event, dict):
        return None
    t = parse_timestamp(event.get(time_field))
    return None if t is None else int(t)


def jsonl_batches(
    path: str | Path, topic: str, time_field: str | None, batch_size: int = 100_000
) -> Iterator[pa.RecordBatch]:
    rows: dict[str, list[object]] = {name: [] for name in ARCHIVE.names if name != "date"}

    def flush() -> pa.RecordBatch:
        data = {**rows, "date": dates_of(rows["timestamp"])}  # type: ignore[arg-type]
        batch = pa.RecordBatch.from_pydict(data, schema=ARCHIVE)
        for col in rows.values():
            col.clear()
        return batch

    with open(path, "rb") as fh:
        for number, raw in enumerate(fh):
            line = raw.rstrip(b"\r\n")
            if number == 0:
                line = line.removeprefix(b"\xef\xbb\xbf")
            if not line.strip():
                continue
            rows["topic"].append(topic)
            rows["partition"].append(0)
            rows["offset"].append(number)
            rows["timestamp"].append(_stamp(line, time_field))
            rows["key"].append(None)
            rows["value"].append(line)
            rows["headers"].append(None)
            if len(rows["offset"]) >= batch_size:
                yield flush()
    if rows["offset"]:
        yield flush()
