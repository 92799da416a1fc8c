"""Reporting suspended queries: only once the checkpoint recording them is written, on
``/healthz`` and in ``cerfleet_worker_suspended_queries``."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest

from cerfleet.workers.ownership import CheckpointTimeout
from cerfleet.workers.partition import PartitionState
from cerfleet.workers.suspended import SuspendedQueries, record_suspensions, suspended_status
from tests.workers.test_budget import Queries, records, run


def _suspending() -> PartitionState:
    state: PartitionState = Queries().state()
    run(state, [records("ABABABAB")])
    assert state.suspensions.unrecorded()
    return state


def test_a_suspension_is_reported_once_its_checkpoint_is_written() -> None:
    state = _suspending()
    states = {(state.keyed_topic, state.partition): state}
    registry = CollectorRegistry()
    registry.register(SuspendedQueries(states))

    def times_out() -> None:
        raise CheckpointTimeout("3 records still unacknowledged")

    record_suspensions(state, times_out)
    assert state.suspensions.unrecorded()  # tried again after the next batch
    assert suspended_status(states) == ""
    assert "cerfleet_worker_suspended_queries{" not in generate_latest(registry).decode()

    rounds: list[int] = []
    record_suspensions(state, lambda: rounds.append(1))
    assert rounds == [1] and not state.suspensions.unrecorded()
    status = suspended_status(states)
    assert status.startswith("; suspended over the time budget: slow (version 1) on ")
    assert f"{state.keyed_topic}[0] from offset 8: evaluating a batch of 8 records took" in status
    text = generate_latest(registry).decode()
    assert 'cerfleet_worker_suspended_queries{query="slow"} 1.0' in text
    assert 'query="fast"' not in text

    states.clear()  # revoked: nothing of it is reported any more
    assert suspended_status(states) == ""
    assert "cerfleet_worker_suspended_queries{" not in generate_latest(registry).decode()
