"""Smoke tests of the fleet benchmark: tiny throughput and latency runs, and its arithmetic."""

from __future__ import annotations

import math
import os
from collections import Counter
from pathlib import Path

import orjson
import pytest
from confluent_kafka import KafkaError, Message, Producer

from benchmarks import (
    fleet_cores,
    fleet_latency,
    fleet_processes,
    fleet_report,
    fleet_sampling,
    fleet_throughput,
    fleet_workload,
    measure,
)
from benchmarks.datasets import stock, to_dicts
from cerfleet.fleet.local_broker import LocalBroker
from cerfleet.query import compile_query


@pytest.mark.parametrize("name", list(fleet_workload.CHOICES))
def test_throughput_run_gives_the_embedded_answer(name: str, tmp_path: Path) -> None:
    query = fleet_workload.CHOICES[name]
    events = fleet_workload.events_for(
        query, to_dicts(stock(3_000, seed=7)), fleet_workload.KEYED_PARTITIONS
    )
    want = len(compile_query(query, time_field="stock_time").evaluator().process_batch(events))
    assert want > 0

    run = fleet_throughput.run_throughput(query, events, tmp_path, stall=30.0)

    assert run.route_rate > 0 and run.worker_rate > 0 and run.per_worker_rate > 0
    assert run.keyed_records == 3_000
    assert run.complex_events == want
    assert len(run.worker_rates) == 1 and run.worker_rates[0] > 0
    # The services serve process_cpu_seconds_total: CPU per event of each process. The
    # counter moves by clock ticks (10 ms), and routing 3,000 events can take less CPU
    # than one: the coordinator's may read 0 (it did once under the full suite's load).
    assert run.route_cpu_us is not None and run.route_cpu_us >= 0
    assert run.worker_cpu_us is not None and run.worker_cpu_us > 0
    # Each part's cores over the window: the worker worked, the mock's threads served it,
    # and together with the idle time no more than the machine has, give or take the
    # clock ticks the counters move by (a few in a window of a few tenths of a second).
    cores = run.cores
    seen = f"{cores} over {run.worker_seconds:.3f} s"
    assert set(cores) == set(fleet_cores.ROLES), seen
    assert cores["workers"] is not None and cores["workers"] > 0, seen
    assert cores["broker"] is not None and cores["idle"] is not None, seen
    ticks = 10 / os.sysconf("SC_CLK_TCK")  # a tick or two of each counter
    total = sum(v for v in cores.values() if v is not None)
    assert total <= (os.cpu_count() or 1) + ticks / run.worker_seconds, seen
    # 3,000 records may go in two batches, too few samples for an all-busy stretch; when
    # there is one, its cores come with it.
    assert (run.busy_rate is None) == (run.busy_cores == {})
    assert run.busy_rate is None or run.busy_rate > 0


def test_latency_run_times_every_complex_event_and_its_last_hop(tmp_path: Path) -> None:
    # ``count`` fixes the events whatever the rate (10 s at 1,000 ev/s would be 10,000).
    query = fleet_workload.GLOBAL
    run = fleet_latency.run_latency(
        query, 1_000, 10.0, tmp_path, warmup=500, stall=30.0, count=2_000
    )

    assert run.produced == 2_000 and run.produce_seconds < 5
    assert run.expected > 0 and run.complex_events == run.expected
    # The largest burst, counted here from the stream the run replays.
    stream = to_dicts(stock(500 + 2_000, seed=2))
    ends = Counter(
        ce.positions[-1]
        for ce in compile_query(query, time_field="stock_time").evaluator().process_batch(stream)
        if ce.positions[-1] >= 500
    )
    assert sum(ends.values()) == run.expected
    assert run.largest_burst == max(ends.values()) > 1
    # Each process's CPU over the paced phase; the mock's broker is a thread of this
    # process, counted as the broker's.
    for name in ("coordinator", "workers", "broker", "benchmark"):
        cores = run.cores[name]
        assert cores is not None and 0 < cores < 4
    assert len(run.published) == len(run.latencies) == run.complex_events
    assert run.latencies == sorted(run.latencies) and run.published == sorted(run.published)
    # The last hop (worker's produce call → read) is part of the whole way (event's
    # produce call → read); wall and monotonic clocks differ by clock steps only, and
    # CreateTime is whole milliseconds.
    assert run.published[0] >= 0 and run.published[-1] <= run.latencies[-1] + 0.002
    # Those whose last event came a second or more into the 2 s run: some, not all.
    assert 0 < len(run.settled) < len(run.latencies) and run.settled == sorted(run.settled)
    assert not Counter(run.settled) - Counter(run.latencies)
    table = "\n".join(fleet_report.latency_table([("global", run)]))
    assert "published → read p50 / p99 ms" in table and "| largest burst |" in table
    assert "| p99 after 1 s ms |" in table
    assert table.splitlines()[-1].endswith(
        f" / {run.cores['broker']:.2f} / {run.cores['benchmark']:.2f} |"
    )


def test_throughput_runs_leave_the_fleets_fetch_waits_to_the_services(tmp_path: Path) -> None:
    # A 10 ms wait made the idle coordinator's polls cost tansu a fifth of a core
    # beside the workers measured; only latency runs need it.
    with fleet_processes.FleetRun(fleet_workload.GLOBAL, tmp_path, partitions=1) as f:
        consumer = orjson.loads(f.env["CERFLEET_CONSUMER"])
    assert "fetch.wait.max.ms" not in consumer
    assert consumer == fleet_processes.FLEET_CONSUMER


def test_pinned_workers_run_every_thread_on_a_core_of_their_own(tmp_path: Path) -> None:
    usable = sorted(os.sched_getaffinity(0))
    with fleet_processes.FleetRun(fleet_workload.GLOBAL, tmp_path, partitions=1) as f:
        workers = [f.start_worker(pinned=True), f.start_worker(pinned=True), f.start_worker()]
        for w in workers:
            w.wait_healthy()  # its Kafka clients' threads have started by now
        allowed = [_threads_cores(w.popen.pid) for w in workers]
    want = [{usable[0]}, {usable[1 % len(usable)]}, set(usable)]
    assert [set().union(*a) for a in allowed] == want
    assert all(len(a) > 1 and len(set(map(frozenset, a))) == 1 for a in allowed), allowed


def _threads_cores(pid: int) -> list[set[int]]:
    """The cores each thread of ``pid`` may run on."""
    return [os.sched_getaffinity(int(tid)) for tid in os.listdir(f"/proc/{pid}/task")]


def test_fleet_processes_start_from_cached_bytecode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Where the environment forbids writing bytecode, each coordinator and worker compiled
    # the package again at start (a worker's start: 1.7-1.9 s, 1.2 s with it cached).
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.delenv("PYTHONPYCACHEPREFIX", raising=False)
    with fleet_processes.FleetRun(fleet_workload.GLOBAL, tmp_path, partitions=1) as f:
        env = dict(f.env)
    assert "PYTHONDONTWRITEBYTECODE" not in env
    assert env["PYTHONPYCACHEPREFIX"] == measure.environment()["PYTHONPYCACHEPREFIX"]
    assert Path(env["PYTHONPYCACHEPREFIX"]).is_absolute()


def test_balanced_desks_share_the_keyed_partitions_as_the_coordinator_routes() -> None:
    # The record key of each desk, partitioned by librdkafka's murmur2_random (the
    # coordinator's partitioner) on the mock cluster: the benchmark's own murmur2 must
    # agree with it, so that every keyed partition gets the same desks.
    broker = LocalBroker()
    try:
        broker.create_topic("desks", 8)
        producer = Producer(
            {"bootstrap.servers": broker.bootstrap_servers, "partitioner": "murmur2_random"}
        )
        partition_of: dict[bytes, int] = {}

        def delivered(err: KafkaError | None, msg: Message) -> None:
            assert err is None
            partition_of[msg.key()] = msg.partition()

        keys = [b"[%d]" % d for d in range(300)] + [bytes(range(n)) for n in range(1, 12)]
        for key in keys:
            producer.produce("desks", b"", key, on_delivery=delivered)
        assert producer.flush(10) == 0
    finally:
        broker.close()
    assert partition_of == {k: (fleet_workload.murmur2(k) & 0x7FFFFFFF) % 8 for k in keys}
    desks = fleet_workload.balanced_desks(8)
    shares = Counter(partition_of[b"[%d]" % d] for d in desks)
    assert shares == dict.fromkeys(range(8), fleet_workload.DESKS_PER_PARTITION)
    events = fleet_workload.with_desks([{"i": i} for i in range(1_605)], 8)
    assert len(events) == 1_605
    # Every desk reads the same events, in the stream's order, over its whole span.
    read = {d: [e["i"] for e in events if e["desk"] == d] for d in desks}
    assert read[desks[0]] == list(range(0, 1_605, 16))
    assert all(read[d] == read[desks[0]][: len(read[d])] for d in desks)
    assert {len(r) for r in read.values()} == {100, 101}


def test_counted_at_start_leaves_the_first_batch_out_of_the_window() -> None:
    samples = [(0.0, (0.0, 0.0)), (1.0, (0.0, 0.0)), (2.0, (5.0, 1.0)), (3.0, (19.0, 2.0))]
    assert fleet_sampling.active_window(samples) == (1.5, 2.5)
    assert fleet_sampling.counted_at_start(samples) == (5.0, 1.0)  # 15 records in the window
    # Everything between two samples: the window is that interval, holding all of it.
    assert fleet_sampling.counted_at_start([(0.0, (0.0,)), (1.0, (7.0,)), (2.0, (7.0,))]) == (0.0,)
    # Most of it by the first change, a few stragglers later: the window holds all of it
    # from the sample before the first change, not the stragglers alone from its midpoint.
    front = [(0.0, (0.0,)), (1.0, (0.0,)), (2.0, (99_990.0,)), (3.0, (99_990.0,)), (4.0, (1e5,))]
    assert fleet_sampling.active_window(front) == (1.0, 3.5)
    assert fleet_sampling.counted_at_start(front) == (0.0,)
    run = fleet_throughput.ThroughputRun(
        "q",
        9,
        1,
        8,
        1,
        route_seconds=1.0,
        worker_seconds=1.0,
        keyed_records=9,
        complex_events=0,
        worker_rates=[],
        worker_start_seconds=0.0,
        route_cpu_seconds=2.0,
        worker_cpu_seconds=2.0,
        routed_at_start=5.0,
        processed_at_start=5.0,
    )
    assert run.route_rate == run.worker_rate == 4.0
    assert run.route_cpu_us == run.worker_cpu_us == 500_000.0


def test_input_partitions_respect_the_retention_budget() -> None:
    assert (
        fleet_workload.input_partitions(fleet_workload.GLOBAL, 1_000_000) == 1
    )  # global order matters
    assert fleet_workload.input_partitions(fleet_workload.PARTITIONED, 1_000) == 1
    assert fleet_workload.input_partitions(fleet_workload.PARTITIONED, 200_000) == 4


def test_the_workers_window_is_drawn_on_their_records_alone() -> None:
    # One batch of all 3,000 records, its outputs counted a sample later: the window is
    # the interval that holds the batch, not an empty one after it (rate 0 before).
    work = [(0.0, (0.0, 0.0)), (1.0, (3000.0, 0.0)), (2.0, (3000.0, 5.0)), (3.0, (3000.0, 5.0))]
    assert fleet_throughput.worker_window(work, 1) == (0.0, 1.0, 0.0, [3000.0])
    # Several batches: the first is left out of the rate, as ``counted_at_start`` says.
    work = [
        (0.0, (0.0, 0.0, 0.0, 0.0)),
        (1.0, (100.0, 1.0, 50.0, 0.0)),
        (2.0, (300.0, 2.0, 150.0, 1.0)),
        (3.0, (300.0, 4.0, 150.0, 2.0)),
    ]
    start, end, at_start, rates = fleet_throughput.worker_window(work, 2)
    assert (start, end, at_start) == (0.5, 1.5, 150.0)
    assert rates == [200.0, 100.0]


def test_all_busy_counts_only_while_every_worker_has_records_left() -> None:
    # Worker 1 (records, outputs) starts a sample before worker 2 and finishes a sample
    # before it: only the samples at 2.0 and 3.0 find both counted and neither done.
    work = [
        (0.0, (0.0, 0.0, 0.0, 0.0)),
        (1.0, (100.0, 9.0, 0.0, 0.0)),
        (2.0, (300.0, 9.0, 40.0, 0.0)),
        (3.0, (500.0, 9.0, 140.0, 0.0)),
        (4.0, (600.0, 9.0, 240.0, 0.0)),
        (5.0, (600.0, 9.0, 300.0, 0.0)),
    ]
    assert fleet_throughput.all_busy(work) == (2.0, 3.0, 640.0 - 340.0)
    # One sample of both busy: no stretch. A worker that did nothing: never all busy.
    assert fleet_throughput.all_busy(work[:2] + work[3:]) is None
    idle = [(t, (a, b, 0.0, 0.0)) for t, (a, b, _, _) in work]
    assert fleet_throughput.all_busy(idle) is None
    # Two samples between the same batches: nothing counted, no rate.
    assert fleet_throughput.all_busy([*work[:3], (2.5, work[2][1]), *work[4:]]) is None
    # One worker: its own samples between its first batch and its last.
    alone = [(t, v[:2]) for t, v in work]
    assert fleet_throughput.all_busy(alone) == (1.0, 3.0, 500.0 - 100.0)


def test_active_window_and_last_change() -> None:
    samples = [(0.0, (0.0,)), (1.0, (0.0,)), (2.0, (4.0,)), (3.0, (9.0,)), (4.0, (9.0,))]
    assert fleet_sampling.active_window(samples) == (1.5, 2.5)
    assert fleet_sampling.last_change_time(samples) == 2.5
    # everything between two samples: the whole interval
    assert fleet_sampling.active_window([(0.0, (0.0,)), (1.0, (3.0,)), (2.0, (3.0,))]) == (0.0, 1.0)
    with pytest.raises(ValueError):
        fleet_sampling.active_window([(0.0, (1.0,)), (1.0, (1.0,))])


def test_histogram_quantiles() -> None:
    text = "\n".join(
        [
            "# TYPE h histogram",
            'h_bucket{le="0.1",query="a"} 2.0',
            'h_bucket{le="0.5",query="a"} 6.0',
            'h_bucket{le="+Inf",query="a"} 8.0',
            'h_bucket{le="0.1",query="b"} 2.0',
            'h_bucket{le="0.5",query="b"} 2.0',
            'h_bucket{le="+Inf",query="b"} 2.0',
            "h_count 10.0",
            "h_sum 1.0",
        ]
    )
    buckets = fleet_sampling.histogram(fleet_sampling.metric_samples(text), "h")
    assert buckets == {0.1: 4.0, 0.5: 8.0, math.inf: 10.0}
    assert fleet_sampling.histogram_quantile(0.4, buckets) == pytest.approx(0.1)
    assert fleet_sampling.histogram_quantile(0.6, buckets) == pytest.approx(0.3)
    assert (
        fleet_sampling.histogram_quantile(0.99, buckets) == 0.5
    )  # in +Inf: the highest finite bound
    assert fleet_sampling.histogram_quantile(0.5, {}) is None
    assert fleet_sampling.quantile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.0
    assert fleet_sampling.quantile([1.0, 2.0, 3.0, 4.0], 1.0) == 4.0
