"""What a worker does with the queries it suspends (``cerfleet.workers.budget``): write
the checkpoint that records a new suspension, then report it on ``/healthz`` and in
the ``cerfleet_worker_suspended_queries`` gauge (read at each scrape from the
partitions' states, so it is never stale after a takeover, a removal or a new version).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterator, Mapping

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from cerfleet.workers.ownership import CheckpointTimeout
from cerfleet.workers.partition import PartitionState

log = logging.getLogger(__name__)

TP = tuple[str, int]


def record_suspensions(state: PartitionState, checkpoint: Callable[[], None]) -> None:
    """Make ``state``'s new suspensions durable (``checkpoint``: a checkpoint round, which
    flushes the outputs first), then report them. Called before any later record of the
    partition is evaluated; when the round runs out of time, after its next batch."""
    where = f"{state.keyed_topic}[{state.partition}]"
    try:
        checkpoint()
    except CheckpointTimeout as exc:
        log.warning("%s: a query suspension is not recorded yet (retried): %s", where, exc)
        return
    state.suspensions.mark_recorded(where)


def suspended_status(states: Mapping[TP, PartitionState]) -> str:
    """For ``/healthz``: each suspended query with its partition, offset and reason."""
    found = [
        f"{name} (version {s.version}) on {tp[0]}[{tp[1]}] from offset {s.offset}: {s.reason()}"
        for tp, state in sorted(list(states.items()))
        for name, s in sorted(state.suspended().items())
    ]
    if not found:
        return ""
    return "; suspended over the time budget: " + "; ".join(found)


class SuspendedQueries(Collector):
    """``cerfleet_worker_suspended_queries{query}``: the keyed partitions of this worker on
    which the query is suspended."""

    def __init__(self, states: Mapping[TP, PartitionState]) -> None:
        self.states = states

    def collect(self) -> Iterator[GaugeMetricFamily]:
        gauge = GaugeMetricFamily(
            "cerfleet_worker_suspended_queries",
            "Keyed partitions on which the query is suspended for going over the time budget",
            labels=["query"],
        )
        counts = Counter(n for state in list(self.states.values()) for n in state.suspended())
        for query, partitions in sorted(counts.items()):
            gauge.add_metric([query], partitions)
        yield gauge
