"""Throughput runs: events produced first, routed by the coordinator, then processed by
the workers; rates over each phase's active window, CPU per event beside them."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.fleet_cores import CoresTrace
from benchmarks.fleet_processes import FleetRun
from benchmarks.fleet_sampling import (
    COMPLEX_OUT,
    CPU,
    EVENTS_IN,
    ROUTED,
    BenchmarkError,
    active_window,
    around,
    counted_at_start,
    sample_until,
    sum_samples,
)
from benchmarks.fleet_workload import KEY_FIELD, KEYED_PARTITIONS, input_partitions
from cerfleet.kept_json import dumps_kept


@dataclass
class ThroughputRun:
    query: str
    events: int
    input_partitions: int
    keyed_partitions: int
    workers: int
    route_seconds: float
    worker_seconds: float
    keyed_records: int
    complex_events: int
    worker_rates: list[float]  # each worker's own records / own active window
    worker_start_seconds: float  # worker processes started → first record processed
    # CPU seconds of the processes over their active windows (all threads), None when a
    # process served no process_* series.
    route_cpu_seconds: float | None = None
    worker_cpu_seconds: float | None = None
    # Records counted when the window starts (``counted_at_start``): not in the rates.
    routed_at_start: float = 0.0
    processed_at_start: float = 0.0
    # Cores each part of the run used over the workers' window (``fleet_cores``): the
    # workers together, the broker, the coordinator, this process, the machine's idle.
    cores: dict[str, float | None] = field(default_factory=dict)
    # All workers' records a second while every one of them had records left
    # (``all_busy``), and the cores each part used meanwhile.
    busy_rate: float | None = None
    busy_cores: dict[str, float | None] = field(default_factory=dict)
    pinned: bool = False  # each worker on a core of its own (``FleetRun.start_worker``)

    @property
    def route_cpu_us(self) -> float | None:
        s = self.route_cpu_seconds
        return None if s is None else s / (self.events - self.routed_at_start) * 1e6

    @property
    def worker_cpu_us(self) -> float | None:
        s = self.worker_cpu_seconds
        return None if s is None else s / (self.keyed_records - self.processed_at_start) * 1e6

    @property
    def route_rate(self) -> float:
        return (self.events - self.routed_at_start) / self.route_seconds

    @property
    def worker_rate(self) -> float:
        """All workers together: keyed records / first to last processed."""
        return (self.keyed_records - self.processed_at_start) / self.worker_seconds

    @property
    def per_worker_rate(self) -> float:
        return self.worker_rate / self.workers

    @property
    def busy_per_worker_rate(self) -> float | None:
        return None if self.busy_rate is None else self.busy_rate / self.workers


def run_throughput(
    query: str,
    events: list[dict[str, Any]],
    log_dir: Path,
    *,
    workers: int = 1,
    keyed_partitions: int = KEYED_PARTITIONS,
    lines: Sequence[bytes] | None = None,
    expected: int | None = None,
    stall: float = 60.0,
    pinned: bool = False,
) -> ThroughputRun:
    """One throughput run on a fresh broker: produce ``events``, route them all, then
    process them with ``workers`` worker processes. ``expected`` (the embedded engine's
    count, if known) lets the wait end as soon as every complex event is out."""
    if lines is None:
        lines = [dumps_kept(e) for e in events]  # not 4 KiB each: orjson keeps its buffer
    keys = [str(e[KEY_FIELD]).encode() for e in events]
    n = len(events)
    partitions = input_partitions(query, n)
    with FleetRun(query, log_dir, partitions=partitions, keyed_partitions=keyed_partitions) as f:
        f.produce(lines, keys)
        f.check_retained(f.input_topic, partitions)

        coordinator = f.start_coordinator()
        route_cpu = CpuTrace()

        def routed() -> tuple[float, ...]:
            samples = coordinator.samples() or []
            route_cpu.record([samples])
            return (sum_samples(samples, ROUTED),)

        route = sample_until(
            routed,
            lambda v: v[0] >= n,
            what="routing",
            stall=stall,
            check=f.check_alive,
            fine=lambda v: v[0] == 0 or v[0] >= 0.9 * n,
        )
        route_start, route_end = active_window(route)
        deadline = time.monotonic() + 30
        while (keyed := f.count(f.keyed_topic, keyed_partitions)) < n:
            if time.monotonic() > deadline:
                raise BenchmarkError(f"only {keyed} of {n} keyed records acknowledged")
            time.sleep(0.1)
        f.check_retained(f.keyed_topic, keyed_partitions)

        started = time.monotonic()
        procs = [f.start_worker(pinned) for _ in range(workers)]

        work_cpu = CpuTrace()
        cores = CoresTrace(f)

        def read() -> tuple[float, ...]:
            # Read on both sides of the metrics: a sample's stamp, which may end or start
            # the window, then lies between two readings.
            cores.record()
            values: list[float] = []
            seen = []
            for w in procs:
                samples = w.samples() or []
                seen.append(samples)
                values += [sum_samples(samples, EVENTS_IN), sum_samples(samples, COMPLEX_OUT)]
            work_cpu.record(seen)
            cores.record()
            return tuple(values)

        settle: dict[str, Any] = {"at": None, "values": None}

        def done(values: tuple[float, ...]) -> bool:
            if sum(values[0::2]) < keyed:
                return False
            if expected is not None and sum(values[1::2]) >= expected:
                return True
            # Every record read: wait for outputs to stop changing.
            now = time.monotonic()
            if values != settle["values"]:
                settle["at"], settle["values"] = now, values
            return bool(now - settle["at"] >= 2.0)

        work = sample_until(
            read,
            done,
            what="processing",
            stall=stall,
            check=f.check_alive,
            fine=lambda v: min(v[0::2]) == 0 or sum(v[0::2]) >= 0.9 * keyed,
        )
        start, end, processed_at_start, worker_rates = worker_window(work, workers)
        busy = all_busy(work)
        published = int(sum(work[-1][1][1::2]))
        deadline = time.monotonic() + 30
        while (outputs := f.count(f.output_topic, keyed_partitions)) < published:
            if time.monotonic() > deadline:
                raise BenchmarkError(f"only {outputs} of {published} outputs acknowledged")
            time.sleep(0.1)
    return ThroughputRun(
        query=query,
        events=n,
        input_partitions=partitions,
        keyed_partitions=keyed_partitions,
        workers=workers,
        route_seconds=route_end - route_start,
        worker_seconds=end - start,
        keyed_records=keyed,
        complex_events=outputs,
        worker_rates=worker_rates,
        worker_start_seconds=start - started,
        route_cpu_seconds=route_cpu.between(route_start, route_end),
        worker_cpu_seconds=work_cpu.between(start, end),
        routed_at_start=counted_at_start(route)[0],
        processed_at_start=processed_at_start,
        cores=cores.between(start, end),
        busy_rate=None if busy is None else busy[2] / (busy[1] - busy[0]),
        busy_cores={} if busy is None else cores.between(busy[0], busy[1]),
        pinned=pinned,
    )


def worker_window(
    work: Sequence[tuple[float, tuple[float, ...]]], workers: int
) -> tuple[float, float, float, list[float]]:
    """From the workers' samples (each worker's records and complex events counted, in
    turn): first to last record processed, the records counted at its start, and each
    worker's rate. The records' counters alone draw the window: the complex events'
    counter moves just after them (a batch is counted, then its outputs), and a window
    drawn on both counted a small run's one batch before the window and gave it a rate
    of 0."""
    records = [(t, v[0::2]) for t, v in work]
    start, end = active_window(records)
    rates = []
    for i in range(workers):
        own = [(t, v[i : i + 1]) for t, v in records]
        if own[-1][1][0] > 0:
            a, b = active_window(own)
            rates.append((own[-1][1][0] - counted_at_start(own)[0]) / (b - a))
    return start, end, sum(counted_at_start(records)), rates


def all_busy(work: Sequence[tuple[float, tuple[float, ...]]]) -> tuple[float, float, float] | None:
    """The stretch over the samples at which every worker had counted a batch and still
    had records left, as (start, end, records all workers processed in it): the fleet
    running, without the start of the first worker before the others nor the end of the
    last after the others. First to last, a run of two workers on tansu lost 1.1 s of its
    3.9 s to one worker's later start: tansu often hands a group's second member its
    partitions a second after the first. None without two such samples a batch or more
    apart (counters move a batch at a time), or with a worker that processed nothing."""
    records = [(t, v[0::2]) for t, v in work]
    final = records[-1][1]
    busy = [(t, v) for t, v in records if all(0 < c < f for c, f in zip(v, final, strict=True))]
    if len(busy) < 2:
        return None
    (t0, v0), (t1, v1) = busy[0], busy[-1]
    return None if v1 == v0 else (t0, t1, sum(v1) - sum(v0))


class CpuTrace:
    """The summed ``process_cpu_seconds_total`` of some processes, from the metric
    samples ``sample_until``'s reads fetch."""

    def __init__(self) -> None:
        self.samples: list[tuple[float, float | None]] = []

    def record(self, per_process: Sequence[Sequence[tuple[str, dict[str, str], float]]]) -> None:
        total: float | None = 0.0
        for samples in per_process:
            found = [v for name, _, v in samples if name == CPU]
            total = None if total is None or not found else total + found[0]
        self.samples.append((time.monotonic(), total))

    def between(self, start: float, end: float) -> float | None:
        """CPU seconds from the last sample at or before ``start`` to the first at or
        after ``end`` (the window widened to the samples around it)."""
        found = around(self.samples, start, end)
        if found is None:
            return None
        (_, a), (_, b) = found
        return None if a is None or b is None else b - a
