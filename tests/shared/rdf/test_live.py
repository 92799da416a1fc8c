"""The incremental RDF evaluation fed one record at a time, its state snapshot and
restored into a fresh one at a random point, pruned after every instant: the rows are
those of the uninterrupted evaluation and the definitions' (the oracles)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cerfleet.cli.rdf_run import rsepql_evaluations
from cerfleet.errors import EventError
from cerfleet.rdf import live as live_module
from cerfleet.rdf.instants import in_time_order
from cerfleet.rdf.live import LiveRdf, Unsupported
from cerfleet.rdf.records import decode_record
from cerfleet.rdf.trig import RdfEvent
from tests.rdf_events import QUERY_4, trades, trig_record
from tests.shared.rsepql import test_differential as rsepql_cases
from tests.shared.rsepql.oracle import evaluations
from tests.shared.spaseq import test_differential as spaseq_cases
from tests.shared.spaseq.oracle import evaluate
from tests.shared.spaseq.test_correlations import keyed_queries

Records = list[tuple[str, bytes]]


def _records(trig: Any, data: dict[str, Any], names: Sequence[str]) -> Records:
    """Each event of each stream as its own one-event record, in time order."""
    streams: list[tuple[str, list[RdfEvent]]] = []
    raw: dict[int, bytes] = {}
    for name in names:
        events = []
        for item in data[name]:
            value = trig([item]).encode()
            event = decode_record(value)
            raw[id(event)] = value
            events.append(event)
        streams.append((name, events))
    return [(name, raw[id(event)]) for name, event in in_time_order(streams)]


def _feed(language: str, text: str, records: Records, cut: int | None) -> list[Any]:
    """Rows (with the closing instant's time) of ``records``; at ``cut`` the evaluation
    is snapshot and continued by a fresh one restored from it."""
    live = LiveRdf(language, text)
    out: list[Any] = []
    for k, (stream, value) in enumerate(records):
        if k == cut:
            data = live.snapshot()
            live = LiveRdf(language, text)
            live.restore(data)
        out += [(live.closed_at, r) for r in live.push(stream, decode_record(value), (value, None))]
    out += [(live.closed_at, r) for r in live.flush()]
    return out


@pytest.fixture(autouse=True)
def _prune_every_instant(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(live_module, "_PRUNE_EVERY", 1)


def _spaseq(q: Any, data: dict[str, Any], cut: int) -> None:
    text = spaseq_cases.render(q)
    records = _records(spaseq_cases.trig, data, q.streams)
    whole = _feed("spaseq", text, records, None)
    assert _feed("spaseq", text, records, cut % (len(records) + 1)) == whole
    got = [(r["time"], tuple((v, r[v]) for v in q.select)) for _, r in whole]
    assert set(got) == evaluate(q, data), text


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spaseq_cases.queries(), spaseq_cases.streams(), st.integers(0, 50))
def test_spaseq_restored_anywhere_equals_definitions(q: Any, data: Any, cut: int) -> None:
    _spaseq(q, data, cut)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(keyed_queries(), spaseq_cases.streams(), st.integers(0, 50))
def test_partitioned_spaseq_restored_anywhere_equals_definitions(
    q: Any, data: Any, cut: int
) -> None:
    _spaseq(q, data, cut)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rsepql_cases.queries(), rsepql_cases.streams(), st.integers(0, 50))
def test_rsepql_restored_anywhere_equals_definitions(q: Any, data: Any, cut: int) -> None:
    text = rsepql_cases.render(q)
    used = sorted({w.stream for w in q.windows.values()})
    try:
        LiveRdf("rsepql", text)
    except Unsupported:  # STEP windows: run by rsepql_evaluations' batch path
        assert any(w.step is not None for w in q.windows.values())
        return
    iris = {name: rsepql_cases.E + name for name in used}
    records = [(iris[name], value) for name, value in _records(rsepql_cases.trig, data, used)]
    whole = _feed("rsepql", text, records, None)
    assert _feed("rsepql", text, records, cut % (len(records) + 1)) == whole
    got = [(at // 1000, r["time"], tuple((v, r[v]) for v in q.select)) for at, r in whole]
    assert set(got) == evaluations(q, {s: data[s] for s in used}), text


def test_a_long_stream_holds_only_its_window() -> None:
    live = LiveRdf("spaseq", QUERY_4)
    most = 0
    for i, trade in enumerate(trades(3000, seed=4)):
        value = trig_record(i, trade)
        live.push("S1", decode_record(value), (value, None))
        most = max(most, live.held)
    # WITHIN 1 MINUTES over about 1.3 trades a second: never the whole stream.
    assert most < 300


def test_a_late_event_is_refused_with_the_times() -> None:
    live = LiveRdf("spaseq", QUERY_4)
    live.push("S1", decode_record(trig_record(0, (10, 100, "buy", 1))))
    with pytest.raises(EventError, match="late"):
        live.push("S1", decode_record(trig_record(1, (5, 100, "buy", 1))))


def test_per_evaluation_and_step_modes_are_refused_by_name() -> None:
    with pytest.raises(Unsupported, match="STEP"):
        LiveRdf("rsepql", _STEPPED)
    # cerfleet run still runs them, over the whole input.
    event = decode_record(
        b"<http://e/g> <https://cerfleet.dev/ns#time> 1 .\n"
        b"<http://e/g> { <http://e/a> <http://e/p> 1 }"
    )
    assert [r["x"] for _, r in rsepql_evaluations(_STEPPED, [("S1", [event])])] == ["http://e/a"]


_STEPPED = """SELECT ?x
FROM NAMED <http://e/S1> WIN [RANGE 10 STEP 5] AS <http://e/w>
EVENT ON <http://e/w> { ?x <http://e/p> ?y } AS E0
WHERE { MATCH { E0 } }
"""
