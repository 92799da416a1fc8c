"""A worker run in this process (the coordinator is a child process as usual), for what
needs a hook into it: an output topic that the broker refuses to create.

The answer is checked as in ``test_fleet``: the complex events delivered, as a
multiset, must equal the embedded engine's over the same events.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import orjson
import pytest
from confluent_kafka import Producer

from benchmarks.datasets import stock, to_dicts
from benchmarks.fleet_workload import GLOBAL, PARTITIONED
from cerfleet.fleet.registry import QuerySpec, write
from cerfleet.fleet.settings import WorkerSettings
from cerfleet.fleet.topics import TopicError, partition_count
from cerfleet.workers import worker as worker_module
from cerfleet.workers.worker import Worker
from tests.fleet import FAST_GROUPS, Fleet, TopicReader
from tests.workers.test_fleet import delivered, expected

N_EVENTS = 20_000


@pytest.fixture(scope="module")
def events() -> list[dict[str, Any]]:
    return to_dicts(stock(N_EVENTS, seed=3))


@pytest.fixture
def start_worker(fleet: Fleet) -> Iterator[Callable[[], InProcessWorker]]:
    started: list[InProcessWorker] = []

    def start() -> InProcessWorker:
        started.append(InProcessWorker(fleet))
        return started[-1]

    yield start
    for worker in started:
        worker.stop.set()
    for worker in started:
        worker.thread.join(60)


class Refusal:
    """Makes the worker's topic creation fail for some topics, as a broker without the
    permission to create them would, until ``allow``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, topics: set[str]) -> None:
        self.topics = topics
        self.refused = 0
        real = worker_module.ensure_topics

        def ensure(config: dict[str, str], wanted: Mapping[str, int], **kwargs: Any) -> None:
            if self.topics & set(wanted):
                self.refused += 1
                raise TopicError("CreateTopics: TOPIC_AUTHORIZATION_FAILED (refused by the test)")
            real(config, wanted, **kwargs)

        monkeypatch.setattr(worker_module, "ensure_topics", ensure)

    def allow(self) -> None:
        self.topics = set()


class InProcessWorker:
    """``Worker.run`` on a thread of this process, stopped as SIGTERM would stop it."""

    def __init__(self, fleet: Fleet) -> None:
        settings = WorkerSettings(
            bootstrap_servers=fleet.kafka.bootstrap_servers,
            registry_topic=fleet.env["CERFLEET_REGISTRY_TOPIC"],
            keyed_topic_prefix=fleet.env["CERFLEET_KEYED_TOPIC_PREFIX"],
            dead_letter_topic=fleet.env["CERFLEET_DEAD_LETTER_TOPIC"],
            consumer=FAST_GROUPS,
            group_id=f"{fleet.prefix}-workers",
            checkpoint_interval=0.5,
        )
        self.worker = Worker(settings)
        self.worker.missing_topic_retry = 0.5
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="worker", daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 60
        while not self.worker.ready:
            assert self.thread.is_alive() and time.monotonic() < deadline, self.error
            time.sleep(0.05)

    def _run(self) -> None:
        try:
            self.worker.run(self.stop)
        except BaseException as exc:
            self.error = exc

    def alive(self) -> bool:
        return self.thread.is_alive()

    def metric(self, name: str, **labels: str) -> float:
        return self.worker.metrics.registry.get_sample_value(name, labels) or 0.0

    def close(self) -> None:
        self.stop.set()
        self.thread.join(60)
        assert not self.thread.is_alive(), "the worker did not stop"
        assert self.error is None, self.error


def register(fleet: Fleet, name: str, ceql: str, source: str, output: str) -> None:
    # Straight into the registry: `submit` would create the output topic.
    spec = QuerySpec(
        name=name,
        ceql=ceql,
        input_topics=(source,),
        output_topic=output,
        time_field="stock_time",
    )
    write(fleet.kafka.client_config(), fleet.env["CERFLEET_REGISTRY_TOPIC"], name, spec)


def wait_for_topic(fleet: Fleet, topic: str, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    while True:
        try:
            return partition_count(fleet.kafka.client_config(), topic)
        except TopicError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def wait_until(condition: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not after {timeout} s: {what}"
        time.sleep(0.1)


def check(reader: TopicReader, query: str, events: list[dict[str, Any]], timeout: float) -> None:
    want = expected(query, events)
    reader.wait_for(sum(want.values()), timeout)
    got = delivered(reader.values(), events)
    assert got == want, (
        f"{sum((want - got).values())} missing, {sum((got - want).values())} extra "
        f"of {sum(want.values())}"
    )


def lines(events: list[dict[str, Any]]) -> list[bytes]:
    return [orjson.dumps(e) for e in events]


@pytest.mark.parametrize("unblocked_by", ["retry", "successor"])
def test_an_output_topic_that_cannot_be_created_pauses_only_its_partitions(
    fleet: Fleet,
    start_worker: Callable[[], InProcessWorker],
    events: list[dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    unblocked_by: str,
) -> None:
    """The worker stays up and healthy, keeps publishing the other queries' outputs,
    reports the topic, and once the topic can be created (by itself on a retry, or by
    the worker taking over after it stopped) every output is published exactly once."""
    caplog.set_level(logging.INFO, logger="cerfleet.workers.worker")
    source = fleet.topic("stock")
    ok_out = fleet.topic("out-global", 4)
    missing_out = f"{fleet.prefix}.out-partitioned"
    register(fleet, "global", GLOBAL, source, ok_out)
    register(fleet, "partitioned", PARTITIONED, source, missing_out)
    refusal = Refusal(monkeypatch, {missing_out})
    fleet.coordinator()
    first = start_worker()
    half = len(events) // 2
    fleet.produce(source, lines(events[:half]))

    # The other query's keyed partitions are not held up.
    check(fleet.reader(ok_out, 4), GLOBAL, events[:half], timeout=90)
    blocked = "cerfleet_worker_blocked_partitions"
    wait_until(lambda: first.metric(blocked) > 0, 30, "a keyed partition paused")
    assert first.alive()
    ok, reason = first.worker.health()
    assert ok, reason  # a liveness probe restarting the worker would not help
    assert missing_out in reason and "TOPIC_AUTHORIZATION_FAILED" in reason
    wait_until(lambda: refusal.refused >= 2, 30, "creation retried")
    assert first.metric("cerfleet_worker_output_topic_errors_total", topic=missing_out) >= 2
    assert f"output topic '{missing_out}' is missing and could not be created" in caplog.text
    with pytest.raises(TopicError):
        partition_count(fleet.kafka.client_config(), missing_out)

    refusal.allow()
    if unblocked_by == "retry":
        worker = first
    else:
        first.close()  # its checkpoint must not claim the records it did not evaluate
        worker = start_worker()
    fleet.produce(source, lines(events[half:]))
    partitions = wait_for_topic(fleet, missing_out, 60)
    check(fleet.reader(missing_out, partitions), PARTITIONED, events, timeout=120)
    check(fleet.reader(ok_out, 4), GLOBAL, events, timeout=60)
    assert worker.metric(blocked) == 0
    ok, reason = worker.worker.health()
    assert ok and "paused" not in reason, reason
    worker.close()


class StallingProducer:
    """The worker's producer, which makes the process look as if it stood still for an
    hour during the ``at``-th output to ``topic``, and counts the outputs handed over
    after that before the worker saw the stall (``leaked``; ``seen`` is set by the test).

    ``noticed_by`` says how the stall shows: ``"tick"``, the stall ticker's last tick an
    hour old (it has not ticked since the process resumed); ``"ticker"``, the ticker
    ticked first and flagged it (its last tick is recent)."""

    def __init__(self, real: Producer, topic: str, at: int, noticed_by: str) -> None:
        self.real, self.topic, self.at, self.noticed_by = real, topic, at, noticed_by
        self.worker: Worker | None = None
        self.calls = self.leaked = 0
        self.stalled = self.seen = False

    def produce(self, topic: str, *args: Any, **kwargs: Any) -> None:
        if topic == self.topic and self.worker is not None:
            self.calls += 1
            self.leaked += self.stalled and not self.seen
            if self.calls == self.at:
                if self.noticed_by == "tick":
                    self.worker._last_tick -= 3600
                else:
                    self.worker._stalled, self.worker._last_tick = True, time.monotonic()
                self.stalled = True
        self.real.produce(topic, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


@pytest.mark.parametrize("noticed_by", ["tick", "ticker"])
def test_a_stall_noticed_while_publishing_stops_the_batch_and_repeats_nothing(
    fleet: Fleet,
    start_worker: Callable[[], InProcessWorker],
    events: list[dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    noticed_by: str,
) -> None:
    """The process stands still in the middle of publishing a batch's outputs: the next
    output is not published, every partition is restored (the group still says it owns
    them) and replayed from its checkpoint, and each complex event is published once."""
    caplog.set_level(logging.INFO, logger="cerfleet.workers.stalls")
    source = fleet.topic("stock")
    out = fleet.topic("out-partitioned", 4)
    register(fleet, "partitioned", PARTITIONED, source, out)
    made: list[StallingProducer] = []

    def producer(config: dict[str, Any]) -> StallingProducer:
        made.append(StallingProducer(Producer(config), out, at=20, noticed_by=noticed_by))
        return made[-1]

    monkeypatch.setattr(worker_module, "Producer", producer)
    coordinator = fleet.coordinator()
    # Every record is copied to the keyed topic before the worker starts: its first
    # batches are full ones, each with far more than 20 outputs.
    fleet.produce(source, lines(events))
    routed = "cerfleet_coordinator_routed_total"
    wait_until(lambda: coordinator.metric(routed) >= len(events), 60, "every event routed")
    worker = start_worker()
    (stalling,) = made
    stalling.worker = worker.worker
    check_stall = worker.worker._check_stall

    def seeing() -> bool:
        stalled = check_stall()
        stalling.seen |= stalled
        return stalled

    worker.worker._check_stall = seeing  # type: ignore[method-assign]
    check(fleet.reader(out, 4), PARTITIONED, events, timeout=120)
    assert stalling.stalled and stalling.seen, "no stall was simulated"
    assert stalling.leaked == 0, f"{stalling.leaked} outputs published after the stall"
    assert "still the owner after the stall" in caplog.text
    worker.close()
