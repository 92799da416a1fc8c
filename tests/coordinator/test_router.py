"""The router's producer of keyed copies reports failed copies only: what it relies on
(a failed copy stops routing before a commit; ``flush`` waits for every copy)."""

from __future__ import annotations

from collections.abc import Callable

from confluent_kafka import Consumer, KafkaError, Producer

from cerfleet.coordinator.router import Router, keyed_producer_config
from cerfleet.fleet.settings import CoordinatorSettings
from tests.kafka_broker import KafkaBroker


def _send(servers: str, topic: str, n: int, **extra: str) -> tuple[int, list[KafkaError]]:
    errors: list[KafkaError] = []

    def delivered(err: KafkaError | None, msg: object) -> None:
        errors.append(err)  # type: ignore[arg-type]  # None would fail the test below

    config = keyed_producer_config(CoordinatorSettings(bootstrap_servers=servers))
    producer = Producer({**config, **extra})
    for i in range(n):
        producer.produce(topic, b"%d" % i, b"k", on_delivery=delivered)
    left = producer.flush(30)
    return left, errors


def test_delivered_copies_make_no_report(
    kafka: KafkaBroker, topic_name: Callable[[str], str]
) -> None:
    topic = topic_name("keyed")
    kafka.create_topic(topic, 2)
    left, reports = _send(kafka.bootstrap_servers, topic, 200)
    assert left == 0 and reports == []
    consumer = Consumer(
        {**kafka.client_config(), "group.id": topic, "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([topic])
    got: list[bytes] = []
    try:
        for _ in range(60):
            got += [m.value() for m in consumer.consume(500, 0.5) if m.error() is None]
            if len(got) >= 200:
                break
    finally:
        consumer.close()
    assert sorted(got) == sorted(b"%d" % i for i in range(200))


def test_a_failed_copy_is_reported() -> None:
    # Nothing listens on the discard port: every copy times out, and each says so.
    left, reports = _send("127.0.0.1:9", "keyed", 5, **{"message.timeout.ms": "300"})
    assert left == 0
    assert len(reports) == 5 and all(err is not None for err in reports)
    assert {err.code() for err in reports} == {KafkaError._MSG_TIMED_OUT}


def test_the_merge_pauses_a_partition_at_its_buffer_never_below_two_batches() -> None:
    # Pausing drops the client's prefetch: the buffer, not the batch, decides, but a
    # drain must fit twice over or every batch would pause its partition.
    assert Router(CoordinatorSettings())._input.cap == 100_000
    assert Router(CoordinatorSettings(merge_buffer=30_000))._input.cap == 30_000
    assert Router(CoordinatorSettings(merge_buffer=50, batch_size=20))._input.cap == 50
    assert Router(CoordinatorSettings(merge_buffer=50, batch_size=100))._input.cap == 200
