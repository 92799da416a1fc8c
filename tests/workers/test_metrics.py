"""The worker's metrics: what several observations at once expose."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from cerfleet.workers.metrics import WorkerMetrics, observe_many


@pytest.mark.parametrize(
    ("amount", "count"), [(0.0003, 10), (0.003, 1), (0.07, 5_000), (3.0, 7), (99.0, 12)]
)
def test_observing_many_exposes_what_observing_each_does(amount: float, count: int) -> None:
    one_by_one = WorkerMetrics(CollectorRegistry())
    at_once = WorkerMetrics(CollectorRegistry())
    for metrics in (one_by_one, at_once):
        metrics.latency.labels("q").observe(0.02)  # an earlier batch's
    for _ in range(count):
        one_by_one.latency.labels("q").observe(amount)
    observe_many(at_once.latency.labels("q"), amount, count)

    def histogram(metrics: WorkerMetrics) -> list[str]:
        text = generate_latest(metrics.registry).decode()
        return [
            line
            for line in text.splitlines()
            if line.startswith("cerfleet_processing_latency_seconds_") and "_created" not in line
        ]

    def split(lines: list[str]) -> tuple[list[str], float]:
        # The sum is one multiplication instead of many additions: equal up to rounding.
        (total,) = [float(line.split()[-1]) for line in lines if "_sum{" in line]
        return [line for line in lines if "_sum{" not in line], total

    expected, expected_sum = split(histogram(one_by_one))
    got, got_sum = split(histogram(at_once))
    assert any(f'_count{{query="q"}} {count + 1}.0' in line for line in expected)
    assert got == expected
    assert got_sum == pytest.approx(expected_sum, rel=1e-9)
