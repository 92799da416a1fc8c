"""Compaction over a topic on the test broker, then backfills from the archive, from the
topic directly, and to a topic."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from confluent_kafka import Producer

from benchmarks.datasets import stock, to_dicts
from benchmarks.fleet_workload import GLOBAL
from cerfleet.workers.backfill import backfill_job, compact_job
from cerfleet.workers.backfill.kafka_ranges import plan_ranges
from tests.kafka_broker import KafkaBroker

EVENTS = 12_000
PARTITIONS = 3
TIME_FIELD = "stock_time"
BAD_LINES = [b"{not json", b"[1, 2]", b'{"name": "no type"}']


def _produce(kafka: KafkaBroker, topic: str, values: list[bytes]) -> None:
    producer = Producer({**kafka.client_config(), "linger.ms": "5"})
    for i, value in enumerate(values):
        # Round robin, with a timestamp per record: the archive dates come from it.
        producer.produce(
            topic, value=value, partition=i % PARTITIONS, timestamp=1_700_000_000_000 + i
        )
    assert producer.flush(60) == 0


def _summary(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    lines = [x for x in capsys.readouterr().out.splitlines() if x.startswith('{"summary"')]
    return json.loads(lines[-1])["summary"]


@pytest.fixture(scope="module")
def events() -> list[dict[str, Any]]:
    return to_dicts(stock(EVENTS))


@pytest.fixture(scope="module")
def loaded_topic(kafka: KafkaBroker, events: list[dict[str, Any]]) -> str:
    import uuid

    topic = f"stock-{uuid.uuid4().hex[:8]}"
    kafka.create_topic(topic, PARTITIONS)
    _produce(kafka, topic, [orjson.dumps(e) for e in events] + BAD_LINES)
    return topic


def _compact(kafka: KafkaBroker, topic: str, archive: Path, *extra: str) -> int:
    return compact_job.main(
        [
            "--archive",
            str(archive),
            "--topic",
            topic,
            "--bootstrap-servers",
            kafka.client_config()["bootstrap.servers"],
            "--max-records-per-task",
            "1500",
            *extra,
        ]
    )


def test_the_archive_holds_each_record_once_however_often_compacted(
    spark: Any,
    kafka: KafkaBroker,
    loaded_topic: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    messages = kafka.read_topic(loaded_topic)
    assert len(messages) == EVENTS + len(BAD_LINES)
    archive = tmp_path / "archive"

    assert _compact(kafka, loaded_topic, archive, "--end-offset", "2000") == 0
    first = _summary(capsys)
    assert first["written"] == 2000 * PARTITIONS and first["tasks"] == 2 * PARTITIONS

    assert _compact(kafka, loaded_topic, archive) == 0  # overlaps the first range
    second = _summary(capsys)
    assert second["read"] == len(messages)
    assert second["written"] == len(messages) - 2000 * PARTITIONS
    assert second["duplicates"] == 2000 * PARTITIONS

    assert _compact(kafka, loaded_topic, archive) == 0  # the same range again
    assert _summary(capsys)["written"] == 0

    table = ds.dataset(archive, format="parquet", partitioning="hive").to_table()
    assert table.num_rows == len(messages)
    rows = table.to_pylist()
    coords = Counter((r["topic"], r["partition"], r["offset"]) for r in rows)
    assert max(coords.values()) == 1
    by_coords = {(m.topic(), m.partition(), m.offset()): m for m in messages}
    assert set(coords) == set(by_coords)
    for r in rows[:: max(1, len(rows) // 500)]:
        m = by_coords[(r["topic"], r["partition"], r["offset"])]
        assert r["value"] == m.value() and r["timestamp"] == m.timestamp()[1]
        assert r["date"] == "2023-11-14"  # UTC day of the produce timestamps


def test_time_bounds_filter_even_where_the_broker_cannot_look_offsets_up(
    kafka: KafkaBroker, loaded_topic: str
) -> None:
    # The mock answers offsets_for_times with -1: the plan keeps whole partitions and
    # the reading tasks filter by timestamp.
    ranges = plan_ranges(kafka.client_config(), [loaded_topic], since=1_700_000_000_100)
    assert sum(r.end - r.start for r in ranges) >= EVENTS
    assert all(r.since == 1_700_000_000_100 for r in ranges)


def _engine_order(events: list[dict[str, Any]]) -> list[tuple[int, int]]:
    """(partition, offset) of each event, in the backfill's order (time, then coordinates)."""
    coords = [(i % PARTITIONS, i // PARTITIONS) for i in range(len(events))]
    return sorted(coords, key=lambda c: (events[c[1] * PARTITIONS + c[0]][TIME_FIELD], c))


def test_backfills_from_the_archive_and_from_the_topic_agree_with_the_engine(
    spark: Any,
    kafka: KafkaBroker,
    loaded_topic: str,
    events: list[dict[str, Any]],
    tmp_path: Path,
    topic_name: Callable[[str], str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    from cerfleet.query import compile_query

    archive = tmp_path / "archive"
    assert _compact(kafka, loaded_topic, archive) == 0
    query_file = tmp_path / "global.ceql"
    query_file.write_text(GLOBAL)
    common = [
        "--ceql",
        str(query_file),
        "--time-field",
        TIME_FIELD,
        "--topic",
        loaded_topic,
        "--bootstrap-servers",
        kafka.client_config()["bootstrap.servers"],
    ]

    out_archive = tmp_path / "from-archive"
    assert (
        backfill_job.main([*common, "--archive", str(archive), "--output", str(out_archive)]) == 0
    )
    from_archive = _summary(capsys)
    output_topic = topic_name("matches")
    kafka.create_topic(output_topic, 2)
    assert (
        backfill_job.main(
            [
                *common,
                "--from-kafka",
                "--max-records-per-task",
                "1500",
                "--output-topic",
                output_topic,
            ]
        )
        == 0
    )
    from_topic = _summary(capsys)

    # The engine over the same events in the backfill's order: by time, then coordinates.
    order = _engine_order(events)
    ordered = [events[o * PARTITIONS + p] for p, o in order]
    expected = compile_query(GLOBAL, time_field=TIME_FIELD).evaluator().process_batch(ordered)
    want = Counter((ce.start, ce.end, tuple(order[p] for p in ce.positions)) for ce in expected)
    assert want

    def got(docs: list[dict[str, Any]]) -> Counter[Any]:
        return Counter(
            (d["start"], d["end"], tuple((s["partition"], s["offset"]) for s in d["sources"]))
            for d in docs
        )

    archived_docs = [
        orjson.loads(v) for v in pq.read_table(out_archive).column("value").to_pylist()
    ]
    assert got(archived_docs) == want
    published = kafka.read_topic(output_topic)
    assert got([orjson.loads(m.value()) for m in published]) == want
    assert all(
        dict(m.headers() or [])["cerfleet-backfill"].decode() == from_topic["run"]
        for m in published
    )
    for s in (from_archive, from_topic):
        assert s["events_read"] == EVENTS + len(BAD_LINES)
        assert s["bad_records"] == len(BAD_LINES)
        assert s["complex_events"] == sum(want.values())
    assert from_topic["published"] == sum(want.values())

    # Bad records: beside the Parquet output, or to the dead-letter topic without one.
    bad = pq.read_table(out_archive / "_bad").to_pylist()
    assert sorted(r["value"] for r in bad) == sorted(BAD_LINES)
    assert all(r["error"] and r["topic"] == loaded_topic for r in bad)
    dead = [
        m
        for m in kafka.read_topic(from_topic["bad_records_to"])
        if dict(m.headers() or []).get("cerfleet-backfill") == from_topic["run"].encode()
    ]
    assert sorted(m.value() for m in dead) == sorted(BAD_LINES)
    assert all(dict(m.headers())["cerfleet-error"] for m in dead)
