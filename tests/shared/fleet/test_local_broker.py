"""The local broker speaks the real Kafka protocol: topics, batched traffic, groups, faults.

Most tests use the session's ``kafka`` fixture, so they also pass against a real
broker; those about the helper process and broker faults host their own mock.
"""

from __future__ import annotations

import logging
import signal
import socket
import time
from collections.abc import Callable

import pytest
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    Message,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient

from cerfleet.fleet import local_broker
from cerfleet.fleet.local_broker import LocalBroker
from tests.kafka_broker import HelperProcess, KafkaBroker

# Classic-protocol group timing the mock needs: each rebalance lasts
# session.timeout.ms - 1 s, which is 44 s at the client default.
FAST_GROUP = {"session.timeout.ms": 2000, "heartbeat.interval.ms": 300}


def _partitions(config: dict[str, str], topic: str) -> list[int]:
    metadata = AdminClient(dict(config)).list_topics(timeout=10)
    described = metadata.topics.get(topic)
    return sorted(described.partitions) if described is not None else []


def _wait_for(condition: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def _accepts_connections(address: tuple[str, int]) -> bool:
    try:
        with socket.create_connection(address, timeout=2):
            return True
    except OSError:
        return False


def test_created_topic_shows_its_partition_count_in_metadata(
    kafka: KafkaBroker, topic_name: Callable[[str], str]
) -> None:
    topic = topic_name("seven")
    kafka.create_topic(topic, 7)
    assert _partitions(kafka.client_config(), topic) == list(range(7))


def test_batched_messages_round_trip_to_another_client(
    kafka: KafkaBroker, topic_name: Callable[[str], str]
) -> None:
    topic = topic_name("roundtrip")
    kafka.create_topic(topic, 3)
    failures: list[KafkaError] = []

    def on_delivery(error: KafkaError | None, _message: Message) -> None:
        if error is not None:
            failures.append(error)

    # linger.ms batches: the mock serves one stored batch per partition per fetch.
    producer = Producer({**kafka.client_config(), "linger.ms": 5})
    sent: list[tuple[bytes | None, bytes | None, object]] = []
    for i in range(1000):
        key, value = f"key-{i % 37}".encode(), f"value-{i}".encode()
        headers: list[tuple[str, str | bytes | None]] = [
            ("seq", str(i).encode()),
            ("origin", b"\x00binary\xff"),
        ]
        producer.produce(topic, key=key, value=value, headers=headers, on_delivery=on_delivery)
        sent.append((key, value, headers))
    assert producer.flush(15) == 0
    assert failures == []

    consumer = Consumer(
        {**kafka.client_config(), "group.id": topic_name("reader"), "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(3)])
    received: list[tuple[bytes | None, bytes | None, object]] = []
    deadline = time.monotonic() + 20
    try:
        while len(received) < len(sent) and time.monotonic() < deadline:
            for message in consumer.consume(1000, timeout=0.5):
                assert message.error() is None, message.error()
                received.append((message.key(), message.value(), message.headers()))
    finally:
        consumer.close()

    assert sorted(received, key=repr) == sorted(sent, key=repr)
    # One key always lands on one partition, so its messages keep their order.
    for one_key in {k for k, _, _ in sent}:
        seqs = [int(v.removeprefix(b"value-")) for k, v, _ in received if k == one_key and v]
        assert len(seqs) > 1 and seqs == sorted(seqs)


def test_two_consumers_of_one_group_split_six_partitions(
    kafka: KafkaBroker, topic_name: Callable[[str], str]
) -> None:
    topic = topic_name("grouped")
    kafka.create_topic(topic, 6)
    config = {
        **kafka.client_config(),
        **FAST_GROUP,
        "group.id": topic_name("group"),
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
    }
    consumers = [Consumer(config), Consumer(config)]
    received: list[list[int]] = [[], []]
    try:
        for consumer in consumers:
            consumer.subscribe([topic])

        def owned(i: int) -> set[int]:
            return {tp.partition for tp in consumers[i].assignment()}

        def split() -> bool:
            for i, consumer in enumerate(consumers):
                message = consumer.poll(0.05)
                if message is not None and message.error() is None:
                    partition = message.partition()
                    assert partition is not None
                    received[i].append(partition)
            mine, theirs = owned(0), owned(1)
            return bool(mine and theirs) and not mine & theirs and mine | theirs == set(range(6))

        assert _wait_for(split, timeout=20), (owned(0), owned(1))
        assert (len(owned(0)), len(owned(1))) == (3, 3)

        producer = Producer(kafka.client_config())
        for partition in range(6):
            producer.produce(topic, value=b"x", partition=partition)
        assert producer.flush(10) == 0
        assert _wait_for(lambda: split() and len(received[0]) + len(received[1]) >= 6, 15)
        assert set(received[0]) == owned(0)
        assert set(received[1]) == owned(1)
    finally:
        for consumer in consumers:
            consumer.close()


def test_helper_process_follows_its_line_protocol() -> None:
    helper = HelperProcess(["--brokers", "2", "--topic", "preset:5"])
    try:
        first = helper.read_line(30)
        assert first.startswith("bootstrap ")
        config = {"bootstrap.servers": first.removeprefix("bootstrap ")}
        metadata = AdminClient(dict(config)).list_topics(timeout=10)
        assert sorted(metadata.brokers) == [1, 2]
        assert _partitions(config, "preset") == list(range(5))

        assert helper.ask("topic made 3") == "ok"
        assert _partitions(config, "made") == list(range(3))
        assert helper.ask("topic made 9") == "ok"  # an existing topic is no error...
        assert _partitions(config, "made") == list(range(3))  # ...and stays as it was
        assert helper.ask("topic made").startswith("error usage")
        assert helper.ask("fly away").startswith("error usage")
        assert helper.ask("down 42").startswith("error broker 42")

        broker = metadata.brokers[1]
        address = (str(broker.host), broker.port)
        assert helper.ask("down 1") == "ok"
        assert _wait_for(lambda: not _accepts_connections(address), 5)
        assert helper.ask("up 1") == "ok"
        assert _wait_for(lambda: _accepts_connections(address), 5)

        assert helper.ask("quit") == "ok"
        assert helper.process.wait(10) == 0
    finally:
        helper.stop()


@pytest.mark.parametrize("how", ["eof", "sigterm"])
def test_helper_process_exits_with_its_parent(how: str) -> None:
    helper = HelperProcess([])
    try:
        assert helper.read_line(30).startswith("bootstrap ")
        if how == "eof":
            helper.close_stdin()
        else:
            helper.process.send_signal(signal.SIGTERM)
        assert helper.process.wait(10) == 0
    finally:
        helper.stop()


def test_local_broker_creates_topics_and_rejects_bad_ones() -> None:
    with LocalBroker(num_brokers=1) as broker:
        assert broker.kind == "mock"
        config = {"bootstrap.servers": broker.bootstrap_servers}
        broker.create_topic("twelve", 12)
        broker.create_topic("twelve", 2)
        assert _partitions(config, "twelve") == list(range(12))
        with pytest.raises(ValueError):
            broker.create_topic("none", 0)
    with pytest.raises(RuntimeError, match="closed"):
        broker.create_topic("late", 1)
    broker.close()  # closing twice is harmless


def test_a_downed_leader_holds_back_its_partition_until_it_is_up() -> None:
    with LocalBroker(num_brokers=3) as broker:
        config = {"bootstrap.servers": broker.bootstrap_servers}
        broker.create_topic("faulty", 3)
        metadata = AdminClient(dict(config)).list_topics(timeout=10)
        leaders = {p.id: p.leader for p in metadata.topics["faulty"].partitions.values()}
        delivered: list[int] = []
        producer = Producer(
            {**config, "linger.ms": 5, "reconnect.backoff.max.ms": 200, "retry.backoff.ms": 50}
        )

        def on_delivery(error: KafkaError | None, message: Message) -> None:
            partition = message.partition()
            if error is None and partition is not None:
                delivered.append(partition)

        broker.broker_down(leaders[0])
        for partition in range(3):
            producer.produce("faulty", value=b"v", partition=partition, on_delivery=on_delivery)
        producer.flush(2)
        held_back = [p for p in range(3) if p not in delivered]
        broker.broker_up(leaders[0])
        assert producer.flush(10) == 0
        # Only partitions led by the downed broker waited.
        assert held_back == [p for p in range(3) if leaders[p] == leaders[0]]
        assert sorted(delivered) == [0, 1, 2]


def test_without_the_mock_api_topics_are_auto_created_with_four_partitions(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(local_broker, "_load_mock_api", lambda: None)
    with LocalBroker(num_brokers=2) as broker:
        assert len(broker.bootstrap_servers.split(",")) == 2
        config = {"bootstrap.servers": broker.bootstrap_servers}
        broker.create_topic("four", 4)
        assert _partitions(config, "four") == list(range(4))
        with caplog.at_level(logging.WARNING, logger="cerfleet.fleet.local_broker"):
            broker.create_topic("seven", 7)
        assert _partitions(config, "seven") == list(range(4))
        assert "not the 7 asked for" in caplog.text
        with pytest.raises(NotImplementedError):
            broker.broker_down(1)
