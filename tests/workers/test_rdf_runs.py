"""An RDF query's run in one keyed partition, without Kafka: its outputs are ``cerfleet
run``'s rows, numbered; a checkpoint taken mid-stream (encoded, decoded) continues on a
successor that neither loses nor repeats a row; records are judged as graphs, not JSON."""

from __future__ import annotations

import orjson

from cerfleet.cli.rdf_run import results
from cerfleet.fleet.registry import QuerySpec, RegistryHistory
from cerfleet.rdf.records import decode_record
from cerfleet.workers.catalog import Catalog
from cerfleet.workers.checkpoint import Checkpoint
from cerfleet.workers.partition import PartitionState, Record
from tests.rdf_events import QUERY_4, trades, trig_record

# More brackets than a JSON value may nest (the fleet's max_depth): blank nodes.
BLANKS = (
    b"<http://example/gb> <https://cerfleet.dev/ns#time> 0 .\n<http://example/gb> { "
    + b" ".join(
        b"<http://example/b%d> <http://example/q> [ <http://example/r> 1 ] ." % i for i in range(80)
    )
    + b" }"
)


def _setup() -> tuple[Catalog, str]:
    history = RegistryHistory()
    spec = QuerySpec(
        name="v", ceql=QUERY_4, input_topics=("trades",), output_topic="out", language="spaseq"
    )
    history.apply(0, b"v", spec.model_dump_json().encode())
    catalog = Catalog(history, "k.")
    return catalog, catalog.keyed_topic_of(history.current["v"])


def test_rows_numbered_and_continued_from_a_checkpoint() -> None:
    values = [trig_record(i, t) for i, t in enumerate(trades(1200, seed=9))]
    values.insert(0, BLANKS)
    records = [Record(i, v, ("trades", 0, i), 1) for i, v in enumerate(values)]
    want = [orjson.dumps(r) for r in results(QUERY_4, [("S1", [decode_record(v) for v in values])])]
    catalog, keyed = _setup()
    state = PartitionState(keyed, 0, catalog)
    got, dead = state.process(records[:700])
    assert dead == []  # the blank nodes' brackets are no JSON nesting
    ckpt = Checkpoint.decode(state.checkpoint().encode())
    # The predecessor went on and published some more before it died.
    more, _ = state.process(records[700:900])
    published = {("v", 0): max(o.seq for o in got + more)}
    successor = PartitionState.restore(catalog, keyed, 0, ckpt, published)
    rest, dead = successor.process(records[700:])
    outputs = got + more + rest
    assert [o.seq for o in outputs] == list(range(len(outputs)))
    # The last instant stays open until a later event: every row but its own.
    assert [o.value for o in outputs] == want[: len(outputs)]
    last = orjson.loads(want[-1])["time"]
    assert len(outputs) > 100 and {orjson.loads(v)["time"] for v in want[len(outputs) :]} == {last}
