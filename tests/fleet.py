"""A fleet under test: coordinator and worker processes against the test broker.

Every fleet gets its own topic names and consumer groups, so tests share one
broker without seeing each other. Processes are real ``cerfleet`` commands;
their output goes to files under the test's tmp directory (never to an
undrained pipe), and their readiness is read from their ``/healthz`` and
``/metrics`` endpoints.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import orjson
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from cerfleet.fleet.observability import logged_port
from tests.kafka_broker import KafkaBroker

# Classic-protocol group timing for tests: a rebalance takes about session.timeout.ms.
FAST_GROUPS = {"session.timeout.ms": "2000", "heartbeat.interval.ms": "300"}


class Process:
    def __init__(self, name: str, args: list[str], env: dict[str, str], log_dir: Path) -> None:
        self.name = name
        self._port: int | None = None
        self.log = log_dir / f"{name}.log"
        with open(self.log, "wb") as out:
            # Port 0: the process binds a free port itself and logs it (a port picked here
            # was once taken by another socket before a worker bound it, and it exited).
            self.popen = subprocess.Popen(
                [sys.executable, "-m", "cerfleet.cli", *args, "--metrics-port", "0"],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    @property
    def port(self) -> int | None:
        """The metrics port, once the process's log names it."""
        if self._port is None:
            self._port = logged_port(self.log)
        return self._port

    def get(self, path: str) -> tuple[int, str]:
        if self.port is None:
            return 0, ""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=2) as r:
                return int(r.status), r.read().decode()
        except urllib.error.HTTPError as e:
            return int(e.code), e.read().decode()
        except OSError:
            return 0, ""

    def metric(self, name: str) -> float:
        """Sum of a metric's samples (all label sets); 0 when absent."""
        _, text = self.get("/metrics")
        total = 0.0
        for line in text.splitlines():
            if line.startswith(name) and not line.startswith("#"):
                head, _, value = line.rpartition(" ")
                if head == name or head.startswith(name + "{"):
                    total += float(value)
        return total

    def wait_for_metric(self, name: str, timeout: float = 60) -> None:
        """Until ``name`` is above 0. A fault test strikes a worker once it is at work: a
        fixed delay struck one, on a quiet machine, before its first assignment, and the
        test then proved nothing."""
        deadline = time.monotonic() + timeout
        while self.metric(name) <= 0:
            if self.popen.poll() is not None:
                raise AssertionError(f"{self.name} exited: {self.tail()}")
            assert time.monotonic() < deadline, f"{self.name}: {name} still 0 after {timeout} s"
            time.sleep(0.02)

    def wait_healthy(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.popen.poll() is not None:
                raise AssertionError(f"{self.name} exited: {self.tail()}")
            if self.get("/healthz")[0] == 200:
                return
            time.sleep(0.1)
        raise AssertionError(f"{self.name} not healthy after {timeout}s: {self.tail()}")

    def alive(self) -> bool:
        return self.popen.poll() is None

    def kill(self) -> None:
        self.popen.send_signal(signal.SIGKILL)
        self.popen.wait(10)

    def pause(self) -> None:
        """SIGSTOP: the process stalls (no heartbeats) without dying."""
        self.popen.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.popen.send_signal(signal.SIGCONT)

    def terminate(self, timeout: float = 60) -> int:
        self.popen.send_signal(signal.SIGTERM)
        return self.popen.wait(timeout)

    def tail(self, n: int = 4000) -> str:
        try:
            return self.log.read_text(errors="replace")[-n:]
        except OSError:
            return ""


class Fleet:
    def __init__(self, kafka: KafkaBroker, log_dir: Path) -> None:
        self.kafka = kafka
        self.log_dir = log_dir
        self.id = uuid.uuid4().hex[:8]
        self.prefix = f"t{self.id}"
        self.env = {
            **os.environ,
            "CERFLEET_BOOTSTRAP_SERVERS": kafka.bootstrap_servers,
            "CERFLEET_REGISTRY_TOPIC": f"{self.prefix}.queries",
            "CERFLEET_KEYED_TOPIC_PREFIX": f"{self.prefix}.keyed.",
            "CERFLEET_DEAD_LETTER_TOPIC": f"{self.prefix}.dead",
            "CERFLEET_CONSUMER": orjson.dumps(FAST_GROUPS).decode(),
            "CERFLEET_LOG_LEVEL": "INFO",
        }
        self.processes: list[Process] = []
        self.readers: list[TopicReader] = []
        self._n = 0

    @property
    def dead_letter_topic(self) -> str:
        return self.env["CERFLEET_DEAD_LETTER_TOPIC"]

    def topic(self, name: str, partitions: int = 1) -> str:
        full = f"{self.prefix}.{name}"
        self.kafka.create_topic(full, partitions)
        return full

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "cerfleet.cli", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    def submit(self, name: str, ceql: str, inputs: Sequence[str], output: str) -> None:
        path = self.log_dir / f"{name}.ceql"
        path.write_text(ceql)
        args = ["submit", name, str(path), "--output-topic", output]
        for topic in inputs:
            args += ["--input-topic", topic]
        done = self.cli(*args)
        assert done.returncode == 0, done.stderr

    def _start(self, kind: str, *args: str) -> Process:
        self._n += 1
        proc = Process(f"{kind}-{self._n}", [kind, *args], self.env, self.log_dir)
        self.processes.append(proc)
        return proc

    def coordinator(self, *args: str) -> Process:
        proc = self._start("coordinator", "--group-id", f"{self.prefix}-coord", *args)
        proc.wait_healthy()
        return proc

    def worker(self, *args: str) -> Process:
        proc = self._start(
            "worker", "--group-id", f"{self.prefix}-workers", "--checkpoint-interval", "0.5", *args
        )
        proc.wait_healthy()
        return proc

    def produce(self, topic: str, lines: Iterable[bytes]) -> int:
        producer = Producer(
            {
                **self.kafka.client_config(),
                "linger.ms": "5",
                "batch.num.messages": "10000",
                "compression.type": "lz4",
                "enable.idempotence": "true",
            }
        )
        n = 0
        for line in lines:
            while True:
                try:
                    producer.produce(topic, value=line)
                    break
                except BufferError:
                    producer.poll(0.05)
            n += 1
        assert producer.flush(60) == 0
        return n

    def reader(
        self, topic: str, partitions: int | None = None, isolation: str = "read_committed"
    ) -> TopicReader:
        reader = TopicReader(self.kafka, topic, partitions, isolation)
        self.readers.append(reader)
        return reader

    def close(self) -> None:
        for reader in self.readers:
            reader.close()
        for proc in self.processes:
            if proc.alive():
                proc.popen.send_signal(signal.SIGCONT)  # a paused one would ignore SIGTERM
                proc.popen.send_signal(signal.SIGTERM)
        for proc in self.processes:
            try:
                proc.popen.wait(30)
            except subprocess.TimeoutExpired:
                proc.popen.kill()
                proc.popen.wait(5)


class TopicReader:
    """Reads every partition of a topic from its beginning, accumulating records."""

    def __init__(
        self,
        kafka: KafkaBroker,
        topic: str,
        partitions: int | None = None,
        isolation: str = "read_committed",
    ) -> None:
        self.consumer = Consumer(
            {
                **kafka.client_config(),
                "group.id": f"reader-{uuid.uuid4().hex[:8]}",
                "enable.auto.commit": "false",
                "isolation.level": isolation,
            }
        )
        if partitions is None:
            meta = self.consumer.list_topics(topic, timeout=10).topics[topic]
            partitions = len(meta.partitions)
        self.consumer.assign(
            [TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)]
        )
        self.records: list[Any] = []
        self.closed = False

    def poll(self, seconds: float = 0.5) -> int:
        deadline = time.monotonic() + seconds
        got = 0
        while time.monotonic() < deadline:
            for msg in self.consumer.consume(10_000, 0.1):
                if msg.error() is None:
                    self.records.append(msg)
                    got += 1
        return got

    def wait_for(self, count: int, timeout: float, settle: float = 3.0) -> list[Any]:
        """Read until at least ``count`` records arrived, then ``settle`` seconds more (so a
        duplicate arriving late is seen too)."""
        deadline = time.monotonic() + timeout
        while len(self.records) < count and time.monotonic() < deadline:
            self.poll(0.5)
        self.poll(settle)
        return self.records

    def values(self) -> list[dict[str, Any]]:
        return [orjson.loads(m.value()) for m in self.records]

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.consumer.close()
