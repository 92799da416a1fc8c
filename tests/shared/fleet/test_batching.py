"""``drain``: a batch is what has arrived, without waiting out the timeout for more."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

from confluent_kafka import Consumer, Producer

from cerfleet.fleet.batching import BATCHED_PRODUCER, drain
from tests.kafka_broker import KafkaBroker


def test_drain_returns_what_has_arrived_at_once_and_waits_only_for_the_first(
    kafka: KafkaBroker, topic_name: Callable[[str], str]
) -> None:
    topic = topic_name("drain")
    kafka.create_topic(topic, 1)
    producer = Producer({**kafka.client_config(), **BATCHED_PRODUCER})
    for i in range(50):
        producer.produce(topic, value=b"%d" % i)
    assert producer.flush(30) == 0
    consumer = Consumer(
        {
            **kafka.client_config(),
            "group.id": f"drain-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": "false",
            "fetch.wait.max.ms": "10",
        }
    )
    try:
        consumer.subscribe([topic])
        got: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(got) < 50 and time.monotonic() < deadline:  # joined, and read all
            got += [m.value() for m in drain(consumer, 1000, 1.0) if m.error() is None]  # type: ignore[misc]
        assert got == [b"%d" % i for i in range(50)]
        # Records arriving now, far fewer than asked for, with a long first wait:
        # ``consume(1000, 5)`` would hold the call for the whole 5 s.
        for i in range(50, 70):
            producer.produce(topic, value=b"%d" % i)
        assert producer.flush(30) == 0
        more: list[bytes] = []
        while len(more) < 20 and time.monotonic() < deadline:
            started = time.monotonic()
            batch = drain(consumer, 1000, 5.0)
            assert batch and time.monotonic() - started < 2.5
            more += [m.value() for m in batch if m.error() is None]  # type: ignore[misc]
        assert more == [b"%d" % i for i in range(50, 70)]
        # Nothing more: one wait of at most first_wait, then an empty batch.
        started = time.monotonic()
        assert drain(consumer, 1000, 0.3) == []
        assert time.monotonic() - started < 2.5
    finally:
        consumer.close()
