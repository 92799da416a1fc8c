"""How the fleet's services read and write batches with low latency.

``Consumer.consume(n, timeout)`` returns only when ``n`` records have arrived or the
timeout is over, so a service asking for large batches under a light load waits the
whole timeout on every call: that wait, not the work, was most of the fleet's
end-to-end latency. ``drain`` waits for the first record only, then takes whatever
else is already fetched, so a batch is what arrived while the previous one was being
processed: small and immediate under a light load, large under a heavy one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from confluent_kafka import Consumer, KafkaError, Message, Producer

__all__ = [
    "ANY_PARTITION",
    "BATCHED_PRODUCER",
    "FETCHING_CONSUMER",
    "LINGER_MS",
    "NO_TIMESTAMP",
    "by_partition",
    "drain",
    "produce_waiting",
]

# Producers wait this long for more records before sending a batch: librdkafka's and
# Apache Kafka's own default. Shorter lingers send smaller batches, one per partition per
# request, and a broker pays per batch: on tansu, a producer writing 17k records/s round
# robin over 8 partitions saw them read at p99 195 ms with 1 ms, 22 ms with 5 ms; the
# fleet's PARTITION BY query at 20k events/s (8 keyed partitions) had its p99 at 253.8 /
# 258.7 ms with 1 ms, 120.4 / 138.8 with 5 and 126.1 / 80.1 with 10 (alternating runs).
LINGER_MS = "5"
# The services' producer settings (the coordinator adds its partitioner).
BATCHED_PRODUCER = {
    "enable.idempotence": "true",
    "linger.ms": LINGER_MS,
    "batch.num.messages": "10000",
    "compression.type": "lz4",
}

# Every consumer of the services' (``FleetSettings.consumer_config``). The client stops
# fetching a partition once it holds ``queued.min.messages`` (100,000) of it unread, and
# then looks again only after ``fetch.queue.backoff.ms``, 1 s by default: a service that
# reads 100,000 records in a third of that sat idle the rest (reading a 300,000-record
# partition from tansu: 253,195 records/s with the default, 2,879,967 with 10 ms).
FETCHING_CONSUMER = {"fetch.queue.backoff.ms": "10"}

# The hot paths call ``Producer.produce`` with positional arguments only, in the order the
# pinned client reads them: topic, value, key, partition, on_delivery, callback (an alias
# of on_delivery: None), timestamp, headers. Keywords cost CPython a dict per call and the
# client a lookup per name: 1.36 -> 0.90 us per record with two headers and a timestamp
# (medians of 5 rounds of 200,000). ``tests/shared/fleet/test_batching.py`` holds the
# order to what a broker receives, so a client that reads them otherwise fails there.
ANY_PARTITION = -1  # the partitioner chooses (by key)
NO_TIMESTAMP = 0  # the client stamps the record (as without the argument)


def drain(consumer: Consumer, max_records: int, first_wait: float) -> list[Message]:
    """Up to ``max_records`` records: waits up to ``first_wait`` seconds for the first,
    then takes only what is already there (no second wait)."""
    first = consumer.consume(1, first_wait)
    if not first or max_records <= 1:
        return first
    return first + consumer.consume(max_records - 1, 0)


def by_partition(msgs: list[Message]) -> dict[tuple[str, int], list[Message]] | None:
    """The records of a consumed batch per partition, in order; None when the batch holds
    errors or events (``Message.error()``), which the caller then reads one by one.

    The client queues what it fetched partition by partition, so a batch is a few runs of
    one partition each: the runs are found from the partition numbers, read in C, rather
    than a record at a time (a tuple and a dictionary look-up each, about a fifth of a
    microsecond)."""
    if not msgs or any(map(Message.error, msgs)):
        return None
    topics = set(map(Message.topic, msgs))
    numbers = cast("list[int]", list(map(Message.partition, msgs)))
    one_topic = len(topics) == 1
    topic = cast("str", next(iter(topics)))
    if one_topic and numbers[0] == numbers[-1] and len(set(numbers)) == 1:
        return {(topic, numbers[0]): msgs}
    # Runs end where the partition changes (with several topics, the topic or the number).
    where: list[Any] = (
        numbers if one_topic else list(zip(map(Message.topic, msgs), numbers, strict=True))
    )
    runs: dict[tuple[str, int], list[Message]] = {}
    start = 0
    cuts = [i for i in range(1, len(where)) if where[i] != where[i - 1]]
    for stop in [*cuts, len(where)]:
        tp = (topic, where[start]) if one_topic else where[start]
        run = runs.get(tp)
        if run is None:
            runs[tp] = msgs[start:stop]
        else:
            run += msgs[start:stop]
        start = stop
    return runs


def produce_waiting(
    producer: Producer,
    topic: str,
    value: bytes | None,
    key: bytes | None,
    partition: int | None,
    on_delivery: Callable[[KafkaError | None, Message], None],
    headers: list[tuple[str, str | bytes | None]] | None,
    timestamp: int = NO_TIMESTAMP,
) -> None:
    """``producer.produce``, waiting while the client's local queue is full (serving
    delivery reports meanwhile) rather than failing: the slow path of the hot loops, and
    the way of the services' other writers."""
    where = ANY_PARTITION if partition is None else partition
    while True:
        try:
            # Positional only: one call per record.
            producer.produce(topic, value, key, where, on_delivery, None, timestamp, headers)
            return
        except BufferError:
            producer.poll(0.05)
