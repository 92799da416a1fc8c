"""Untrusted queries and records against real coordinator and worker processes: a
flooding query is cut without starving its neighbours."""

from __future__ import annotations

from collections import Counter

import orjson
from confluent_kafka import Producer

from cerfleet.fleet.registry import QuerySpec, write
from cerfleet.query import compile_query
from tests.fleet import Fleet

FLOOD = "SELECT * FROM S WHERE A+"  # 2^(n-1) complex events end at the n-th A
NORMAL = "SELECT * FROM S WHERE A ; B WITHIN 4 EVENTS"
CAP = 20


def _submit(fleet: Fleet, name: str, ceql: str, source: str, *extra: str) -> str:
    out = fleet.topic(f"out-{name}")
    path = fleet.log_dir / f"{name}.ceql"
    path.write_text(ceql)
    done = fleet.cli("submit", name, str(path), "-i", source, "-o", out, *extra)
    assert done.returncode == 0, done.stderr
    return out


def test_a_flooding_query_is_cut_its_neighbour_is_whole(fleet: Fleet) -> None:
    source = fleet.topic("in")
    # The cap is registered with the query: a worker's own setting (here far higher)
    # applies only to records that carry none, so every worker cuts at the same place.
    flood_out = _submit(
        fleet, "flood", FLOOD, source, "--allow-unbounded", "--max-outputs-per-event", str(CAP)
    )
    normal_out = _submit(fleet, "normal", NORMAL, source)
    fleet.coordinator()
    worker = fleet.worker("--max-outputs-per-event", "1000")
    events = [{"type": "A", "i": i} for i in range(12)] + [{"type": "B", "i": 12}] * 2
    fleet.produce(source, [orjson.dumps(e) for e in events])

    want = compile_query(NORMAL).evaluator().process_batch(events)
    normal = fleet.reader(normal_out)
    normal.wait_for(len(want), 60, settle=0.5)
    got = Counter(tuple(s["offset"] for s in v["sources"]) for v in normal.values())
    assert got == Counter(ce.positions for ce in want)
    assert not any("truncated" in v for v in normal.values())

    # The i-th A ends 2^i complex events: 1 + 2 + 4 + 8 + 16 whole, then CAP each.
    per_event = [min(2**i, CAP) for i in range(12)]
    flood = fleet.reader(flood_out)
    flood.wait_for(sum(per_event), 60, settle=0.5)
    values = flood.values()
    ends = Counter(v["sources"][-1]["offset"] for v in values)
    assert [ends[i] for i in range(12)] == per_event
    flagged = sorted(v["sources"][-1]["offset"] for v in values if v.get("truncated"))
    assert flagged == list(range(5, 12))  # one flag per cut event
    assert worker.metric("cerfleet_worker_truncated_events_total") == 7
    _, text = worker.get("/metrics")
    assert 'cerfleet_query_seconds_total{query="flood"}' in text
    assert 'cerfleet_query_seconds_total{query="normal"}' in text
    assert "query 'flood' made one event emit more than 20" in worker.tail(20_000)
    assert worker.alive()


def test_oversized_and_deep_records_are_dead_letters_and_nothing_stops(fleet: Fleet) -> None:
    """A record over the default max_event_bytes (512 KiB) and one nested 10,000 levels
    deep, among good ones, and a registry record over the limits written past ``submit``:
    dead letters and a log line, and the processes go on. The oversized record is 20 MB
    on a real broker (the test's producer raises message.max.bytes to carry it); the
    local mock broker dropped the partition's whole log on a 20 MB record (its start offset
    moved past every record), so 2 MB there, still four times the limit."""
    source = fleet.topic("in")
    out = _submit(fleet, "normal", NORMAL, source)
    # Straight into the registry, as a client bypassing `submit` could.
    too_deep = "SELECT * FROM S WHERE " + " ; ".join(f"A{i}" for i in range(500))
    bad = QuerySpec.model_construct(
        name="bad",
        ceql=too_deep,
        input_topics=(source,),
        output_topic=out,
        type_field="type",
        time_field="timestamp",
    )
    write(fleet.kafka.client_config(), fleet.env["CERFLEET_REGISTRY_TOPIC"], "bad", bad)
    coordinator = fleet.coordinator()
    worker = fleet.worker()
    dead = fleet.reader(fleet.dead_letter_topic)
    size = (2 if fleet.kafka.kind == "mock" else 20) * 1024 * 1024
    huge = b'{"type": "A", "s": "' + b"x" * size + b'"}'
    deep = b'{"type": "A", "x": ' + b"[" * 10_000 + b"]" * 10_000 + b"}"
    lines = [b'{"type": "A"}', huge, deep, b'{"type": "B"}', b'{"type": "B"}']
    producer = Producer({**fleet.kafka.client_config(), "message.max.bytes": str(30 * 2**20)})
    for line in lines:
        producer.produce(source, value=line)
    assert producer.flush(60) == 0

    normal = fleet.reader(out)
    normal.wait_for(2, 60, settle=0.5)
    got = sorted(tuple(s["offset"] for s in v["sources"]) for v in normal.values())
    assert got == [(0, 3), (0, 4)]
    dead.wait_for(2, 60, settle=0.5)
    letters = {
        orjson.loads(dict(m.headers())["cerfleet-src"])[2]: (
            dict(m.headers())["cerfleet-error"].decode(),
            m.value(),
        )
        for m in dead.records
    }
    assert set(letters) == {1, 2}
    assert letters[1][0] == f"record of {len(huge)} bytes is over the limit of {512 * 1024}"
    assert letters[1][1] is None  # headers only: the value would not fit the topic
    assert letters[2] == ("nested more than 64 levels deep", deep)
    assert coordinator.metric("cerfleet_dead_letters_total") == 2
    assert coordinator.alive() and worker.alive()
    for proc in (coordinator, worker):
        assert "registry record" in proc.tail(20_000) and "nested too deeply" in proc.tail(20_000)
