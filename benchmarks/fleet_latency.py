"""Latency runs: a coordinator and one worker idle and warmed up, events produced at a
target rate, each complex event timed from its last event's produce call to its read."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import orjson
from confluent_kafka import (
    KafkaError,
    Message,
    Producer,
)

from benchmarks.datasets import stock, to_dicts
from benchmarks.fleet_cores import cores_between, cpu_now
from benchmarks.fleet_processes import FLEET_CONSUMER, PACED_FETCH, FleetRun
from benchmarks.fleet_sampling import (
    ASSIGNED,
    EVENTS_IN,
    LATE,
    LATENCY_HISTOGRAM,
    ROUTED,
    BenchmarkError,
    Stalled,
    histogram,
    histogram_quantile,
    last_change_time,
    quantile,
    sample_until,
    sum_samples,
)
from benchmarks.fleet_workload import (
    KEY_FIELD,
    KEYED_PARTITIONS,
    embedded_evaluator,
    events_for,
    input_partitions,
)
from cerfleet.fleet.batching import drain
from cerfleet.kept_json import dumps_kept


@dataclass
class LatencyRun:
    query: str
    target_rate: float
    produced: int
    produce_seconds: float
    complex_events: int  # outputs whose last event was produced in the measured phase
    expected: int  # the embedded engine's count of those
    latencies: list[float] = field(repr=False)  # seconds, ascending
    # Of each of those: the worker's produce call → read here (seconds, ascending; the
    # wall clock, which all processes share here).
    published: list[float] = field(repr=False)
    # Of the outputs whose last event was produced ``SETTLED`` seconds or more into the
    # paced phase: their latencies (seconds, ascending). The phase starts with the fleet
    # idle, and the time merge waits up to ``merge_end_wait`` for each input partition
    # read to its end that had records before the pause (a replay whose clock runs far
    # ahead of the wall's meets its cap at once): without the first second, the p99 is
    # the flowing stream's.
    settled: list[float] = field(repr=False)
    worker_p50: float | None
    worker_p99: float | None
    worker_rate: float  # keyed records processed / produce phase
    drain_seconds: float  # last event produced → every keyed record processed
    lost: int  # keyed records never processed (the mock dropped them before they were read)
    late: int = 0  # events the worker dropped as late (fewer complex events, not lost)
    # The most complex events one measured event ends (the embedded engine's): a Kleene
    # burst's outputs are produced, fetched and read one after another, so the p99 of a
    # query whose bursts hold over 1% of its outputs is the tail of its largest bursts.
    largest_burst: int = 0
    # Cores each process used while the events were produced (``cpu_now``); None where
    # not known (an external broker).
    cores: dict[str, float | None] = field(default_factory=dict)

    @property
    def achieved_rate(self) -> float:
        return self.produced / self.produce_seconds

    def q(self, p: float) -> float | None:
        return quantile(self.latencies, p) if self.latencies else None

    def settled_q(self, p: float) -> float | None:
        return quantile(self.settled, p) if self.settled else None

    def published_q(self, p: float) -> float | None:
        return quantile(self.published, p) if self.published else None


def paced_produce(
    producer: Producer,
    topic: str,
    lines: Sequence[bytes],
    keys: Sequence[bytes],
    rate: float,
    times: dict[tuple[int, int], float],
    failed: list[KafkaError],
    span: list[float],
) -> None:
    """Produce at ``rate`` events/s; ``times[(partition, offset)]`` = the produce call's time."""

    def delivered(at: float, err: KafkaError | None, msg: Message) -> None:
        if err is not None:
            failed.append(err)
            return
        partition, offset = msg.partition(), msg.offset()
        if partition is not None and offset is not None:
            times[(partition, offset)] = at

    clock = time.monotonic
    n = len(lines)
    t0 = clock()
    i = 0
    while i < n:
        due = min(n, int((clock() - t0) * rate) + 1)
        while i < due:
            at = clock()
            try:
                producer.produce(
                    topic, value=lines[i], key=keys[i], on_delivery=partial(delivered, at)
                )
            except BufferError:
                producer.poll(0.01)
                continue
            i += 1
        producer.poll(0)
        ahead = t0 + i / rate - clock()
        if ahead > 0:
            time.sleep(min(ahead, 0.002))
    span[:] = [t0, clock()]
    if producer.flush(60):
        failed.append(KafkaError(KafkaError._MSG_TIMED_OUT))


# Seconds into the paced phase after which an output counts as the flowing stream's
# (``LatencyRun.settled``).
SETTLED = 1.0


def run_latency(
    query: str,
    rate: float,
    seconds: float,
    log_dir: Path,
    *,
    keyed_partitions: int = KEYED_PARTITIONS,
    warmup: int = 2_000,
    seed: int = 2,
    stall: float = 60.0,
    drain_stall: float = 10.0,
    count: int | None = None,
) -> LatencyRun:
    """Coordinator and one worker idle and warmed up, then ``rate`` events/s for ``seconds``;
    or, given ``count``, that many events at ``rate`` however long they take. The stock
    stream depends on its length and seed only, so runs at several rates over the same
    ``count`` replay the same events, and with them the same Kleene bursts."""
    n = max(1, int(rate * seconds)) if count is None else count
    stream = events_for(query, to_dicts(stock(warmup + n, seed=seed)), keyed_partitions)
    lines = [dumps_kept(e) for e in stream]  # not 4 KiB each: orjson keeps its buffer
    keys = [str(e[KEY_FIELD]).encode() for e in stream]
    partitions = input_partitions(query, warmup + n)
    with FleetRun(
        query,
        log_dir,
        partitions=partitions,
        keyed_partitions=keyed_partitions,
        consumer={**FLEET_CONSUMER, **PACED_FETCH},
    ) as f:
        coordinator = f.start_coordinator()
        worker = f.start_worker()
        coordinator.wait_healthy()
        worker.wait_healthy()
        deadline = time.monotonic() + 60
        while worker.metric(ASSIGNED) < keyed_partitions:
            f.check_alive()
            if time.monotonic() > deadline:
                raise BenchmarkError(f"worker not assigned its partitions: {worker.tail()}")
            time.sleep(0.1)
        reader = f.output_reader()
        # The paced producer sends the warm-up too: its connection, metadata and producer
        # id are then ready, where a new one spent about a second on them and the first
        # outputs of every run counted that second.
        producer = f.producer()
        f.produce(lines[:warmup], keys[:warmup], producer)
        sample_until(
            lambda: (worker.metric(EVENTS_IN),),
            lambda v: v[0] >= warmup,
            what="warm-up",
            stall=stall,
            check=f.check_alive,
        )
        while reader.consume(10_000, 0.5):  # the warm-up's outputs
            pass
        before = worker.samples() or []

        times: dict[tuple[int, int], float] = {}
        failed: list[KafkaError] = []
        span: list[float] = []
        thread = threading.Thread(
            target=paced_produce,
            args=(producer, f.input_topic, lines[warmup:], keys[warmup:], rate, times, failed),
            kwargs={"span": span},
            name="paced-producer",
            daemon=True,
        )
        # (read at, read at by the wall clock, value, the worker's produce call in ms by
        # the wall clock: the record's CreateTime, which the worker's client stamps).
        received: list[tuple[float, float, bytes, int]] = []

        def take(timeout: float) -> int:
            # As the services read (``drain``): the first output ends the wait. A batch
            # call waits its whole timeout for 10,000 records, and every output read then
            # counted that wait (up to the timeout, 20 ms) as latency.
            msgs = drain(reader, 10_000, timeout)
            at, wall = time.monotonic(), time.time()
            got = 0
            for msg in msgs:
                value = msg.value()
                if msg.error() is None and value is not None:
                    received.append((at, wall, value, msg.timestamp()[1]))
                    got += 1
            return got

        # Outputs are read all along, draining included: an output stamped only when the
        # drain's metric sampling ends would count that wait as latency (it put the last
        # 1% of every run near one second).
        reading = threading.Event()
        reading.set()

        def collect() -> None:
            while reading.is_set():
                take(0.02)

        collector = threading.Thread(target=collect, name="output-reader", daemon=True)
        cpu_before = cpu_now(f)
        thread.start()
        collector.start()
        while thread.is_alive():
            f.check_alive()
            time.sleep(0.05)
        thread.join()
        cpu_after = cpu_now(f)
        if failed:
            raise BenchmarkError(f"producing failed: {failed[:3]}")
        total = warmup + n
        # Low watermarks move here without loss (records already read are dropped too), so
        # loss shows as records the worker never reads: the counters stop short of the total.
        try:
            drained = sample_until(
                lambda: (coordinator.metric(ROUTED), worker.metric(EVENTS_IN)),
                lambda v: v[1] >= total,
                what="draining",
                stall=drain_stall,
                check=f.check_alive,
            )
            last_change = drained[-1][0]
        except Stalled as exc:
            drained = exc.samples
            last_change = last_change_time(drained)
        after = worker.samples() or []
        processed = sum_samples(after, EVENTS_IN) - sum_samples(before, EVENTS_IN)
        lost = total - int(sum_samples(after, EVENTS_IN))
        late = int(sum_samples(after, LATE) - sum_samples(before, LATE))
        quiet, seen = time.monotonic(), len(received)
        while time.monotonic() - quiet < 1.5:  # outputs still on their way
            time.sleep(0.1)
            if len(received) != seen:
                quiet, seen = time.monotonic(), len(received)
        reading.clear()
        collector.join()

    latencies = []
    published = []
    settled = []
    for at, wall, value, stamped in received:
        last = orjson.loads(value)["sources"][-1]
        produced = times.get((last["partition"], last["offset"]))
        if produced is not None:  # None: the last event was a warm-up event
            latencies.append(at - produced)
            published.append(wall - stamped / 1000)
            if produced - span[0] >= SETTLED:
                settled.append(at - produced)
    latencies.sort()
    published.sort()
    settled.sort()
    bursts = Counter(
        ce.end for ce in embedded_evaluator(query).process_batch(stream) if ce.end >= warmup
    )
    delta = histogram(after, LATENCY_HISTOGRAM)
    for le, count in histogram(before, LATENCY_HISTOGRAM).items():
        delta[le] = delta.get(le, 0.0) - count
    return LatencyRun(
        query=query,
        target_rate=rate,
        produced=n,
        produce_seconds=span[1] - span[0],
        complex_events=len(latencies),
        expected=sum(bursts.values()),
        latencies=latencies,
        published=published,
        settled=settled,
        worker_p50=histogram_quantile(0.5, delta),
        worker_p99=histogram_quantile(0.99, delta),
        worker_rate=processed / (last_change - span[0]),
        drain_seconds=max(0.0, last_change - span[1]),
        lost=lost,
        late=late,
        largest_burst=max(bursts.values(), default=0),
        # Over the paced phase: the thread's clock (span) is within the two readings.
        cores=cores_between(cpu_before, cpu_after, span[1] - span[0]),
    )
