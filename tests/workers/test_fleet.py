"""The fleet end to end over the Kafka protocol: coordinator and worker processes.

Every test compares the complex events delivered on the output topics with
the embedded engine's answer over the same events, as a multiset: a lost or a
repeated complex event fails it. The input topic has one partition, so input
offsets are the embedded run's positions.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from typing import Any

import orjson
import pytest
from confluent_kafka.admin import AdminClient

from benchmarks.datasets import stock, to_dicts
from benchmarks.fleet_workload import GLOBAL, PARTITIONED, QUERIES
from cerfleet.fleet.origins import Repeats
from cerfleet.fleet.registry import QuerySpec, write
from cerfleet.fleet.topics import TopicError, partition_count
from cerfleet.query import compile_query
from tests.fleet import Fleet, Process, TopicReader

PUBLISHED = "cerfleet_complex_events_out_total"
OWNED = "cerfleet_assigned_partitions"

N_EVENTS = 50_000

# A count window per key.
PER_KEY_EVENTS = """SELECT * FROM S WHERE BUY as a ; BUY as b ; SELL as c
FILTER a[price > 30] AND b[volume > 500] AND c[volume > 500]
PARTITION BY [name] WITHIN 10 EVENTS"""

# Correlations: one checked at enumeration, one tying both events to one name (an
# implicit key, which must not change the fleet's routing or the output's key).
RISING = """SELECT * FROM S WHERE SELL AS a ; SELL AS b
FILTER a[name = 'INTC'] AND b[name = 'INTC'] AND b[price] > a[price] * 1.01
WITHIN 2000 [stock_time]"""
SAME_NAME = """SELECT * FROM S WHERE BUY AS a ; SELL AS b
FILTER a[name] = b[name] AND a[volume > 500] AND b[volume] > a[volume]
WITHIN 1000 [stock_time]"""

Signature = tuple[Any, tuple[int, ...]]


@pytest.fixture(scope="module")
def events() -> list[dict[str, Any]]:
    return to_dicts(stock(N_EVENTS, seed=7))


def expected(query: str, events: list[dict[str, Any]]) -> Counter[Signature]:
    out = compile_query(query, time_field="stock_time").evaluator().process_batch(events)
    return Counter((None if ce.key is None else tuple(ce.key), ce.positions) for ce in out)


def delivered(values: list[dict[str, Any]], events: list[dict[str, Any]]) -> Counter[Signature]:
    got: Counter[Signature] = Counter()
    for v in values:
        offsets = tuple(s["offset"] for s in v["sources"])
        # The published events are the input events, byte for byte after JSON.
        assert v["events"] == [events[o] for o in offsets]
        got[(None if v["key"] is None else tuple(v["key"]), offsets)] += 1
    return got


def _lines(events: list[dict[str, Any]]) -> list[bytes]:
    return [orjson.dumps(e) for e in events]


def _check(
    readers: dict[str, TopicReader],
    queries: dict[str, str],
    events: list[dict[str, Any]],
    timeout: float,
) -> dict[str, int]:
    counts = {}
    for name, text in queries.items():
        want = expected(text, events)
        reader = readers[name]
        reader.wait_for(sum(want.values()), timeout)
        got = delivered(reader.values(), events)
        missing = want - got
        extra = got - want
        assert not missing and not extra, (
            f"{name}: {sum(missing.values())} missing, {sum(extra.values())} extra "
            f"of {sum(want.values())}"
        )
        # Each record is keyed by its complex event's PARTITION BY values (none without).
        for m in reader.records:
            record_key = m.key()
            assert (None if record_key is None else orjson.loads(record_key)) == orjson.loads(
                m.value()
            )["key"], name
        counts[name] = sum(want.values())
    return counts


def _produce_in_chunks(
    fleet: Fleet, topic: str, lines: list[bytes], chunks: int, pause: float
) -> threading.Thread:
    def run() -> None:
        size = -(-len(lines) // chunks)
        for i in range(0, len(lines), size):
            fleet.produce(topic, lines[i : i + size])
            time.sleep(pause)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_fleet_gives_the_embedded_answer(fleet: Fleet, events: list[dict[str, Any]]) -> None:
    queries = {
        **QUERIES,
        "per-key-events": PER_KEY_EVENTS,
        "rising": RISING,
        "same-name": SAME_NAME,
    }
    source, readers = _setup_with_time(fleet, queries)
    fleet.coordinator()
    fleet.worker()
    fleet.worker()
    fleet.produce(source, _lines(events))
    counts = _check(readers, queries, events, timeout=180)
    assert counts["partitioned"] > 1000 and counts["global"] > 100
    assert counts["rising"] > 10 and counts["same-name"] > 1000


def _setup_with_time(fleet: Fleet, queries: dict[str, str]) -> tuple[str, dict[str, TopicReader]]:
    source = fleet.topic("stock")
    readers = {}
    for name, text in queries.items():
        out = fleet.topic(f"out-{name}", 4)
        path = fleet.log_dir / f"{name}.ceql"
        path.write_text(text)
        done = fleet.cli(
            "submit", name, str(path), "-i", source, "-o", out, "--time-field", "stock_time"
        )
        assert done.returncode == 0, done.stderr
        readers[name] = fleet.reader(out, 4)
    return source, readers


def test_sigkill_three_times_loses_and_repeats_nothing(
    fleet: Fleet, events: list[dict[str, Any]]
) -> None:
    source, readers = _setup_with_time(fleet, QUERIES)
    fleet.coordinator()
    workers = [fleet.worker() for _ in range(3)]
    rng = random.Random(5)
    producer = _produce_in_chunks(fleet, source, _lines(events), chunks=10, pause=1.0)
    for kill in range(3):
        time.sleep(rng.uniform(1.0, 3.0))
        victim = rng.choice(_at_work(workers))
        assert kill or producer.is_alive(), "the first kill came after the last records"
        victim.kill()
        workers.remove(victim)
        workers.append(fleet.worker())
    producer.join()
    _check(readers, QUERIES, events, timeout=240)
    assert sum(w.metric("cerfleet_worker_recoveries_total") for w in workers) > 0


def _at_work(workers: list[Process], timeout: float = 60) -> list[Process]:
    """The live workers that own keyed partitions and have published complex events: a
    kill then strikes one with state to recover and outputs past its checkpoint."""
    deadline = time.monotonic() + timeout
    while True:
        busy = [w for w in workers if w.alive() and w.metric(OWNED) and w.metric(PUBLISHED)]
        if busy:
            return busy
        assert time.monotonic() < deadline, f"no worker owned and published in {timeout} s"
        time.sleep(0.05)


def test_rebalance_add_two_remove_one(fleet: Fleet, events: list[dict[str, Any]]) -> None:
    source, readers = _setup_with_time(fleet, QUERIES)
    fleet.coordinator()
    first = fleet.worker()
    producer = _produce_in_chunks(fleet, source, _lines(events), chunks=8, pause=1.0)
    time.sleep(1.5)
    first.wait_for_metric(PUBLISHED)  # the others join a worker at work
    second = fleet.worker()
    third = fleet.worker()
    time.sleep(2.5)
    if fleet.kafka.kind == "tansu":
        # The first worker leads the group; tansu stalls a group whose leader leaves in
        # the middle of a rebalance (TANSU_GAPS["leader-leaves"]), so there it leaves
        # only once the joins' rebalance is over. Elsewhere it may leave mid-rebalance.
        _wait_settled(fleet, [first, second, third], 60)
    assert first.terminate() == 0  # SIGTERM: drain, checkpoint, leave the group
    producer.join()
    _check(readers, QUERIES, events, timeout=240)
    assert second.alive() and third.alive()


def test_a_stalled_worker_loses_nothing_and_repeats_only_what_it_was_publishing(
    fleet: Fleet, events: list[dict[str, Any]]
) -> None:
    """A zombie: SIGSTOP for four session timeouts, so the group gives its partitions to
    the other worker, then SIGCONT while it still holds fetched records and state."""
    source, readers = _setup_with_time(fleet, QUERIES)
    fleet.coordinator()
    leader = fleet.worker()
    zombie = fleet.worker()  # not the group's leader: tansu cannot replace a lost leader
    producer = _produce_in_chunks(fleet, source, _lines(events), chunks=8, pause=1.0)
    # Stopped once it owns partitions and has evaluated and published some of their records
    # (a fixed delay stopped it, on a quiet machine, before its first assignment).
    zombie.wait_for_metric(PUBLISHED)
    zombie.pause()
    assert producer.is_alive(), "the zombie stopped after the last records were produced"
    time.sleep(0.1)
    # Every produce call the zombie made before it stopped was stamped (CreateTime) by now.
    stopped_ms = int(time.time() * 1000)
    time.sleep(8.0)  # session.timeout.ms is 2 s in these tests
    resumed_ms = int(time.time() * 1000)
    zombie.resume()
    producer.join()
    after_resume = sum(
        _zombie_repeats(name, readers[name], expected(text, events), events, stopped_ms, resumed_ms)
        for name, text in QUERIES.items()
    )
    # The one produce call that may have been under way when it stopped.
    assert after_resume <= 1, f"{after_resume} outputs repeated after the zombie resumed"
    assert leader.alive() and zombie.alive()
    assert "stalled for over a session timeout" in zombie.tail(100_000)


def _zombie_repeats(
    name: str,
    reader: TopicReader,
    want: Counter[Signature],
    events: list[dict[str, Any]],
    stopped_ms: int,
    resumed_ms: int,
) -> int:
    """Asserts that nothing is lost and that each repeat is one a zombie without
    transactions can make (README, "Rebalances never stall"); returns how many were made
    after it resumed.

    Its successor's copy was made (CreateTime) during the stall. The zombie's was either
    made before the stop and reached the broker only after it, so it lies in its output
    partition after a record made during the stall (one its producer held, unsent), or
    made after the resume (a produce call under way when the process stopped). A zombie
    publishing what it evaluated or fetched after resuming, or a successor repeating an
    output that was in the log when it took over, fails this."""
    reader.wait_for(sum(want.values()), 240)
    got = delivered(reader.values(), events)
    missing = want - got
    assert not missing, f"{name}: {sum(missing.values())} missing of {sum(want.values())}"
    copies: dict[Signature, list[tuple[int, int, int]]] = {}
    # Per output partition, the first offset of a record made after the stop.
    after_stop: dict[int, int] = {}
    for m in reader.records:
        v = orjson.loads(m.value())
        sig = (
            None if v["key"] is None else tuple(v["key"]),
            tuple(s["offset"] for s in v["sources"]),
        )
        made = m.timestamp()[1]
        copies.setdefault(sig, []).append((m.partition(), m.offset(), made))
        if made > stopped_ms:
            after_stop[m.partition()] = min(after_stop.get(m.partition(), m.offset()), m.offset())
    unexplained, after_resume = [], 0
    for sig, extra in (got - want).items():
        made_later = [c for c in copies[sig] if c[2] > stopped_ms]
        in_flight = [
            c for c in copies[sig] if c[2] <= stopped_ms and c[1] > after_stop.get(c[0], c[1])
        ]
        resumed = [c for c in made_later if c[2] >= resumed_ms]
        if (want[sig], extra) != (1, 1):
            unexplained.append((sig, copies[sig]))
        elif len(in_flight) == 1 and len(made_later) == 1:
            pass
        elif len(made_later) == 2 and len(resumed) == 1:
            after_resume += 1
        else:
            unexplained.append((sig, copies[sig]))
    assert not unexplained, (
        f"{name}: {len(unexplained)} repeats a zombie cannot explain (stopped at "
        f"{stopped_ms} ms, resumed at {resumed_ms}), e.g. {unexplained[:3]}"
    )
    # A reader dropping records by their origin (`cerfleet consume --unique`) reads each
    # complex event once.
    repeats = Repeats()
    unique = [
        orjson.loads(m.value())
        for m in reader.records
        if not repeats.repeat(m.partition(), m.headers())
    ]
    assert delivered(unique, events) == want, name
    assert repeats.dropped == sum((got - want).values())
    return after_resume


def _wait_settled(fleet: Fleet, workers: list[Process], timeout: float) -> None:
    """Until every worker owns (and has restored) some keyed partitions and together they
    own them all: no rebalance is under way."""
    prefix = fleet.env["CERFLEET_KEYED_TOPIC_PREFIX"]
    deadline = time.monotonic() + timeout
    while True:
        topics = AdminClient(fleet.kafka.client_config()).list_topics(timeout=10).topics
        total = sum(len(t.partitions) for name, t in topics.items() if name.startswith(prefix))
        owned = [w.metric("cerfleet_assigned_partitions") for w in workers]
        if all(owned) and sum(owned) == total:
            return
        assert time.monotonic() < deadline, f"unsettled after {timeout} s: {owned} of {total}"
        time.sleep(0.2)


def test_workers_join_and_leave_in_rounds(fleet: Fleet, events: list[dict[str, Any]]) -> None:
    """Three rounds of one worker joining and the oldest leaving (SIGTERM), the group
    leader included, while events flow."""
    source, readers = _setup_with_time(fleet, QUERIES)
    fleet.coordinator()
    workers = [fleet.worker(), fleet.worker()]
    producer = _produce_in_chunks(fleet, source, _lines(events), chunks=10, pause=1.0)
    for _ in range(3):
        time.sleep(1.5)
        workers.append(fleet.worker())
        # Leave once the join's rebalance is over: on tansu a leader leaving in the
        # middle of one stalls the group for good (a broker gap, not the fleet's).
        _wait_settled(fleet, workers, 60)
        assert workers.pop(0).terminate() == 0
    producer.join()
    _check(readers, QUERIES, events, timeout=240)
    assert all(w.alive() for w in workers)


def test_poison_messages_go_to_the_dead_letter_topic(
    fleet: Fleet, events: list[dict[str, Any]]
) -> None:
    queries = {"partitioned": PARTITIONED}
    source, readers = _setup_with_time(fleet, queries)
    fleet.coordinator()
    fleet.worker()
    rng = random.Random(11)
    lines = []
    good_events = []
    bad = 0
    poison = [
        b"{not json",
        b'["an", "array"]',
        b'{"name": "INTC", "price": 1.0}',  # no type field
        b'{"type": 7, "name": "INTC"}',
    ]
    for event in events[:20_000]:
        if rng.random() < 0.01:
            lines.append(rng.choice(poison))
            bad += 1
        lines.append(orjson.dumps(event))
        good_events.append(event)
    dead = fleet.reader(fleet.dead_letter_topic)
    fleet.produce(source, lines)
    # Positions in the expected answer are offsets in the mixed stream.
    offsets = [i for i, line in enumerate(lines) if line not in poison]
    want = expected(PARTITIONED, good_events)
    want = Counter({(k, tuple(offsets[p] for p in pos)): n for (k, pos), n in want.items()})
    reader = readers["partitioned"]
    reader.wait_for(sum(want.values()), 120)
    by_offset = dict(zip(offsets, good_events, strict=True))
    got = delivered(reader.values(), [by_offset.get(i, {}) for i in range(len(lines))])
    assert got == want
    dead.wait_for(bad, 60, settle=1.0)
    dead_offsets = {orjson.loads(dict(m.headers())["cerfleet-src"])[2] for m in dead.records}
    assert dead_offsets == {i for i, line in enumerate(lines) if line in poison}
    assert all(dict(m.headers()).get("cerfleet-error") for m in dead.records)


@pytest.mark.tansu_gap("abort-visible")
def test_transactional_workers_survive_a_crash(fleet: Fleet, events: list[dict[str, Any]]) -> None:
    """With ``--transactions`` outputs, checkpoints and offsets commit together on brokers
    that implement transactions, and on a broker without their semantics (the mock) the
    answer stays exact too.

    Not on tansu: the killed worker's open transaction is aborted by its successor, and
    tansu then shows the aborted outputs to read_committed readers. The successor's
    read_committed scan sees them, and skips them, only if no other worker's open
    transaction on the same output partition starts before them; when one does (the
    PARTITION BY query's output partitions have several writers), the scan ends at that
    transaction's first record, the successor publishes those outputs again (as it must
    on Kafka, which hides them), and tansu's readers see both copies."""
    source, readers = _setup_with_time(fleet, QUERIES)
    fleet.coordinator()
    first = fleet.worker("--transactions")
    second = fleet.worker("--transactions")
    producer = _produce_in_chunks(fleet, source, _lines(events), chunks=6, pause=1.0)
    time.sleep(2.5)
    first.wait_for_metric(PUBLISHED)  # killed at work, not before its first assignment
    assert producer.is_alive(), "the kill came after the last records"
    first.kill()
    fleet.worker("--transactions")
    producer.join()
    _check(readers, QUERIES, events, timeout=240)
    assert second.alive()


def test_a_query_whose_output_topic_is_missing_does_not_stop_the_workers(
    fleet: Fleet, events: list[dict[str, Any]]
) -> None:
    """Registered without its output topic (``submit`` creates it, but the registry may be
    older, or the topic deleted since): the first worker to publish creates it."""
    source = fleet.topic("stock")
    out = f"{fleet.prefix}.no-such-out"
    spec = QuerySpec(
        name="partitioned",
        ceql=PARTITIONED,
        input_topics=(source,),
        output_topic=out,
        time_field="stock_time",
    )
    write(fleet.kafka.client_config(), fleet.env["CERFLEET_REGISTRY_TOPIC"], spec.name, spec)
    fleet.coordinator()
    workers = [fleet.worker(), fleet.worker()]
    some = events[:20_000]
    fleet.produce(source, _lines(some))
    deadline = time.monotonic() + 60
    while True:
        try:
            partitions = partition_count(fleet.kafka.client_config(), out)
            break
        except TopicError:
            assert all(w.alive() for w in workers), [w.tail() for w in workers]
            assert time.monotonic() < deadline, "the output topic was never created"
            time.sleep(0.2)
    _check({"partitioned": fleet.reader(out, partitions)}, {"partitioned": PARTITIONED}, some, 120)
    assert all(w.alive() for w in workers), [w.tail() for w in workers]


@pytest.mark.real_kafka
def test_transactions_hide_outputs_until_the_checkpoint_commits(
    fleet: Fleet, events: list[dict[str, Any]]
) -> None:
    """On a broker with transaction semantics, read_committed consumers see a worker's
    outputs only once the checkpoint round that covers them has committed."""
    source, readers = _setup_with_time(fleet, {"global": GLOBAL})
    fleet.coordinator()
    fleet.worker("--transactions", "--checkpoint-interval", "20")
    committed = readers["global"]
    out_topic = f"{fleet.prefix}.out-global"
    uncommitted = fleet.reader(out_topic, 4, isolation="read_uncommitted")
    fleet.produce(source, _lines(events[:20_000]))
    uncommitted.wait_for(1, 15, settle=0.5)
    committed.poll(1.0)
    assert uncommitted.records and not committed.records
    want = expected(GLOBAL, events[:20_000])
    committed.wait_for(sum(want.values()), 60)
    assert delivered(committed.values(), events) == want
