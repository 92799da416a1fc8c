"""Fixtures shared by the test suite: the Kafka broker and unique topic names."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import pytest

from tests.kafka_broker import KafkaBroker, real_broker_configured, start_broker

REAL_KAFKA_SKIP_REASON = (
    "needs a real Kafka broker (set KAFKA_BOOTSTRAP_SERVERS, or CERFLEET_TESTCONTAINERS=1 "
    "with Docker); the mock cluster has no transaction semantics or compaction"
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    marked = [item for item in items if item.get_closest_marker("real_kafka") is not None]
    # Only ask about Docker when some test needs the answer.
    if not marked or real_broker_configured():
        return
    skip = pytest.mark.skip(reason=REAL_KAFKA_SKIP_REASON)
    for item in marked:
        item.add_marker(skip)


@pytest.fixture(scope="session")
def kafka() -> Iterator[KafkaBroker]:
    """The session's broker: real when configured, else the mock in a helper process."""
    broker = start_broker()
    try:
        yield broker
    finally:
        broker.close()


@pytest.fixture
def topic_name() -> Callable[[str], str]:
    """A factory of topic names no other test uses: ``topic_name("input") -> "input-1a2b3c4d"``."""

    def make(prefix: str) -> str:
        return f"{prefix}-{uuid.uuid4().hex[:8]}"

    return make
