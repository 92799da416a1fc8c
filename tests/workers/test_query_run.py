"""Output records of a batch: ``output_records`` formats a batch's outputs with the
fields they share formatted once per query and the key once per key; each record must
be what the output alone gives (``outputs.output_value``, ``output_key``, ``origin``)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from cerfleet.fleet.keyed import ORIGIN_HEADER
from cerfleet.workers.outputs import origin, output_key, output_value
from cerfleet.workers.query_run import Output, output_records
from tests.workers.test_partition import TOPICS, events_st, fresh, records_of, split


def alone(keyed: tuple[str, int], out: Output) -> tuple[bytes, bytes | None, list[Any]]:
    entry = out.run.entry
    name = entry.spec.name
    value = output_value(name, *keyed, out.ce, out.truncated, output_key(out.ce))
    return (
        value,
        output_key(out.ce),
        [(ORIGIN_HEADER, origin(*keyed, name, entry.version, out.seq))],
    )


@settings(max_examples=150, deadline=None, database=None)
@given(events=events_st, cuts=st.lists(st.integers(0, 30), max_size=4))
def test_a_batch_s_records_are_each_output_s_alone(
    events: list[dict[str, Any]], cuts: list[int]
) -> None:
    records = records_of(events)
    for topic in TOPICS:
        state = fresh(topic)
        keyed = (topic, state.partition)
        for batch in split(records, cuts):
            outs, _ = state.process(batch)
            assert list(output_records(keyed, outs)) == [alone(keyed, o) for o in outs]


def test_a_batch_holds_outputs_of_several_queries_and_keys() -> None:
    # Guards the property above against vacuity: one batch, three queries, two keys.
    events = [
        {"type": kind, "v": v, "k": k, "t": t}
        for t, (kind, v, k) in enumerate(
            [("A", 3, 1), ("A", 3, 2), ("B", 1, 1), ("B", 1, 2), ("C", 3, 1), ("C", 3, 2)]
        )
    ]
    kp = next(t for t, es in TOPICS.items() if es[0].query.partitioned)
    state = fresh(kp)
    outs, _ = state.process(records_of(events))
    assert len({o.run.name for o in outs}) >= 2 and len({o.ce.key for o in outs}) == 2
    keyed = (kp, state.partition)
    assert list(output_records(keyed, outs)) == [alone(keyed, o) for o in outs]
