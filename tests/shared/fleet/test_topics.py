"""ensure_topics and partition_count against the session's broker (mock or real)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import pytest

from cerfleet.fleet import local_broker
from cerfleet.fleet.local_broker import LocalBroker
from cerfleet.fleet.topics import TopicError, ensure_topics, partition_count
from tests.kafka_broker import KafkaBroker

# On the mock, CreateTopics fails at once and the auto-creation fallback is one
# metadata request, so anything near the timeout means a stall crept back in.
FAST = 5.0


def test_existing_topic_is_left_alone(
    kafka: KafkaBroker, topic_name: Callable[[str], str], caplog: pytest.LogCaptureFixture
) -> None:
    topic = topic_name("existing")
    kafka.create_topic(topic, 5)
    with caplog.at_level(logging.WARNING, logger="cerfleet.fleet.topics"):
        ensure_topics(kafka.client_config(), {topic: 5})
    assert caplog.records == []
    with caplog.at_level(logging.WARNING, logger="cerfleet.fleet.topics"):
        ensure_topics(kafka.client_config(), {topic: 3})
        ensure_topics(kafka.client_config(), {topic: 3})
    assert caplog.text.count("5 partitions, 3 wanted") == 1  # once, not on every call
    assert partition_count(kafka.client_config(), topic) == 5


def test_missing_topic_ends_up_visible(
    kafka: KafkaBroker, topic_name: Callable[[str], str]
) -> None:
    # 4 is also what the mock's auto-creation gives, so this holds on either broker.
    topic = topic_name("missing")
    started = time.monotonic()
    ensure_topics(kafka.client_config(), {topic: 4})
    assert time.monotonic() - started < FAST
    assert partition_count(kafka.client_config(), topic) == 4


def test_creation_fallback_warns_that_the_default_partition_count_applies(
    kafka: KafkaBroker, topic_name: Callable[[str], str], caplog: pytest.LogCaptureFixture
) -> None:
    topics = {topic_name("six"): 6, topic_name("two"): 2}
    with caplog.at_level(logging.WARNING, logger="cerfleet.fleet.topics"):
        ensure_topics(kafka.client_config(), topics)
    counts = {name: partition_count(kafka.client_config(), name) for name in topics}
    if kafka.kind == "mock":
        assert counts == dict.fromkeys(topics, 4)
        assert caplog.text.count("default partition count applies") == 2
    else:
        assert counts == topics


def test_cluster_without_a_controller_skips_create_topics(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The test.mock.num.brokers cluster reports controller 0, which is no broker:
    # CreateTopics would wait out its timeout there.
    monkeypatch.setattr(local_broker, "_load_mock_api", lambda: None)
    with LocalBroker(num_brokers=1) as broker:
        config = {"bootstrap.servers": broker.bootstrap_servers}
        started = time.monotonic()
        ensure_topics(config, {"made-without-controller": 4}, timeout=10)
        assert time.monotonic() - started < FAST
        assert partition_count(config, "made-without-controller") == 4


def test_partition_count_of_an_unknown_topic_raises_without_creating_it(
    kafka: KafkaBroker, topic_name: Callable[[str], str]
) -> None:
    topic = topic_name("unknown")
    with pytest.raises(TopicError, match="does not exist"):
        partition_count(kafka.client_config(), topic)
    with pytest.raises(TopicError):  # asking did not auto-create it
        partition_count(kafka.client_config(), topic)


def test_unreachable_broker_raises_topic_error() -> None:
    started = time.monotonic()
    with pytest.raises(TopicError, match="cannot read topic metadata"):
        ensure_topics({"bootstrap.servers": "127.0.0.1:1"}, {"anything": 1}, timeout=1)
    assert time.monotonic() - started < FAST


def test_invalid_partition_counts_are_rejected(kafka: KafkaBroker) -> None:
    with pytest.raises(ValueError):
        ensure_topics(kafka.client_config(), {"zero": 0})


def test_a_partition_count_that_is_only_a_default_is_not_reported(
    kafka: KafkaBroker, topic_name: Callable[[str], str], caplog: pytest.LogCaptureFixture
) -> None:
    topic = topic_name("defaulted")
    kafka.create_topic(topic, 2)
    with caplog.at_level(logging.WARNING, logger="cerfleet.fleet.topics"):
        ensure_topics(kafka.client_config(), {topic: 8}, report_mismatch=False)
    assert caplog.records == []


def test_configs_lost_to_auto_creation_are_reported(
    kafka: KafkaBroker, topic_name: Callable[[str], str], caplog: pytest.LogCaptureFixture
) -> None:
    topic = topic_name("configured")
    config = {"retention.ms": "-1", "cleanup.policy": "delete"}
    with caplog.at_level(logging.WARNING, logger="cerfleet.fleet.topics"):
        ensure_topics(kafka.client_config(), {topic: 1}, configs={topic: config})
    lost = "default configs, not cleanup.policy=delete, retention.ms=-1"
    assert (lost in caplog.text) == (kafka.kind == "mock")
