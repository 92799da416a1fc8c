"""A SPAseq or RSEP-QL backfill on real Spark (local[2]) over an archive of RDF graph
event records (TriG and JSON-LD, with and without a content-type header) writes the rows
``cerfleet run`` prints over the same events as a TriG file; records that are not one
event are counted and set aside with the reason."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cerfleet.workers.backfill import backfill_job
from cerfleet.workers.backfill.schemas import ARCHIVE
from tests.kafka_broker import KafkaBroker
from tests.rdf_events import QUERY_4, file_of, jsonld_record, trades, trig_record

EVENTS = 2_000
# RSEP-QL over the same stream (the local name S1 is the topic): a low, a high, a low
# sell within a minute.
RSEPQL = """PREFIX pred: <http://example/>
PREFIX : <http://example/q/>
SELECT ?p1 ?p2 ?p3
FROM NAMED :S1 WIN [RANGE 60] AS :w
EVENT ON :w { ?t1 pred:price ?p1 . FILTER (?p1 < 90) } AS A
EVENT ON :w { ?t2 pred:price ?p2 . FILTER (?p2 > 93) } AS B
EVENT ON :w { ?t3 pred:type "sell" . ?t3 pred:price ?p3 . FILTER (?p3 < 90) } AS C
WHERE { MATCH { A SEQ B SEQ C } }
"""
TWO_STREAMS = """PREFIX pred: <http://example/>
SELECT ?company ?p1 ?p2
WITHIN 1 MINUTES
FROM STREAM S1 <http://stockmarket.org/stocks/one>
FROM STREAM S2 <http://stockmarket.org/stocks/two>
WHERE {
  SEQ (A ; B)
  DEFINE GPM A ON S1 { ?t1 pred:company ?company . ?t1 pred:price ?p1 . FILTER (?p1 < 95) }
  DEFINE GPM B ON S2 { ?t2 pred:company ?company . ?t2 pred:price ?p2 . FILTER (?p2 > ?p1 + 12) }
}
"""
BAD = [
    (b"", "empty record"),
    (b"@prefix : <http://e/> . :g { :x :p ", "not TriG"),
    (b'{"@id": "http://e/g", "@graph": []}', "none found"),
]


def archive(tmp_path: Path, topic: str) -> tuple[Path, Path]:
    """An archive of the stream's records (every third JSON-LD, every fifth with a
    content-type header) and bad records between them; and the TriG file."""
    stock = trades(EVENTS, seed=4)
    rows: list[dict[str, Any]] = []
    for i, trade in enumerate(stock):
        value = jsonld_record(i, trade) if i % 3 == 0 else trig_record(i, trade)
        kind = "application/ld+json" if i % 3 == 0 else "application/trig"
        headers = [{"key": "content-type", "value": kind.encode()}] if i % 5 == 0 else []
        rows.append({"value": value, "headers": headers})
        if i % 700 == 1:
            rows.append({"value": BAD[len(rows) % 3][0], "headers": []})
    for offset, row in enumerate(rows):
        row.update(topic=topic, partition=0, offset=offset, timestamp=None, key=None)
        row["date"] = "unknown"
    path = tmp_path / "archive"
    path.mkdir()
    pq.write_table(pa.Table.from_pylist(rows, schema=ARCHIVE), path / "part-0.parquet")
    trig = tmp_path / "stock.trig"
    trig.write_bytes(file_of([trig_record(i, t) for i, t in enumerate(stock)]))
    return path, trig


def assert_rows_are_run_s(query_file: Path, output: Path, *streams: str) -> int:
    """The backfill's Parquet rows at ``output`` equal ``cerfleet run``'s over the TriG
    files ``streams`` (``NAME=FILE``), in order; returns how many."""
    files = [word for stream in streams for word in ("--stream", stream)]
    done = subprocess.run(
        [sys.executable, "-m", "cerfleet.cli", "run", str(query_file), *files],
        capture_output=True,
        check=True,
        timeout=600,
    )
    expected = [orjson.loads(x) for x in done.stdout.splitlines()]
    assert len(expected) > 100, "the comparison needs rows"
    rows = sorted(pq.read_table(output).to_pylist(), key=lambda r: r["start"])
    assert [orjson.loads(r["value"]) for r in rows] == expected
    return len(expected)


@pytest.mark.parametrize(
    ("language", "text"), [("spaseq", QUERY_4), ("rsepql", RSEPQL)], ids=["spaseq", "rsepql"]
)
def test_backfill_writes_cerfleet_run_s_rows(
    language: str,
    text: str,
    spark: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    query_file = tmp_path / "q.rq"
    query_file.write_text(text)
    stock, trig = archive(tmp_path, "S1")
    output = tmp_path / "out"
    bad = tmp_path / "bad"
    args = ["--ceql", str(query_file), "--archive", str(stock), "--output", str(output)]
    assert backfill_job.main([*args, "--bad-records", str(bad)]) == 0
    [line] = [x for x in capsys.readouterr().out.splitlines() if x.startswith('{"summary"')]
    summary = json.loads(line)["summary"]
    assert summary["complex_events"] == assert_rows_are_run_s(query_file, output, f"S1={trig}")
    assert summary["events_evaluated"] == EVENTS
    assert summary["bad_records"] == 3
    errors = sorted(r["error"] for r in pq.read_table(bad).to_pylist())
    assert [any(reason in e for e in errors) for _, reason in BAD] == [True, True, True]


def test_a_topic_that_is_no_stream_is_bad_records(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    two = QUERY_4.replace(
        "FROM STREAM S1 <http://stockmarket.org/stocks/google>",
        "FROM STREAM S1 <http://stockmarket.org/stocks/google>\n"
        "FROM STREAM S2 <http://stockmarket.org/stocks/other>",
    )
    query_file = tmp_path / "q.rq"
    query_file.write_text(two)
    stock, _ = archive(tmp_path, "trades")
    output, bad = tmp_path / "out", tmp_path / "bad"
    args = ["--ceql", str(query_file), "--archive", str(stock), "--output", str(output)]
    assert backfill_job.main([*args, "--bad-records", str(bad)]) == 0
    errors = [r["error"] for r in pq.read_table(bad).to_pylist()]
    assert len(errors) == EVENTS + 3
    assert (
        sum("'trades' is no stream of the query (streams: S1, S2)" in e for e in errors) >= EVENTS
    )


def test_backfill_from_the_topic_of_two_partitions(
    spark: Any,
    kafka: KafkaBroker,
    topic_name: Callable[[str], str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Records straight from Kafka (the topic is the query's one stream whatever its
    name), spread over two partitions: events of one timestamp in two partitions still
    make one instant, so the rows are the file's."""
    from confluent_kafka import Producer

    topic = topic_name("trades")
    kafka.create_topic(topic, 2)
    stock = trades(EVENTS, seed=5)
    producer = Producer(kafka.client_config())
    for i, trade in enumerate(stock):
        json_ld = i % 2 == 0
        value = jsonld_record(i, trade) if json_ld else trig_record(i, trade)
        headers = [("content-type", b"application/ld+json")] if json_ld else None
        producer.produce(topic, value, partition=i % 2, headers=headers)
    producer.produce(topic, b"@prefix : <http://e/> . :g { :x :p ", partition=1)
    assert producer.flush(30) == 0
    query_file = tmp_path / "q.rq"
    query_file.write_text(QUERY_4)
    trig = tmp_path / "stock.trig"
    trig.write_bytes(file_of([trig_record(i, t) for i, t in enumerate(stock)]))
    output, bad = tmp_path / "out", tmp_path / "bad"
    args = ["--ceql", str(query_file), "--from-kafka", "--topic", topic, "--output", str(output)]
    servers = kafka.client_config()["bootstrap.servers"]
    assert (
        backfill_job.main([*args, "--bootstrap-servers", servers, "--bad-records", str(bad)]) == 0
    )
    [line] = [x for x in capsys.readouterr().out.splitlines() if x.startswith('{"summary"')]
    summary = json.loads(line)["summary"]
    assert_rows_are_run_s(query_file, output, f"S1={trig}")
    assert (summary["events_evaluated"], summary["bad_records"]) == (EVENTS, 1)
    [error] = [r["error"] for r in pq.read_table(bad).to_pylist()]
    assert error.startswith("not TriG")


def test_two_topics_are_two_streams_merged_by_time(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Topics S1 and S2 of one archive are the query's two streams, merged into instants
    as ``cerfleet run --stream S1=… --stream S2=…`` merges the files (seconds shared by
    both streams make one instant of two graphs)."""
    rows: list[dict[str, Any]] = []
    files: list[str] = []
    for topic, seed in (("S1", 4), ("S2", 6)):
        stock = trades(EVENTS, seed=seed)
        for i, trade in enumerate(stock):
            value = jsonld_record(i, trade) if i % 2 else trig_record(i, trade)
            rows.append({"topic": topic, "partition": 0, "offset": i, "value": value})
        trig = tmp_path / f"{topic}.trig"
        trig.write_bytes(file_of([trig_record(i, t) for i, t in enumerate(stock)]))
        files.append(f"{topic}={trig}")
    for row in rows:
        row.update(timestamp=None, key=None, headers=[], date="unknown")
    stock_dir = tmp_path / "archive"
    stock_dir.mkdir()
    pq.write_table(pa.Table.from_pylist(rows, schema=ARCHIVE), stock_dir / "part-0.parquet")
    query_file = tmp_path / "q.rq"
    query_file.write_text(TWO_STREAMS)
    output = tmp_path / "out"
    args = ["--ceql", str(query_file), "--archive", str(stock_dir), "--output", str(output)]
    assert backfill_job.main(args) == 0
    capsys.readouterr()
    assert_rows_are_run_s(query_file, output, *files)
