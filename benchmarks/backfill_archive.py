"""The backfill benchmark's archive: stock events, each with a desk, filed as the
compaction job files a topic (``date=…/part-*.parquet``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks.datasets import BLOCK, batches
from cerfleet.workers.backfill.schemas import ARCHIVE, dates_of

DESKS = 50
TOPIC = "stock"
TIME_FIELD = "stock_time"


def desks(first: int, m: int) -> np.ndarray:
    """Event i's desk: a multiplicative hash of i, so every desk has n/50 events spread
    over the whole stream (no desk is hot at any moment)."""
    i = np.arange(first, first + m, dtype=np.uint64)
    return ((i * np.uint64(2654435761)) % np.uint64(2**32) % np.uint64(DESKS)).astype(np.int64)


def write_archive(directory: Path, n: int) -> None:
    """N stock events as the compaction job files them: ``date=…/part-*.parquet``."""
    offset = 0
    writers: dict[str, pq.ParquetWriter] = {}
    schema = pa.schema([f for f in ARCHIVE if f.name != "date"])
    try:
        for batch in batches("stock", n, size=BLOCK):
            batch = {**batch, "desk": desks(offset, len(batch["type"]))}
            keys = list(batch)
            columns = [batch[k].tolist() for k in keys]
            values = [
                orjson.dumps(dict(zip(keys, row, strict=True)))
                for row in zip(*columns, strict=True)
            ]
            m = len(values)
            stamps = [int(t) for t in batch[TIME_FIELD].tolist()]
            table = pa.table(
                {
                    "topic": [TOPIC] * m,
                    "partition": pa.array([0] * m, pa.int32()),
                    "offset": pa.array(range(offset, offset + m), pa.int64()),
                    "timestamp": pa.array(stamps, pa.int64()),
                    "key": pa.array([None] * m, pa.binary()),
                    "value": pa.array(values, pa.binary()),
                    "headers": pa.array([None] * m, schema.field("headers").type),
                },
                schema=schema,
            )
            offset += m
            dates = dates_of(stamps)
            for date in sorted(set(dates)):
                part = table.filter(pa.array([d == date for d in dates]))
                if date not in writers:
                    path = directory / f"date={date}" / "part-0.parquet"
                    path.parent.mkdir(parents=True, exist_ok=True)
                    writers[date] = pq.ParquetWriter(path, schema)
                writers[date].write_table(part)
    finally:
        for w in writers.values():
            w.close()
