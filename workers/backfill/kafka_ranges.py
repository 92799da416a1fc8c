"""Offset ranges of input topics: planned on the Spark driver, read inside tasks.

pyspark ships without Kafka's SQL connector, so tasks read with confluent-kafka
directly: each task gets ``(topic, partition, start, end)`` and returns Arrow
batches in the archive schema. Large partitions are split so that a topic with
few partitions still spreads over every core.

Time bounds narrow the offsets with ``offsets_for_times`` where the broker
answers it; the tasks also filter on each record's timestamp, so a broker that
cannot look offsets up by time (librdkafka's mock cluster returns -1) costs a
longer read, never a wrong one.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from cerfleet.errors import CerfleetError
from cerfleet.fleet.batching import FETCHING_CONSUMER
from cerfleet.workers.backfill.schemas import ARCHIVE, dates_of

__all__ = ["RANGE_SCHEMA", "OffsetRange", "plan_ranges", "read_range", "read_ranges"]

RANGE_SCHEMA = pa.schema(
    [
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("start", pa.int64()),
        ("end", pa.int64()),
        ("since", pa.int64()),
        ("until", pa.int64()),
    ]
)
_BATCH = 10_000
_STALL_S = 60.0  # a task that gets nothing for this long fails (and Spark retries it)


class RangeError(CerfleetError):
    """The topic range cannot be planned (unknown topic, broker unreachable)."""


@dataclass(frozen=True)
class OffsetRange:
    """Offsets ``[start, end)`` of one partition; records outside ``[since, until)`` ms
    (either bound may be None) are dropped while reading."""

    topic: str
    partition: int
    start: int
    end: int
    since: int | None = None
    until: int | None = None

    def row(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "start": self.start,
            "end": self.end,
            "since": self.since,
            "until": self.until,
        }


def _reader(config: dict[str, str]) -> Consumer:
    return Consumer(
        {
            **FETCHING_CONSUMER,
            **config,
            # Assigned partitions only: the group is never joined and nothing is committed.
            "group.id": f"cerfleet-backfill-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": "false",
            "enable.partition.eof": "true",
            "auto.offset.reset": "earliest",
        }
    )


def _offset_at(consumer: Consumer, topic: str, partition: int, ms: int, timeout: float) -> int:
    """The first offset at or after ``ms``, or -1 when the broker does not say."""
    try:
        [tp] = consumer.offsets_for_times([TopicPartition(topic, partition, ms)], timeout)
    except KafkaException:
        return -1
    return tp.offset if tp.error is None else -1


def plan_ranges(
    config: dict[str, str],
    topics: Sequence[str],
    *,
    start_offset: int | None = None,
    end_offset: int | None = None,
    since: int | None = None,
    until: int | None = None,
    max_records: int = 1_000_000,
    timeout: float = 30.0,
) -> list[OffsetRange]:
    """Ranges covering ``topics`` between the offset bounds (applied to every partition,
    clipped to what the broker still holds) and the time bounds, each at most
    ``max_records`` offsets long."""
    consumer = _reader(config)
    try:
        out: list[OffsetRange] = []
        for topic in topics:
            meta = consumer.list_topics(topic, timeout=timeout).topics.get(topic)
            if meta is None or meta.error is not None or not meta.partitions:
                reason = "unknown topic" if meta is None else str(meta.error or "no partitions")
                raise RangeError(f"cannot read topic {topic!r}: {reason}")
            for partition in sorted(meta.partitions):
                low, high = consumer.get_watermark_offsets(
                    TopicPartition(topic, partition), timeout=timeout, cached=False
                )
                lo = low if start_offset is None else max(low, start_offset)
                hi = high if end_offset is None else min(high, end_offset)
                if since is not None:
                    at = _offset_at(consumer, topic, partition, since, timeout)
                    if at >= 0:
                        lo = max(lo, at)
                if until is not None:
                    at = _offset_at(consumer, topic, partition, until, timeout)
                    if at >= 0:
                        hi = min(hi, at)
                for a in range(lo, hi, max(1, max_records)):
                    out.append(
                        OffsetRange(topic, partition, a, min(hi, a + max_records), since, until)
                    )
        return out
    except KafkaException as exc:
        raise RangeError(f"cannot plan topic ranges: {exc}") from None
    finally:
        consumer.close()


class _Columns:
    def __init__(self) -> None:
        self.rows: dict[str, list[Any]] = {name: [] for name in ARCHIVE.names}

    def __len__(self) -> int:
        return len(self.rows["offset"])

    def add(self, msg: Any) -> None:
        ts_type, ts = msg.timestamp()
        rows = self.rows
        rows["topic"].append(msg.topic())
        rows["partition"].append(msg.partition())
        rows["offset"].append(msg.offset())
        rows["timestamp"].append(ts if ts_type else None)
        rows["key"].append(msg.key())
        rows["value"].append(msg.value())
        headers = msg.headers()
        rows["headers"].append(
            None if headers is None else [{"key": k, "value": v} for k, v in headers]
        )

    def batch(self) -> pa.RecordBatch:
        self.rows["date"] = dates_of(self.rows["timestamp"])
        out = pa.RecordBatch.from_pydict(self.rows, schema=ARCHIVE)
        self.__init__()  # type: ignore[misc]
        return out


def read_range(config: dict[str, str], rng: OffsetRange) -> Iterator[pa.RecordBatch]:
    """The records of ``rng`` in offset order, as archive batches."""
    if rng.start >= rng.end:
        return
    consumer = _reader(config)
    try:
        consumer.assign([TopicPartition(rng.topic, rng.partition, rng.start)])
        cols = _Columns()
        next_offset = rng.start
        last_progress = time.monotonic()
        while next_offset < rng.end:
            # Ask for no more than the range holds: consume() returns as soon as that many
            # arrive instead of waiting out its timeout for a full batch.
            msgs = consumer.consume(min(_BATCH, rng.end - next_offset), 1.0)
            if not msgs:
                if time.monotonic() - last_progress > _STALL_S:
                    raise RangeError(
                        f"{rng.topic}[{rng.partition}]: no record for {_STALL_S:.0f}s "
                        f"at offset {next_offset} (reading up to {rng.end})"
                    )
                continue
            last_progress = time.monotonic()
            for msg in msgs:
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        # The partition ends before ``end`` (a transaction marker or
                        # retention moved it): nothing more to read.
                        next_offset = rng.end
                        break
                    raise RangeError(f"{rng.topic}[{rng.partition}]: {err}")
                offset = msg.offset()
                assert offset is not None  # a record, not an event
                if offset >= rng.end:
                    next_offset = rng.end
                    break
                next_offset = offset + 1
                ts_type, ts = msg.timestamp()
                if ts_type and (
                    (rng.since is not None and ts < rng.since)
                    or (rng.until is not None and ts >= rng.until)
                ):
                    continue
                cols.add(msg)
            if len(cols) >= _BATCH:
                yield cols.batch()
        if len(cols):
            yield cols.batch()
    finally:
        consumer.close()


def read_ranges(
    config: dict[str, str], batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body: ranges (``RANGE_SCHEMA`` rows) in, archive batches out."""
    for batch in batches:
        for row in batch.to_pylist():
            yield from read_range(config, OffsetRange(**row))
