"""Kafka output of the backfill: complex events (the fleet's output records) and
dead letters, produced from inside Spark tasks.

Delivery is exactly once for consumers that read committed records (Kafka's
``isolation.level=read_committed``, confluent-kafka's default): each task
publishes its rows in one transaction whose transactional id is deterministic
(run, output topic, Spark partition), committed only once every row is
delivered. A task that fails is run again by Spark under the same id, and its
first ``init_transactions`` fences the failed attempt and aborts whatever that
attempt left open, so its records are never read. What remains: an attempt that
dies after its commit, before Spark hears of its success, is run again and
publishes again (a window of one commit round trip).

Each record carries a ``cerfleet-backfill`` header naming the run, so consumers
can tell backfilled records from live ones.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import pyarrow as pa
from confluent_kafka import KafkaError, KafkaException, Producer

from cerfleet.errors import CerfleetError
from cerfleet.fleet.batching import produce_waiting
from cerfleet.fleet.keyed import ERROR_HEADER, QUERY_HEADER, SRC_HEADER, encode_src

__all__ = [
    "BACKFILL_HEADER",
    "FAIL_BEFORE_COMMIT",
    "PRODUCED",
    "produce_batches",
    "transactional_id",
]

BACKFILL_HEADER = "cerfleet-backfill"
# Fault injection for the exactly-once tests: when this variable is set in the tasks'
# environment, each task's first attempt raises after producing every row, before its
# commit (Spark then retries it when allowed, e.g. ``--master local[2,2]``).
FAIL_BEFORE_COMMIT = "CERFLEET_BACKFILL_FAIL_BEFORE_COMMIT"
# Longer than the librdkafka default (60 s): one transaction holds a task's whole
# output. Brokers cap it at transaction.max.timeout.ms (15 min by default).
TRANSACTION_TIMEOUT_MS = "900000"
PRODUCED = pa.schema([("produced", pa.int64())])


class DeliveryError(CerfleetError):
    pass


def transactional_id(run: str, topic: str, partition: int) -> str:
    """The same for every attempt of one task of one run, unique across runs."""
    return f"cerfleet-backfill.{run}.{topic}.{partition}"


class InjectedFailure(CerfleetError):
    pass


def produce_batches(
    config: dict[str, str], topic: str, run: str, batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body: rows with ``value`` and ``key`` (matches) or ``value``,
    ``error``, ``query`` and coordinates (dead letters) in, one count row out."""
    from pyspark import TaskContext

    task = TaskContext.get()
    partition = 0 if task is None else task.partitionId()
    attempt = 0 if task is None else task.attemptNumber()
    producer = Producer(
        {
            "transaction.timeout.ms": TRANSACTION_TIMEOUT_MS,
            **config,
            "transactional.id": transactional_id(run, topic, partition),
            "linger.ms": "50",
        }
    )
    producer.init_transactions(60)
    producer.begin_transaction()
    try:
        produced = _produce_all(producer, topic, run, batches)
        if os.environ.get(FAIL_BEFORE_COMMIT) and attempt == 0:
            raise InjectedFailure(f"{FAIL_BEFORE_COMMIT}: task {partition} fails before commit")
        producer.commit_transaction(120)
    except BaseException:
        # Failing to abort is no harm: the next attempt's init_transactions aborts it.
        with contextlib.suppress(KafkaException):
            producer.abort_transaction(30)
        raise
    yield pa.RecordBatch.from_pydict({"produced": [produced]}, schema=PRODUCED)


def _produce_all(
    producer: Producer, topic: str, run: str, batches: Iterator[pa.RecordBatch]
) -> int:
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
            key_bytes = None if key is None else str(key).encode()
            produce_waiting(producer, topic, cols["value"][i], key_bytes, None, delivered, headers)
            produced += 1
        producer.poll(0)
    if producer.flush(120) != 0 or failures:
        raise DeliveryError(
            f"{len(failures)} records to {topic!r} not delivered"
            + (f": {failures[0]}" if failures else " within 120 s")
        )
    return produced
