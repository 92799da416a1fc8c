"""SPAseq and RSEP-QL queries through the fleet (coordinator and worker processes): one
record per RDF graph event, each input topic a stream. The rows published are
``cerfleet run``'s over the same events, in its order, each once: with a malformed
record among them (dead-lettered with its reason, nothing else lost) and with a worker
killed mid-stream."""

from __future__ import annotations

import random
import time
from typing import Any

import orjson

from cerfleet.cli.rdf_run import results, rsepql_results
from cerfleet.rdf.records import decode_record
from cerfleet.rdf.streams import declared_streams, stream_of
from tests.fleet import Fleet, TopicReader
from tests.rdf_events import QUERY_4, jsonld_record, trades, trig_record

N = 1500


def _queries(a: str, b: str) -> dict[str, tuple[str, str, tuple[str, ...]]]:
    spaseq = f"""PREFIX pred: <http://example/>
SELECT ?company ?p1 ?p2
WITHIN 5 SECONDS
FROM STREAM {a} <http://example/a>
FROM STREAM {b} <http://example/b>
WHERE {{
  SEQ (X ; Y)
  DEFINE GPM X ON {a} {{ ?t1 pred:company ?company . ?t1 pred:price ?p1 . ?t1 pred:type "buy" . }}
  DEFINE GPM Y ON {b} {{ ?t2 pred:company ?company . ?t2 pred:price ?p2 . FILTER (?p2 > ?p1) }}
}}
"""
    rsepql = f"""PREFIX pred: <http://example/>
SELECT ?p1 ?p2
FROM NAMED <http://example/{a}> WIN [RANGE 2] AS pred:w
EVENT ON pred:w {{ ?t1 pred:price ?p1 . ?t1 pred:type "buy" . }} AS E0
EVENT ON pred:w {{ ?t2 pred:price ?p2 . ?t2 pred:type "sell" . }} AS E1
WHERE {{ MATCH {{ E0 SEQ E1 }} }}
"""
    return {"two-streams": ("spaseq", spaseq, (a, b)), "one-stream": ("rsepql", rsepql, (a,))}


def _streams(fleet: Fleet) -> tuple[str, str, list[bytes], list[bytes]]:
    """Two topics named as the query's streams, and their records: TriG on one,
    JSON-LD on the other; each ends with an event at a later time that matches nothing,
    so that the last instant with results is closed."""
    a, b = f"rdf{fleet.id}a", f"rdf{fleet.id}b"
    for topic in (a, b):
        fleet.kafka.create_topic(topic, 1)
    ta, tb = trades(N, seed=1), trades(N, seed=2)
    end = max(ta[-1][0], tb[-1][0]) + 100
    recs_a = [trig_record(i, t) for i, t in enumerate(ta)] + [_no_match(N, end)]
    recs_b = [jsonld_record(N + 1 + i, t) for i, t in enumerate(tb)] + [_no_match(3 * N, end)]
    return a, b, recs_a, recs_b


def _no_match(i: int, time: int) -> bytes:
    return (
        f"<http://example/g{i}> <https://cerfleet.dev/ns#time> {time} .\n"
        f"<http://example/g{i}> {{ <http://example/x{i}> <http://example/other> 1 }}\n"
    ).encode()


def _expected(
    language: str, text: str, topics: tuple[str, ...], records: dict[str, list[bytes]]
) -> list[dict[str, Any]]:
    streams = []
    for topic in topics:
        events = []
        for value in records[topic]:
            try:
                events.append(decode_record(value))
            except Exception:  # the malformed record: not an event
                continue
        streams.append((stream_of(topic, declared_streams(language, text)), events))
    if language == "rsepql":
        return list(rsepql_results(text, streams))
    return list(results(text, streams))


def _submit(
    fleet: Fleet, queries: dict[str, tuple[str, str, tuple[str, ...]]]
) -> dict[str, TopicReader]:
    readers = {}
    for name, (language, text, topics) in queries.items():
        out = fleet.topic(f"out-{name}")
        path = fleet.log_dir / f"{name}.rq"
        path.write_text(text)
        args = ["submit", name, str(path), "-o", out, "--language", language]
        for topic in topics:
            args += ["-i", topic]
        done = fleet.cli(*args)
        assert done.returncode == 0, done.stderr
        readers[name] = fleet.reader(out)
    return readers


def _check(
    readers: dict[str, TopicReader],
    queries: dict[str, tuple[str, str, tuple[str, ...]]],
    records: dict[str, list[bytes]],
    timeout: float,
) -> None:
    for name, (language, text, topics) in queries.items():
        want = _expected(language, text, topics, records)
        assert len(want) > 20, name
        reader = readers[name]
        reader.wait_for(len(want), timeout)
        got = reader.values()
        assert got == [orjson.loads(orjson.dumps(r)) for r in want], (
            f"{name}: {len(got)} published, {len(want)} expected"
        )


def test_rdf_queries_publish_cerfleet_runs_rows_and_report_a_malformed_record(
    fleet: Fleet,
) -> None:
    a, b, recs_a, recs_b = _streams(fleet)
    bad = b"@prefix : <http://example/> . :g { :a :b"  # cut short: not TriG
    recs_a.insert(N // 2, bad)
    queries = _queries(a, b)
    readers = _submit(fleet, queries)
    # Both topics written before the coordinator reads them: its merge then sees both
    # streams' records and forwards them in time order without waiting for idleness.
    fleet.produce(a, recs_a)
    fleet.produce(b, recs_b)
    fleet.coordinator()
    fleet.worker()
    _check(readers, queries, {a: recs_a, b: recs_b}, timeout=180)
    dead = fleet.reader(fleet.dead_letter_topic)  # created by the coordinator
    dead.wait_for(1, 60, settle=1.0)
    assert len(dead.records) == 1
    headers = dict(dead.records[0].headers())
    assert orjson.loads(headers["cerfleet-src"]) == [a, 0, N // 2]
    assert b"not TriG" in headers["cerfleet-error"]


def test_a_worker_killed_mid_stream_loses_and_repeats_no_row(fleet: Fleet) -> None:
    # One topic, written in chunks while the workers run (two topics written apart
    # would be merged by arrival: the first test writes them before the coordinator).
    a, b, recs_a, _ = _streams(fleet)
    queries = {
        "one-stream": _queries(a, b)["one-stream"],
        "kleene": ("spaseq", QUERY_4, (a,)),
    }
    readers = _submit(fleet, queries)
    fleet.coordinator()
    # Small batches and checkpoints seconds apart: a worker is killed with outputs
    # published past its checkpoint, which its successor replays without publishing.
    fleet.env["CERFLEET_BATCH_SIZE"] = "20"
    slow = ("--checkpoint-interval", "2")
    workers = [fleet.worker(*slow)]
    rng = random.Random(3)
    chunks = 10
    size = -(-len(recs_a) // chunks)
    for k in range(chunks):
        fleet.produce(a, recs_a[k * size : (k + 1) * size])
        time.sleep(rng.uniform(0.3, 0.8))
        if k in (3, 6):
            victim = workers.pop()
            victim.wait_for_metric("cerfleet_complex_events_out_total")
            victim.kill()
            workers.append(fleet.worker(*slow))
    _check(readers, queries, {a: recs_a}, timeout=240)
    # The successors took over from checkpoints, and replayed past them.
    assert sum(w.metric("cerfleet_worker_recoveries_total") for w in workers) > 0
