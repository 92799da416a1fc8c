"""Fixtures shared by the test suite: the Kafka broker and unique topic names."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import pytest

from tests import batch_paths
from tests.kafka_broker import TANSU_GAPS, KafkaBroker, broker_kind, start_broker

REAL_KAFKA_SKIP_REASON = (
    "needs a broker with transactions (CERFLEET_TEST_BROKER=tansu, KAFKA_BOOTSTRAP_SERVERS, "
    "or CERFLEET_TESTCONTAINERS=1 with Docker); the mock cluster has no transaction "
    "semantics or compaction"
)


# Tests that start brokers, fleet processes or Spark (``--dist loadgroup`` runs them one
# after another on one pytest worker): two fleets or two Spark sessions at once on a
# 2-core machine would each slow down past their timeouts, and the session's Spark
# would start twice. The in-process tests share out over the workers.
SERVICES_GROUP = "services"
SERVICE_FIXTURES = frozenset({"kafka", "spark", "fleet"})
SERVICE_PATHS = ("tests/benchmarks/", "tests/workers/backfill/", "tests/workers/test_fleet")


def _uses_services(item: pytest.Item) -> bool:
    if SERVICE_FIXTURES.intersection(getattr(item, "fixturenames", ())):
        return True
    path = item.nodeid.split("::", 1)[0]
    return path.startswith(SERVICE_PATHS)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _uses_services(item):
            item.add_marker(pytest.mark.xdist_group(SERVICES_GROUP))
    real = [item for item in items if item.get_closest_marker("real_kafka") is not None]
    gaps = [item for item in items if item.get_closest_marker("tansu_gap") is not None]
    # Only ask about Docker when some test needs the answer.
    if not real and not gaps:
        return
    kind = broker_kind()
    if kind == "mock":
        for item in real:
            item.add_marker(pytest.mark.skip(reason=REAL_KAFKA_SKIP_REASON))
    elif kind == "tansu":
        for item in gaps:
            marker = item.get_closest_marker("tansu_gap")
            assert marker is not None
            gap = marker.args[0]
            item.add_marker(pytest.mark.skip(reason=f"tansu gap: {TANSU_GAPS[gap]}"))


@pytest.fixture(scope="session", autouse=True)
def vector_paths() -> Iterator[None]:
    """Every in-process batch takes the vector paths (``tests.batch_paths``)."""
    batch_paths.use(batch_paths.VECTOR)
    try:
        yield
    finally:
        batch_paths.use(batch_paths.SHIPPED)


@pytest.fixture(scope="session")
def kafka() -> Iterator[KafkaBroker]:
    """The session's broker: real when configured, else tansu or the mock (see
    ``tests.kafka_broker``)."""
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
