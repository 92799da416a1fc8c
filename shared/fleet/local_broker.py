"""A local Kafka-protocol broker for development and tests.

Kafka cannot be installed on every development or CI machine (it is neither an OS
package nor on PyPI, and Docker is not always there), but every confluent-kafka
wheel bundles librdkafka, whose mock cluster speaks the real Kafka protocol over
TCP on 127.0.0.1. Any process on the host can produce, consume, join consumer
groups and commit offsets against it, so workers run through the same client code
paths as in production.

The Python package does not wrap the mock's C API (``rd_kafka_mock_*``), but the
bundled library exports it, so it is reached through ctypes: that gives topics
with any partition count and broker down/up for fault injection. Where the
library or one of those symbols cannot be loaded (another platform, a release that
renamed the experimental API), a producer configured with ``test.mock.num.brokers``
hosts the cluster instead, with fewer abilities (see :class:`LocalBroker`).

Limits of the mock, however it is hosted:

* no transaction semantics: the calls succeed, but ``read_committed`` consumers
  see aborted and open data, transactional offset commits are discarded and
  there is no fencing;
* no compaction and no topic configs;
* about 5 MiB retained per partition: older batches are dropped silently;
* auto-created topics always get 4 partitions;
* state lives in memory only and dies with the hosting process.

``python -m cerfleet.fleet.local_broker`` runs it as a helper process that other
processes (tests, workers) connect to; see :func:`main` for its line protocol.
"""

from __future__ import annotations

import argparse
import ctypes
import glob
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any, Self

import confluent_kafka

__all__ = ["LocalBroker", "main"]

logger = logging.getLogger(__name__)

_RD_KAFKA_PRODUCER = 0
_ERR_NO_ERROR = 0
_ERR_TOPIC_ALREADY_EXISTS = 36
_METADATA_TIMEOUT_S = 10.0


class _MockApi:
    """The C functions used, each with its signature declared.

    Declaring ``restype`` matters beyond tidiness: ctypes assumes ``int`` by
    default, which would truncate the 64-bit handle pointers.
    """

    def __init__(self, lib: ctypes.CDLL) -> None:
        vp, cp, i32 = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int32
        self.conf_new = _declare(lib, "rd_kafka_conf_new", vp, [])
        self.conf_set = _declare(
            lib, "rd_kafka_conf_set", ctypes.c_int, [vp, cp, cp, cp, ctypes.c_size_t]
        )
        self.conf_destroy = _declare(lib, "rd_kafka_conf_destroy", None, [vp])
        self.new = _declare(lib, "rd_kafka_new", vp, [ctypes.c_int, vp, cp, ctypes.c_size_t])
        self.destroy = _declare(lib, "rd_kafka_destroy", None, [vp])
        self.err2str = _declare(lib, "rd_kafka_err2str", cp, [ctypes.c_int])
        self.cluster_new = _declare(lib, "rd_kafka_mock_cluster_new", vp, [vp, ctypes.c_int])
        self.cluster_destroy = _declare(lib, "rd_kafka_mock_cluster_destroy", None, [vp])
        self.cluster_bootstraps = _declare(lib, "rd_kafka_mock_cluster_bootstraps", cp, [vp])
        self.topic_create = _declare(
            lib, "rd_kafka_mock_topic_create", ctypes.c_int, [vp, cp, ctypes.c_int, ctypes.c_int]
        )
        self.broker_set_down = _declare(
            lib, "rd_kafka_mock_broker_set_down", ctypes.c_int, [vp, i32]
        )
        self.broker_set_up = _declare(lib, "rd_kafka_mock_broker_set_up", ctypes.c_int, [vp, i32])
        self.group_initial_rebalance_delay_ms = _declare(
            lib, "rd_kafka_mock_group_initial_rebalance_delay_ms", None, [vp, i32]
        )
        # Exported by the pinned 2.16 binary but absent from older headers: optional.
        self.set_controller_id: Callable[..., Any] | None
        try:
            self.set_controller_id = _declare(
                lib, "rd_kafka_mock_set_controller_id", None, [vp, i32]
            )
        except AttributeError:
            self.set_controller_id = None

    def error_text(self, err: int) -> str:
        text: bytes | None = self.err2str(err)
        return text.decode(errors="replace") if text else f"error {err}"


def _declare(lib: ctypes.CDLL, name: str, restype: Any, argtypes: list[Any]) -> Callable[..., Any]:
    function: Any = getattr(lib, name)  # AttributeError when the symbol is missing
    function.restype = restype
    function.argtypes = argtypes
    declared: Callable[..., Any] = function
    return declared


def _library_path() -> str:
    # auditwheel puts the bundled librdkafka (with a hash in its name) next to the package.
    package_dir = os.path.dirname(confluent_kafka.__file__)
    pattern = os.path.join(package_dir, os.pardir, "confluent_kafka.libs", "librdkafka*")
    candidates = sorted(glob.glob(pattern))
    if not candidates:
        raise OSError(f"no bundled librdkafka matches {os.path.normpath(pattern)}")
    return candidates[0]


def _load_mock_api() -> _MockApi | None:
    try:
        return _MockApi(ctypes.CDLL(_library_path()))
    except (OSError, AttributeError) as exc:
        logger.warning(
            "librdkafka's mock API is unavailable (%s); hosting the cluster with "
            "test.mock.num.brokers instead (auto-created 4-partition topics, no broker down/up)",
            exc,
        )
        return None


class LocalBroker:
    """A mock Kafka cluster of ``num_brokers`` brokers, alive until :meth:`close`.

    Clients in any local process connect to :attr:`bootstrap_servers`. Without
    the C mock API (fallback mode) topics can only be auto-created, always with 4
    partitions, and brokers cannot be taken down.
    """

    kind = "mock"

    def __init__(self, num_brokers: int = 3) -> None:
        if num_brokers < 1:
            raise ValueError(f"num_brokers must be at least 1, got {num_brokers}")
        self._lock = threading.Lock()
        self._api = _load_mock_api()
        self._rk: int | None = None
        self._cluster: int | None = None
        self._producer: confluent_kafka.Producer | None = None
        self._closed = False
        if self._api is not None:
            self._bootstrap = self._start_native(self._api, num_brokers)
        else:
            self._bootstrap = self._start_fallback(num_brokers)

    def _start_native(self, api: _MockApi, num_brokers: int) -> str:
        errstr = ctypes.create_string_buffer(512)
        conf = api.conf_new()
        if not conf:
            raise RuntimeError("rd_kafka_conf_new failed")
        # The owning handle never connects anywhere, so its notice that no
        # bootstrap.servers is configured is noise; warnings and errors still show.
        api.conf_set(conf, b"log_level", b"4", errstr, len(errstr))
        rk = api.new(_RD_KAFKA_PRODUCER, conf, errstr, len(errstr))
        if not rk:
            api.conf_destroy(conf)  # rd_kafka_new takes ownership only on success
            raise RuntimeError(f"rd_kafka_new failed: {errstr.value.decode(errors='replace')}")
        cluster = api.cluster_new(rk, num_brokers)
        if not cluster:
            api.destroy(rk)
            raise RuntimeError("rd_kafka_mock_cluster_new failed")
        self._rk, self._cluster = rk, cluster
        # The mock's default 3 s delay before the first group rebalance slows every
        # test that starts a consumer group; real test brokers are set to 0 too.
        api.group_initial_rebalance_delay_ms(cluster, 0)
        if api.set_controller_id is not None:
            # Measured with librdkafka 2.16: by default the mock reports controller 0,
            # which is no broker, so AdminClient.create_topics waits the whole
            # request timeout ("Failed while waiting for controller"). With a real
            # controller id it fails at once with _UNSUPPORTED_FEATURE, which lets
            # cerfleet.fleet.topics fall back to auto-creation without the stall.
            api.set_controller_id(cluster, 1)
        bootstraps: bytes = api.cluster_bootstraps(cluster)
        return bootstraps.decode()

    def _start_fallback(self, num_brokers: int) -> str:
        # The producer's handle owns the cluster; it must stay alive as long as we do.
        self._producer = confluent_kafka.Producer({"test.mock.num.brokers": num_brokers})
        metadata = self._producer.list_topics(timeout=_METADATA_TIMEOUT_S)
        brokers = sorted(metadata.brokers.values(), key=lambda broker: broker.id)
        return ",".join(f"{broker.host}:{broker.port}" for broker in brokers)

    @property
    def bootstrap_servers(self) -> str:
        return self._bootstrap

    def create_topic(self, name: str, partitions: int, replication_factor: int = 1) -> None:
        """Create ``name``; an existing topic is left as it is, not an error."""
        if not name:
            raise ValueError("topic name must not be empty")
        # The C function does not validate: a negative count crashes the process.
        if partitions < 1 or replication_factor < 1:
            raise ValueError(
                f"partitions and replication_factor must be at least 1, "
                f"got {partitions} and {replication_factor}"
            )
        with self._lock:
            self._check_open()
            if self._api is not None:
                err = self._api.topic_create(
                    self._cluster, name.encode(), partitions, replication_factor
                )
                if err not in (_ERR_NO_ERROR, _ERR_TOPIC_ALREADY_EXISTS):
                    raise RuntimeError(f"cannot create topic {name!r}: {self._api.error_text(err)}")
                return
            self._auto_create(name, partitions)

    def _auto_create(self, name: str, partitions: int) -> None:
        assert self._producer is not None
        # A producer's metadata request for a named topic makes the mock create it.
        metadata = self._producer.list_topics(topic=name, timeout=_METADATA_TIMEOUT_S)
        topic = metadata.topics.get(name)
        if topic is None or topic.error is not None or not topic.partitions:
            reason = topic.error if topic is not None else "not in metadata"
            raise RuntimeError(f"cannot auto-create topic {name!r}: {reason}")
        if partitions != len(topic.partitions):
            logger.warning(
                "topic %r has %d partitions, not the %d asked for: without librdkafka's "
                "mock API topics can only be auto-created",
                name,
                len(topic.partitions),
                partitions,
            )

    def broker_down(self, broker_id: int) -> None:
        """Close broker ``broker_id``'s connections and refuse new ones (no leader change)."""
        self._set_broker(broker_id, up=False)

    def broker_up(self, broker_id: int) -> None:
        """Let broker ``broker_id`` accept connections again."""
        self._set_broker(broker_id, up=True)

    def _set_broker(self, broker_id: int, *, up: bool) -> None:
        with self._lock:
            self._check_open()
            if self._api is None:
                raise NotImplementedError(
                    "taking brokers down needs librdkafka's mock API, which could not be loaded"
                )
            set_state = self._api.broker_set_up if up else self._api.broker_set_down
            err = set_state(self._cluster, broker_id)
            if err != _ERR_NO_ERROR:
                raise RuntimeError(f"broker {broker_id}: {self._api.error_text(err)}")

    def close(self) -> None:
        """Shut the cluster down; clients still connected retry the dead ports forever."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._api is not None:
                # The cluster's brokers run on the handle's resources: cluster first.
                if self._cluster:
                    self._api.cluster_destroy(self._cluster)
                if self._rk:
                    self._api.destroy(self._rk)
                self._cluster = self._rk = None
            # Dropping the last reference destroys the handle and its cluster.
            self._producer = None

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("the local broker is closed")

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


class _Stop(Exception):
    """Raised by the signal handler to leave the command loop and close the cluster."""


def _on_signal(signum: int, frame: FrameType | None) -> None:
    # Ignore further signals so a second one cannot interrupt the cluster's shutdown.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, signal.SIG_IGN)
    raise _Stop(signal.Signals(signum).name)


def _topic_spec(text: str) -> tuple[str, int]:
    name, sep, partitions = text.rpartition(":")
    if not sep or not name or not partitions.isdigit() or int(partitions) < 1:
        raise argparse.ArgumentTypeError(f"expected NAME:PARTITIONS, got {text!r}")
    return name, int(partitions)


def _reply(line: str) -> None:
    sys.stdout.write(line.replace("\n", " ") + "\n")
    sys.stdout.flush()


def _execute(broker: LocalBroker, words: list[str]) -> None:
    command, args = words[0], words[1:]
    if command == "topic" and len(args) == 2 and args[1].isdigit():
        broker.create_topic(args[0], int(args[1]))
    elif command in ("down", "up") and len(args) == 1 and args[0].isdigit():
        if command == "down":
            broker.broker_down(int(args[0]))
        else:
            broker.broker_up(int(args[0]))
    else:
        raise ValueError("usage: topic NAME PARTITIONS | down ID | up ID | quit")


def _serve(broker: LocalBroker) -> None:
    while line := sys.stdin.readline():  # "" only at EOF: the parent has gone
        words = line.split()
        if not words:
            continue
        if words == ["quit"]:
            _reply("ok")
            return
        try:
            _execute(broker, words)
        except (ValueError, RuntimeError, NotImplementedError) as exc:
            _reply(f"error {exc}")
        else:
            _reply("ok")


def _start(num_brokers: int, topics: list[tuple[str, int]]) -> LocalBroker:
    broker = LocalBroker(num_brokers)
    try:
        for name, partitions in topics:
            broker.create_topic(name, partitions)
    except BaseException:
        broker.close()
        raise
    return broker


def main(argv: list[str] | None = None) -> int:
    """Host a local broker as a helper process driven through stdin and stdout.

    Prints ``bootstrap <address>`` once ready, then answers each command line
    (``topic NAME PARTITIONS``, ``down ID``, ``up ID``, ``quit``) with ``ok`` or
    ``error <message>``. Blank lines are ignored. Exits on ``quit``, at the end of
    stdin (so the helper dies with its parent) and on SIGTERM or SIGINT.
    """
    parser = argparse.ArgumentParser(
        prog="python -m cerfleet.fleet.local_broker",
        description="Host librdkafka's mock Kafka cluster for local development and tests.",
    )
    parser.add_argument("--brokers", type=int, default=3, metavar="N")
    parser.add_argument(
        "--topic",
        type=_topic_spec,
        action="append",
        default=[],
        metavar="NAME:PARTITIONS",
        help="create a topic before reporting ready (repeatable)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")

    previous: dict[signal.Signals, Any] = {}
    if threading.current_thread() is threading.main_thread():  # the only place handlers go
        previous = {sig: signal.signal(sig, _on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        try:
            broker = _start(args.brokers, args.topic)
        except (ValueError, RuntimeError) as exc:
            _reply(f"error {exc}")
            return 1
        with broker:
            _reply(f"bootstrap {broker.bootstrap_servers}")
            _serve(broker)
    except _Stop:
        pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
