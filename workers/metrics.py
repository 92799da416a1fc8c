"""The worker's Prometheus metrics (one registry per worker, served by ``MetricsServer``)."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from cerfleet.fleet.observability import dead_letters_counter

# PartitionState.counts(): duplicates, suppressed outputs, truncated events per query,
# evaluation seconds per query, late events per query.
Counts = tuple[int, int, dict[str, int], dict[str, float], dict[str, int]]

# Event read → complex event handed to the producer: sub-millisecond when the
# engine keeps up, up to seconds while a backlog drains.
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10)


def observe_many(histogram: Any, amount: float, count: int) -> None:
    """``histogram.observe(amount)`` ``count`` times, as one update when the client keeps
    its buckets as this one does: a batch's complex events share one latency, and one
    ``observe`` per complex event cost 3-5% of the worker's time on a Kleene query with
    a third of a complex event per event (profiled)."""
    bounds = getattr(histogram, "_upper_bounds", None)
    buckets = getattr(histogram, "_buckets", None)
    total = getattr(histogram, "_sum", None)
    if (
        count < 4
        or not isinstance(bounds, list)
        or not isinstance(buckets, list)
        or len(bounds) != len(buckets)
        or not hasattr(total, "inc")
    ):
        for _ in range(count):
            histogram.observe(amount)
        return
    for bound, bucket in zip(bounds, buckets, strict=True):
        if amount <= bound:
            bucket.inc(count)
            break
    assert total is not None
    total.inc(amount * count)


class WorkerMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry = registry or CollectorRegistry()
        self.events_in = Counter(
            "cerfleet_worker_events_in",
            "Keyed records read and evaluated",
            ["keyed_topic"],
            registry=registry,
        )
        self.duplicates = Counter(
            "cerfleet_worker_duplicates",
            "Keyed records dropped as copies already processed (routed twice)",
            registry=registry,
        )
        self.complex_events = Counter(
            "cerfleet_complex_events_out",
            "Complex events published",
            ["query"],
            registry=registry,
        )
        self.suppressed = Counter(
            "cerfleet_worker_outputs_suppressed",
            "Complex events recomputed on replay and not published again",
            registry=registry,
        )
        self.truncated = Counter(
            "cerfleet_worker_truncated_events",
            "Events whose complex events for a query were cut at max_outputs_per_event",
            ["query"],
            registry=registry,
        )
        self.evaluation = Counter(
            "cerfleet_query_seconds",
            "Time spent evaluating each query (columnar batches, enumeration included)",
            ["query"],
            registry=registry,
        )
        self.late = Counter(
            "cerfleet_worker_late_events",
            "Events that took part in nothing because they arrived too late (behind their "
            "key's clock or the lateness horizon, or past the query's lateness bound)",
            ["query"],
            registry=registry,
        )
        self.dead_letters = dead_letters_counter(registry)
        self.latency = Histogram(
            "cerfleet_processing_latency_seconds",
            "Event read to complex event produced",
            ["query"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.active_keys = Gauge(
            "cerfleet_active_keys", "PARTITION BY keys with an evaluator", registry=registry
        )
        self.tecs_nodes = Gauge(
            "cerfleet_tecs_nodes",
            "tECS nodes reachable from the union-lists (counted at each checkpoint)",
            registry=registry,
        )
        self.assigned = Gauge(
            "cerfleet_assigned_partitions", "Keyed partitions owned", registry=registry
        )
        self.checkpoint_seconds = Histogram(
            "cerfleet_checkpoint_duration_seconds",
            "Time to write a checkpoint round (flush, snapshots, commit)",
            registry=registry,
        )
        self.checkpoint_bytes = Gauge(
            "cerfleet_checkpoint_size_bytes",
            "Size of the latest checkpoint per keyed partition",
            ["keyed_topic", "partition"],
            registry=registry,
        )
        self.lag = Gauge(
            "cerfleet_consumer_lag",
            "Keyed records not yet processed (high watermark minus next offset)",
            ["keyed_topic", "partition"],
            registry=registry,
        )
        self.blocked = Gauge(
            "cerfleet_worker_blocked_partitions",
            "Keyed partitions paused until a missing output topic of theirs can be created",
            registry=registry,
        )
        self.output_topic_errors = Counter(
            "cerfleet_worker_output_topic_errors",
            "Attempts to create a missing output topic that failed (retried)",
            ["topic"],
            registry=registry,
        )
        self.recoveries = Counter(
            "cerfleet_worker_recoveries",
            "Keyed partitions taken over (checkpoint restored or started fresh)",
            registry=registry,
        )

    def count_batch(self, before: Counts, after: Counts) -> None:
        """Add what one ``PartitionState.process`` call counted (``counts()`` around it)."""
        self.duplicates.inc(after[0] - before[0])
        self.suppressed.inc(after[1] - before[1])
        for query, cut in after[2].items():
            if cut > before[2].get(query, 0):
                self.truncated.labels(query).inc(cut - before[2].get(query, 0))
        for query, seconds in after[3].items():
            self.evaluation.labels(query).inc(max(0.0, seconds - before[3].get(query, 0.0)))
        for query, late in after[4].items():
            if late > before[4].get(query, 0):
                self.late.labels(query).inc(late - before[4].get(query, 0))
