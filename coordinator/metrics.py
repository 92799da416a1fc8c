"""The coordinator's Prometheus metrics."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge

from cerfleet.coordinator.input_sync import SyncedInput
from cerfleet.fleet.observability import dead_letters_counter

__all__ = ["RouterMetrics"]


class RouterMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.events_in = Counter(
            "cerfleet_coordinator_events_in", "Input records read", ["topic"], registry=registry
        )
        self.routed = Counter(
            "cerfleet_coordinator_routed",
            "Records copied to a keyed topic",
            ["keyed_topic"],
            registry=registry,
        )
        self.unkeyed = Counter(
            "cerfleet_coordinator_unkeyed",
            "Records skipped for a group because a PARTITION BY attribute was missing",
            ["keyed_topic"],
            registry=registry,
        )
        self.dead_letters = dead_letters_counter(registry)
        self.queries = Gauge("cerfleet_queries", "Registered queries", registry=registry)
        self.groups = Gauge("cerfleet_groups", "Query groups (keyed topics)", registry=registry)
        self.merge_buffered = Gauge(
            "cerfleet_coordinator_merge_buffered",
            "Input records fetched and held by the time merge",
            registry=registry,
        )
        # Each pause drops what the client had prefetched of the partition: a count that
        # climbs says ``merge_buffer`` is small for how far the partitions drift apart.
        self.merge_pauses = Counter(
            "cerfleet_coordinator_merge_pauses",
            "Input partitions paused for buffering merge_buffer records",
            registry=registry,
        )
        self.merge_waiting = Gauge(
            "cerfleet_coordinator_merge_waiting",
            "Empty input partitions the time merge waits for",
            registry=registry,
        )

    def watch(self, synced: SyncedInput[Any], now: float) -> None:
        buffered, waiting = synced.watch(now)
        self.merge_buffered.set(buffered)
        self.merge_waiting.set(len(waiting))
