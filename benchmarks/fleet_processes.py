"""The processes of one fleet benchmark run: its broker, the coordinator and worker
children (``Child``), and the topics and clients of one query (``FleetRun``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Self

import orjson
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    Message,
    Producer,
    TopicPartition,
)

from benchmarks.fleet_brokers import BROKER, BROKERS
from benchmarks.fleet_sampling import BenchmarkError, metric_samples, sum_samples
from benchmarks.fleet_workload import KEYED_PARTITIONS, TIME_FIELD
from benchmarks.measure import environment
from cerfleet.fleet.keyed import GroupId
from cerfleet.fleet.observability import logged_port
from cerfleet.fleet.registry import QuerySpec, write
from cerfleet.fleet.settings import WorkerSettings

ROOT = Path(__file__).resolve().parent.parent


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


class Child:
    """A ``cerfleet`` command in its own process, output to a log file, metrics over HTTP."""

    def __init__(
        self,
        name: str,
        args: Sequence[str],
        env: dict[str, str],
        log_dir: Path,
        cores: frozenset[int] | None = None,
    ) -> None:
        self.name = name
        self._port: int | None = None
        self.log_path = log_dir / f"{name}.log"
        self.started = time.monotonic()
        with open(self.log_path, "wb") as log:  # the child keeps its own descriptor
            # Port 0: the child binds a free port and logs it; one picked here can be
            # taken by another socket before the child binds it.
            self.popen = subprocess.Popen(
                [sys.executable, "-m", "cerfleet.cli", *args, "--metrics-port", "0"],
                env=env,
                cwd=ROOT,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                # Set before the child starts any thread: every thread it makes inherits it.
                preexec_fn=None if cores is None else lambda: os.sched_setaffinity(0, cores),
            )

    @property
    def port(self) -> int | None:
        """The metrics port, once the child's log names it."""
        if self._port is None:
            self._port = logged_port(self.log_path)
        return self._port

    def _get(self, path: str) -> tuple[int, str]:
        if self.port is None:
            return 0, ""
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
        return metric_samples(text) if status == 200 else None

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
            **environment(),
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

    def _start(
        self,
        name: str,
        args: Sequence[str],
        env: dict[str, str],
        cores: frozenset[int] | None = None,
    ) -> Child:
        child = Child(name, args, env, self.log_dir, cores)
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

    def start_worker(self, pinned: bool = False) -> Child:
        """``pinned``: the worker runs on one core of its own (its number among the
        workers, modulo the cores this process may use), as a Kubernetes static CPU
        manager places a pod that asks for whole CPUs; everything else still shares them."""
        usable = sorted(os.sched_getaffinity(0))
        cores = frozenset({usable[len(self.workers) % len(usable)]}) if pinned else None
        name, args = f"worker-{len(self.workers) + 1}", ["worker", "--group-id", self.worker_group]
        worker = self._start(name, args, self.env, cores)
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
