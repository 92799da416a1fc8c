"""Reading the fleet's processes while they run: their Prometheus samples, sampled until
a goal, the windows and quantiles measured from them."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

from prometheus_client.parser import text_string_to_metric_families

T = TypeVar("T")

SAMPLE_S = 0.2  # metrics sampling period
# Near the edges of a throughput phase (before its first record, past 90% of them): each
# read costs the process a scrape, so only there.
FINE_S = 0.05


ROUTED = "cerfleet_coordinator_routed_total"
EVENTS_IN = "cerfleet_worker_events_in_total"
COMPLEX_OUT = "cerfleet_complex_events_out_total"
LATE = "cerfleet_worker_late_events_total"
CPU = "process_cpu_seconds_total"  # every thread of the process: the Kafka client too
ASSIGNED = "cerfleet_assigned_partitions"
LATENCY_HISTOGRAM = "cerfleet_processing_latency_seconds"


class BenchmarkError(RuntimeError):
    """A run could not be measured: a process failed, stalled, or the broker dropped data."""


class Stalled(BenchmarkError):
    """The counters stopped moving before the goal was reached."""

    def __init__(self, message: str, samples: list[tuple[float, tuple[float, ...]]]) -> None:
        super().__init__(message)
        self.samples = samples


def metric_samples(text: str) -> list[tuple[str, dict[str, str], float]]:
    return [
        (s.name, s.labels, s.value)
        for family in text_string_to_metric_families(text)
        for s in family.samples
    ]


def around(
    readings: Sequence[tuple[float, T]], start: float, end: float
) -> tuple[tuple[float, T], tuple[float, T]] | None:
    """The last reading at or before ``start`` and the first at or after ``end`` (a
    window widened to the readings around it); None without one on either side."""
    before = [r for r in readings if r[0] <= start]
    after = [r for r in readings if r[0] >= end]
    return (before[-1], after[0]) if before and after else None


def sum_samples(samples: Sequence[tuple[str, dict[str, str], float]], name: str) -> float:
    return sum(value for sample, _, value in samples if sample == name)


Sample = tuple[float, tuple[float, ...]]


def sample_until(
    read: Callable[[], tuple[float, ...]],
    done: Callable[[tuple[float, ...]], bool],
    *,
    what: str,
    stall: float,
    check: Callable[[], None],
    period: float = SAMPLE_S,
    fine: Callable[[tuple[float, ...]], bool] | None = None,
) -> list[Sample]:
    """Read some counters every ``period`` s until ``done``; raise when they stop moving
    for ``stall`` s first. Each sample is stamped with the middle of its read. While
    ``fine`` holds of the last values (near an edge of the window measured), every
    ``FINE_S`` s instead: a phase of 2 s read every 0.2 s moved by a tenth with one sample."""
    samples: list[Sample] = []
    moved = time.monotonic()
    while True:
        before = time.monotonic()
        values = read()
        now = time.monotonic()
        stamp = (before + now) / 2
        if samples and values != samples[-1][1]:
            moved = now
        samples.append((stamp, values))
        if done(values):
            return samples
        check()
        if now - moved > stall:
            raise Stalled(f"{what}: no progress for {stall:g} s (at {values})", samples)
        wait = FINE_S if fine is not None and fine(values) else period
        time.sleep(max(0.0, wait - (time.monotonic() - before)))


def _changes(samples: Sequence[Sample]) -> list[int]:
    """The indexes of the samples whose values differ from the sample before."""
    return [i for i in range(1, len(samples)) if samples[i][1] != samples[i - 1][1]]


def active_window(samples: Sequence[Sample]) -> tuple[float, float]:
    """When the counters first left their initial values and when they last changed.

    Each edge is the midpoint between the samples around it, so the error is at most half
    a period at each end. When everything happened between two samples, the window is
    that whole interval (an upper bound on the time taken); so it starts when most of it
    was counted by the first change (``_front_loaded``)."""
    first, last = _first_and_last(samples)
    if first == last:
        return samples[first - 1][0], samples[first][0]
    end = (samples[last - 1][0] + samples[last][0]) / 2
    if _front_loaded(samples, first, last):
        return samples[first - 1][0], end
    return (samples[first - 1][0] + samples[first][0]) / 2, end


def counted_at_start(samples: Sequence[Sample]) -> tuple[float, ...]:
    """What the counters had counted, above their initial values, when ``active_window``
    starts: a process counts a batch once it is done, so the first batch's records are
    counted at the window's start, their work before it. A rate is the rest over the
    window (with 10,000-record batches of 200k events, the first batch in the rate's
    numerator but not its window made it 5% too high). Nothing when the window holds all
    of it: everything, or most of it, counted by the first change."""
    initial = samples[0][1]
    first, last = _first_and_last(samples)
    if first == last or _front_loaded(samples, first, last):
        return tuple(0.0 for _ in initial)
    return tuple(v - v0 for v, v0 in zip(samples[first][1], initial, strict=True))


def _first_and_last(samples: Sequence[Sample]) -> tuple[int, int]:
    """The indexes of the first sample off the initial values and of the last change."""
    initial = samples[0][1]
    first = next((i for i, (_, v) in enumerate(samples) if v != initial), None)
    if first is None:
        raise ValueError("the counters never moved")
    return first, _changes(samples)[-1]


def _front_loaded(samples: Sequence[Sample], first: int, last: int) -> bool:
    """Whether the first change counted more than half of all the counters counted: the
    rest over the window from its midpoint would rate the stragglers alone (100,000
    events routed between two samples but for a last few: 84 events/s)."""
    initial = samples[0][1]
    counted = sum(v - v0 for v, v0 in zip(samples[first][1], initial, strict=True))
    total = sum(v - v0 for v, v0 in zip(samples[last][1], initial, strict=True))
    return counted * 2 > total


def last_change_time(samples: Sequence[Sample]) -> float:
    """When the counters last changed (the first sample's time if they never did)."""
    changes = _changes(samples)
    if not changes:
        return samples[0][0]
    i = changes[-1]
    return (samples[i - 1][0] + samples[i][0]) / 2


def histogram(
    samples: Sequence[tuple[str, dict[str, str], float]], name: str
) -> dict[float, float]:
    """Cumulative bucket counts of a histogram (upper bound → count), summed over labels."""
    out: dict[float, float] = {}
    for sample, labels, value in samples:
        if sample == f"{name}_bucket":
            le = float(labels["le"])
            out[le] = out.get(le, 0.0) + value
    return out


def histogram_quantile(q: float, buckets: dict[float, float]) -> float | None:
    """Prometheus-style quantile of cumulative buckets (linear within a bucket); the
    highest finite bound when the quantile lies in the +Inf bucket; None when empty."""
    bounds = sorted(buckets)
    if not bounds or buckets[bounds[-1]] <= 0:
        return None
    rank = q * buckets[bounds[-1]]
    lower, below = 0.0, 0.0
    for bound in bounds:
        count = buckets[bound]
        if count >= rank:
            if math.isinf(bound):
                return lower
            if count == below:
                return bound
            return lower + (bound - lower) * (rank - below) / (count - below)
        lower, below = bound, count
    return lower


def quantile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank quantile of an ascending sequence."""
    rank = max(1, math.ceil(q * len(sorted_values)))
    return sorted_values[rank - 1]
