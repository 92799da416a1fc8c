"""The coordinator's Prometheus metrics."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge

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
