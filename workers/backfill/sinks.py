"""Kafka output of the backfill: complex events (the fleet's output records) and
dead letters, produced from inside Spark tasks.

Delivery is at least once: a task that fails after some deliveries is run again
by Spark and produces its rows again. Each record carries a
``cerfleet-backfill`` header naming the run, so consumers can tell backfilled
records from live ones.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from confluent_kafka import KafkaError, Producer

from cerfleet.errors import CerfleetError
from cerfleet.fleet.keyed import ERROR_HEADER, QUERY_HEADER, SRC_HEADER, encode_src

__all__ = ["BACKFILL_HEADER", "PRODUCED", "produce_batches"]

BACKFILL_HEADER = "cerfleet-backfill"
PRODUCED = pa.schema([("produced", pa.int64())])


class DeliveryError(CerfleetError):
    pass


def produce_batches(
    config: dict[str, str], topic: str, run: str, batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body: rows with ``value`` and ``key`` (matches) or ``value``,
    ``error``, ``query`` and coordinates (dead letters) in, one count row out."""
    producer = Producer({**config, "enable.idempotence": "true", "linger.ms": "50"})
    failures: list[str] = []

    def delivered(err: KafkaError | None, _msg: object) -> None:
        if err is not None:
            failures.append(str(err))

    produced = 0
    for batch in batches:
        cols = batch.to_pydict()
        n = batch.num_rows
        keys = cols.get("key", [None] * n)
        errors = cols.get("error")
        for i in range(n):
            headers: list[tuple[str, str | bytes | None]] = [(BACKFILL_HEADER, run.encode())]
            if errors is not None:
                headers += [
                    (ERROR_HEADER, (errors[i] or "").encode()),
                    (QUERY_HEADER, (cols["query"][i] or "").encode()),
                    (
                        SRC_HEADER,
                        encode_src(cols["topic"][i], cols["partition"][i], cols["offset"][i]),
                    ),
                ]
            key = keys[i]
            while True:
                try:
                    producer.produce(
                        topic,
                        value=cols["value"][i],
                        key=None if key is None else str(key).encode(),
                        headers=headers,
                        on_delivery=delivered,
                    )
                    break
                except BufferError:
                    producer.poll(0.1)  # the local queue is full: let deliveries drain it
            produced += 1
        producer.poll(0)
    if producer.flush(120) != 0 or failures:
        raise DeliveryError(
            f"{len(failures)} records to {topic!r} not delivered"
            + (f": {failures[0]}" if failures else " within 120 s")
        )
    yield pa.RecordBatch.from_pydict({"produced": [produced]}, schema=PRODUCED)
