"""The per-query time budget against real coordinator and worker processes: a slow query
is suspended, its neighbour is served whole, the suspension survives a SIGKILL at the
same offset with every output exactly once, and a new version runs again.

The slow query is slow by construction, not by luck: a 160-step sequence keeps 160
automaton states live on every event and a window of 1,000 events keeps their runs
(about 0.4 ms per event here, some 200 times the normal query's cost; with a window of
100 events it was 0.14 ms, and a batch had to hold some 1,800 records to go over)
while its other branch emits small complex events; the worker's budget is 0.25 s per
batch, so a batch of a few hundred records is over it for the slow query and far
within it for the normal one."""

from __future__ import annotations

import re
import time
from collections import Counter
from typing import Any

import orjson
import pytest

from cerfleet.query import compile_query
from cerfleet.workers.outputs import parse_origin
from tests.fleet import Fleet, Process, TopicReader

HEAVY = " ; ".join(["A"] * 160)
SLOW = f"SELECT * FROM S WHERE ({HEAVY} ; Z) OR (B ; C) WITHIN 1000 EVENTS"
NORMAL = "SELECT * FROM S WHERE A ; B WITHIN 3 EVENTS"
NEW = "SELECT * FROM S WHERE B ; C WITHIN 2 EVENTS"
BUDGET = "0.25"
SUSPENDED = re.compile(r"slow \(version (\d+)\) on (\S+)\[(\d+)\] from offset (\d+): ([^;\"]+)")


def _events(n: int) -> list[dict[str, Any]]:
    return [{"type": "B" if i % 100 == 98 else "C" if i % 100 == 99 else "A"} for i in range(n)]


def _submit(fleet: Fleet, name: str, ceql: str, source: str, out: str) -> None:
    path = fleet.log_dir / f"{name}-{fleet.id}-{len(ceql)}.ceql"
    path.write_text(ceql)
    done = fleet.cli("submit", name, str(path), "-i", source, "-o", out)
    assert done.returncode == 0, done.stderr


def _positions(ceql: str, events: list[dict[str, Any]], first: int = 0) -> Counter[Any]:
    ces = (
        compile_query(ceql)
        .evaluator()
        .process_batch(events, list(range(first, first + len(events))))
    )
    return Counter(ce.positions for ce in ces)


def _got(reader: TopicReader, version: int | None = None) -> Counter[Any]:
    out: Counter[Any] = Counter()
    for msg in reader.records:
        if version is not None:
            (origin,) = [v for k, v in msg.headers() if k == "cerfleet-origin"]
            if parse_origin(origin)[3] != version:
                continue
        doc = orjson.loads(msg.value())
        assert [s["offset"] for s in doc["sources"]] == doc["positions"]
        out[tuple(doc["positions"])] += 1
    return out


def _suspension(worker: Process, timeout: float = 60) -> tuple[int, int, str]:
    """(version, offset, reason) of the slow query's suspension on ``worker``'s /healthz."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status, body = worker.get("/healthz")
        found = SUSPENDED.search(body)
        if status == 200 and found:
            return int(found[1]), int(found[4]), found[5]
        time.sleep(0.2)
    raise AssertionError(f"no suspension on /healthz: {worker.get('/healthz')}\n{worker.tail()}")


def _wait(reader: TopicReader, want: Counter[Any], timeout: float = 120) -> None:
    reader.wait_for(sum(want.values()), timeout, settle=1.0)


@pytest.mark.parametrize("transactions", [False, True], ids=["plain", "transactions"])
def test_a_slow_query_is_suspended_durably_and_its_neighbour_goes_on(
    fleet: Fleet, transactions: bool
) -> None:
    """With transactions the checkpoint recording the suspension commits the partition's
    transaction, outputs included."""
    args = ["--query-time-budget", BUDGET, *(["--transactions"] if transactions else [])]
    source = fleet.topic("in")
    slow_out, normal_out = fleet.topic("out-slow"), fleet.topic("out-normal")
    _submit(fleet, "slow", SLOW, source, slow_out)
    _submit(fleet, "normal", NORMAL, source, normal_out)
    coordinator = fleet.coordinator()
    slow, normal = fleet.reader(slow_out), fleet.reader(normal_out)
    events = _events(3000)
    fleet.produce(source, [orjson.dumps(e) for e in events])
    # The worker starts once every record is routed, so its first batches are large: a
    # worker already waiting would take them as the coordinator routes them, possibly in
    # batches too small to go over the budget.
    deadline = time.monotonic() + 60
    while coordinator.metric("cerfleet_coordinator_routed_total") < len(events):
        assert time.monotonic() < deadline, coordinator.tail()
        time.sleep(0.2)
    worker = fleet.worker(*args)

    version, stop, reason = _suspension(worker)
    assert 0 < stop <= len(events) and "over the budget of 0.25 s" in reason
    assert worker.metric("cerfleet_worker_suspended_queries") == 1
    _, text = worker.get("/metrics")
    assert 'cerfleet_worker_suspended_queries{query="slow"} 1.0' in text
    assert f"query 'slow' (version {version}) suspended from offset {stop}" in worker.tail(50_000)
    _wait(normal, _positions(NORMAL, events))
    assert _got(normal) == _positions(NORMAL, events)

    # More records, then a crash: the successor restores the recorded suspension.
    more = _events(1000)
    before = len(normal.records)
    fleet.produce(source, [orjson.dumps(e) for e in more])
    events += more
    while len(normal.records) == before:  # killed once its first outputs are out, so
        normal.poll(0.05)  # the successor likely replays past the last checkpoint
    worker.kill()
    successor = fleet.worker(*args)
    assert _suspension(successor)[:2] == (version, stop)
    more = _events(1000)
    fleet.produce(source, [orjson.dumps(e) for e in more])
    events += more
    _wait(normal, _positions(NORMAL, events))
    slow.poll(2.0)
    # Exactly once: each query's complex events, each once; the slow one's end below
    # the offset it was suspended from, all of them there.
    assert _got(normal) == _positions(NORMAL, events)
    want_slow = Counter({p: n for p, n in _positions(SLOW, events).items() if p[-1] < stop})
    assert want_slow and _got(slow) == want_slow
    assert successor.metric("cerfleet_worker_suspended_queries") == 1

    # A new version of the query runs again, from its own state.
    _submit(fleet, "slow", NEW, source, slow_out)
    deadline = time.monotonic() + 60
    while "(registry offset 3)" not in coordinator.tail(50_000):
        assert time.monotonic() < deadline, coordinator.tail()
        time.sleep(0.2)
    first = len(events)
    last = _events(500)
    fleet.produce(source, [orjson.dumps(e) for e in last])
    events += last
    want_new = _positions(NEW, last, first)
    slow.wait_for(sum(want_slow.values()) + sum(want_new.values()), 120, settle=1.0)
    new_version = max(
        parse_origin(v)[3] for m in slow.records for k, v in m.headers() if k == "cerfleet-origin"
    )
    assert new_version > version
    assert _got(slow, new_version) == want_new
    assert _got(slow, version) == want_slow
    assert "slow (version" not in successor.get("/healthz")[1]
    assert successor.metric("cerfleet_worker_suspended_queries") == 0
    assert successor.alive() and coordinator.alive()
