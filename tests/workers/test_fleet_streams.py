"""A multi-stream query in the fleet: the input topic a record came from is its stream
(``cerfleet submit --topic-stream TOPIC=STREAM``), as ``--stream-field`` makes an
attribute the stream in ``cerfleet run``.

Records of several topics reach a keyed partition in the order the coordinator routed
them, which no test fixes; so the test reads that order back from the keyed topic and
compares the fleet's complex events with the embedded engine's over exactly that
sequence, each event given its topic's stream, by the input records they consist of.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import orjson
from confluent_kafka.admin import AdminClient

from benchmarks.datasets import stock, to_dicts
from cerfleet.query import compile_query
from cerfleet.workers.keyed_batch import KeyedBatch
from tests.fleet import Fleet

QUERY = """SELECT * FROM S1, S2
WHERE S1>BUY AS a ; S2>SELL AS b
FILTER a[name] = b[name] AND a[volume >= 100]
WITHIN 200 EVENTS"""

Record = tuple[str, int]  # input topic, offset


def _embedded(
    sequence: list[tuple[Record, dict[str, Any]]], streams: dict[str, str], stream_field: str
) -> Counter[tuple[Record, ...]]:
    events = [
        {**event, stream_field: streams[topic]} if topic in streams else event
        for (topic, _), event in sequence
    ]
    compiled = compile_query(QUERY, time_field="stock_time", stream_field=stream_field)
    found = compiled.evaluator().process_batch(events)
    return Counter(tuple(sequence[p][0] for p in ce.positions) for ce in found)


def test_each_topic_is_the_stream_it_is_mapped_to(fleet: Fleet) -> None:
    data = to_dicts(stock(900, seed=3))
    topics = {name: fleet.topic(name) for name in ("left", "right", "other")}
    inputs = {"left": data[:300], "right": data[300:600], "other": data[600:]}
    streams = {topics["left"]: "S1", topics["right"]: "S2"}  # "other" is in no stream
    out = fleet.topic("out", 2)
    path = fleet.log_dir / "q.ceql"
    path.write_text(QUERY)
    args = ["submit", "pairs", str(path), "-o", out, "--time-field", "stock_time"]
    for topic in topics.values():
        args += ["-i", topic]
    for topic, stream in streams.items():
        args += ["--topic-stream", f"{topic}={stream}"]
    done = fleet.cli(*args)
    assert done.returncode == 0, done.stderr
    fleet.coordinator()
    fleet.worker()

    # The three topics produced in turns of a few records, so their records interleave.
    for start in range(0, 300, 30):
        for name in inputs:
            fleet.produce(topics[name], [orjson.dumps(e) for e in inputs[name][start : start + 30]])

    # The order the worker saw: the keyed topic, record by record, with each input.
    admin = AdminClient(fleet.kafka.client_config())
    keyed_prefix = fleet.env["CERFLEET_KEYED_TOPIC_PREFIX"]
    keyed = [t for t in admin.list_topics(timeout=10).topics if t.startswith(keyed_prefix)]
    assert len(keyed) == 1
    keyed_reader = fleet.reader(keyed[0])
    keyed_reader.wait_for(900, timeout=120, settle=1.0)
    by_partition: dict[int, list[tuple[Record, dict[str, Any]]]] = {}
    for msg in keyed_reader.records:
        # As the worker reads it: the input's value behind the copy's head.
        read = KeyedBatch.of_messages([msg])
        (value,), (src,) = read.values, read.sources
        assert src is not None
        name = next(n for n, t in topics.items() if t == src[0])
        assert value == orjson.dumps(inputs[name][src[2]])
        by_partition.setdefault(msg.partition(), []).append(
            ((src[0], src[2]), inputs[name][src[2]])
        )
    assert sum(map(len, by_partition.values())) == 900

    want: Counter[tuple[Record, ...]] = Counter()
    unmapped: Counter[tuple[Record, ...]] = Counter()
    for sequence in by_partition.values():
        want += _embedded(sequence, streams, "@stream")
        unmapped += _embedded(sequence, {}, "@stream")  # every event in no stream
    reader = fleet.reader(out, 2)
    reader.wait_for(sum(want.values()), timeout=120)
    got = Counter(
        tuple((s["topic"], s["offset"]) for s in value["sources"]) for value in reader.values()
    )
    assert got == want
    assert sum(want.values()) > 0
    # Only left's BUYs start a match and only right's SELLs end one.
    assert all(m[0][0] == topics["left"] and m[1][0] == topics["right"] for m in got)
    assert not unmapped


def test_a_map_naming_an_unknown_topic_or_stream_is_refused(fleet: Fleet) -> None:
    path = fleet.log_dir / "q.ceql"
    path.write_text(QUERY)
    base = ["submit", "pairs", str(path), "-o", "out", "-i", "in"]
    done = fleet.cli(*base, "--topic-stream", "elsewhere=S1")
    assert done.returncode != 0 and "not an input topic" in done.stderr
    done = fleet.cli(*base, "--topic-stream", "in=S9")
    assert done.returncode != 0 and "not in FROM" in done.stderr
    done = fleet.cli(*base, "--topic-stream", "in")
    assert done.returncode != 0 and "TOPIC=STREAM" in done.stderr
