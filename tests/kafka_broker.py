"""The Kafka broker tests run against: a real one when configured, else the local mock.

Selection, first match wins:

1. ``KAFKA_BOOTSTRAP_SERVERS`` is set: that broker ("real"); topics are created
   with :func:`cerfleet.fleet.topics.ensure_topics`.
2. ``CERFLEET_TESTCONTAINERS=1``, ``testcontainers`` imports and Docker answers: a
   single-node KRaft ``cp-kafka`` container ("real").
3. Otherwise librdkafka's mock cluster ("mock"), hosted by
   ``python -m cerfleet.fleet.local_broker`` in a helper process, so the test
   process and any worker processes it starts are all ordinary clients of it.
"""

from __future__ import annotations

import functools
import importlib
import os
import queue
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from cerfleet.fleet.topics import ensure_topics

__all__ = [
    "HelperProcess",
    "KafkaBroker",
    "MockHelperBroker",
    "RealBroker",
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
    """Whether :func:`start_broker` will give a real broker rather than the mock."""
    return bool(os.environ.get("KAFKA_BOOTSTRAP_SERVERS")) or _testcontainers_wanted()


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
    return MockHelperBroker()
