"""Reading partitions to their end as the log shows it: checkpoint and output tails.

A takeover reads, per keyed partition, the tail of its checkpoint partition and of each
output partition it writes to. Each read waits for the broker's fetch to reach the
partition's end, a round trip or more; a worker assigned many partitions at once
(start, or a rebalance after a crash) reads them all in one pass, with every partition
assigned to the scanner together, instead of one partition after another.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

from cerfleet.fleet.keyed import coordinates

__all__ = ["Scan", "scan", "scan_many"]

log = logging.getLogger(__name__)

Where = tuple[str, int]  # topic, partition


@dataclass
class Scan:
    """Records read from a partition, and the offset the read stopped at: the partition's
    end (as the broker's fetch answered it) when the read went to the end."""

    records: list[Any]
    end: int


def scan(
    scanner: Consumer, tp: TopicPartition, start: int, end: int | None, timeout: float
) -> Scan:
    """Every data record of ``tp`` with an offset in [start, end), or from ``start`` to the
    partition's end when ``end`` is None (see ``scan_many``)."""
    where = (tp.topic, tp.partition)
    return scan_many(scanner, {where: (start, end)}, timeout)[where]


def scan_many(
    scanner: Consumer, ranges: Mapping[Where, tuple[int, int | None]], timeout: float
) -> dict[Where, Scan]:
    """For each partition, every data record with an offset in [start, end), or from
    ``start`` to the partition's end when ``end`` is None: that read stops at partition
    EOF (the scanner must have ``enable.partition.eof``), whatever ListOffsets would have
    said. Control records and retention gaps make offsets skip, so a read also stops at
    ``end``. The partitions are read together."""
    done: dict[Where, Scan] = {}
    reading: dict[Where, tuple[int, int | None]] = {}
    for asked, (start, end) in ranges.items():
        if end is not None and start >= end:
            done[asked] = Scan([], start)
        else:
            reading[asked] = (start, end)
    if not reading:
        return done
    found: dict[Where, list[Any]] = {where: [] for where in reading}
    scanner.assign(
        [
            TopicPartition(topic, partition, start if start > 0 else OFFSET_BEGINNING)
            for (topic, partition), (start, _) in reading.items()
        ]
    )
    deadline = time.monotonic() + timeout
    try:
        while reading and time.monotonic() < deadline:
            # consume() waits out its timeout unless the batch fills: short waits let the
            # read end as soon as partition EOF arrives.
            for msg in scanner.consume(10_000, 0.02):
                where: Where = (msg.topic() or "", msg.partition() or 0)
                err = msg.error()
                if err is not None and err.code() != KafkaError._PARTITION_EOF:
                    log.warning("scan %s[%d]: %s", where[0], where[1], err)
                    continue
                bounds = reading.get(where)
                if bounds is None:
                    continue  # a partition already read to where it was asked
                start, end = bounds
                if err is not None:  # partition EOF
                    _finish(where, reading, done, found, max(start, msg.offset() or 0))
                    continue
                offset = coordinates(msg)[2]
                if end is not None and offset >= end:
                    _finish(where, reading, done, found, end)
                    continue
                found[where].append(msg)
                if end is not None and offset >= end - 1:
                    _finish(where, reading, done, found, end)
        if reading:
            (topic, partition), (start, end) = next(iter(reading.items()))
            upto = "its end" if end is None else str(end)
            more = f" (and {len(reading) - 1} more partitions)" if len(reading) > 1 else ""
            what = f"reading {topic}[{partition}] {start}..{upto}{more}"
            raise TimeoutError(f"{what}: over {timeout}s")
        return done
    finally:
        scanner.unassign()


def _finish(
    where: Where,
    reading: dict[Where, tuple[int, int | None]],
    done: dict[Where, Scan],
    found: dict[Where, list[Any]],
    end: int,
) -> None:
    # Not paused: a pause could outlive the unassign into a later read of the partition.
    # What is fetched of it meanwhile is skipped.
    del reading[where]
    done[where] = Scan(found.pop(where), end)
