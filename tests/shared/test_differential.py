"""Differential testing: the engine against the brute-force oracle.

Random queries (printed to CEQL text and compiled like any user query) run over
random small streams; the engine's complex events must be exactly the oracle's,
each emitted once, by the ``process`` call of its ``end`` event. Under ``LIMIT n``
the engine may pick any ``n`` of the oracle's complex events for that event (all
of them if there are fewer). One test covers ``SELECT ALL`` without consumption;
one test per selection strategy draws the consumption policy, window and
partitioning at random (and LIMIT when nothing is consumed). The snapshot tests
check that snapshotting and restoring mid-stream changes nothing.

``CERFLEET_DIFF_EXAMPLES`` sets the number of examples per test (default 2500).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from cerfleet import pattern
from cerfleet.ceql.printer import to_ceql
from cerfleet.complex_event import ComplexEvent
from cerfleet.events.columns import columns_of
from cerfleet.query import compile_query
from tests.shared.oracle import OracleResult, oracle_by_end
from tests.shared.strategies import (
    EVENT_TYPES,
    TIME_FIELD,
    decided,
    event_types,
    formulas,
    predicates,
    queries,
    streams,
)

MAX_EXAMPLES = int(os.environ.get("CERFLEET_DIFF_EXAMPLES", "2500"))

Stream = list[dict[str, Any]]


def describe(query: pattern.Pattern, stream: Sequence[Mapping[str, Any]]) -> str:
    """The failing input in a form that can be pasted into ``cerfleet run``."""
    lines = ["query:", to_ceql(query), f"stream ({len(stream)} events, JSON lines):"]
    lines += [json.dumps(event) for event in stream]
    return "\n".join(lines)


def _triples(results: Iterable[OracleResult]) -> str:
    return "\n".join(f"  {r}" for r in sorted(results, key=repr)) or "  (none)"


def _as_result(ce: ComplexEvent) -> OracleResult:
    return (ce.start, ce.end, tuple(ce.positions), ce.key)


def check_against_oracle(
    query: pattern.Pattern, stream: Sequence[Mapping[str, Any]], stream_field: str | None = None
) -> None:
    """Run the engine event by event and compare each event's output with the
    oracle's complex events ending there (under LIMIT n: any n of them)."""
    context = describe(query, stream)
    note(context)  # shown for crashes too, not just failed assertions
    expected = decided(
        lambda: oracle_by_end(query, stream, time_field=TIME_FIELD, stream_field=stream_field)
    )

    text = to_ceql(query)
    evaluator = compile_query(text, time_field=TIME_FIELD, stream_field=stream_field).evaluator()
    for index, event in enumerate(stream):
        emitted: list[OracleResult] = []
        # A copy, so an engine that mutated its input could not hide it from the checks.
        for ce in evaluator.process(dict(event)):
            result = _as_result(ce)
            assert ce.end == index, (
                f"{context}\n{result} was emitted while processing event {index}"
            )
            assert tuple(ce.events) == tuple(stream[p] for p in ce.positions), (
                f"{context}\n{result} carries the wrong events: {ce.events}"
            )
            emitted.append(result)

        duplicates = {r for r in emitted if emitted.count(r) > 1}
        assert not duplicates, (
            f"{context}\nevent {index}: emitted more than once:\n{_triples(duplicates)}"
        )
        got, want = set(emitted), expected.get(index, set())
        if query.limit is None:
            assert got == want, (
                f"{context}\nevent {index}:\n"
                f"missing (oracle only):\n{_triples(want - got)}\n"
                f"extra (engine only):\n{_triples(got - want)}"
            )
        else:
            assert got <= want, (
                f"{context}\nevent {index}: extra (engine only):\n{_triples(got - want)}"
            )
            assert len(got) == min(query.limit, len(want)), (
                f"{context}\nevent {index}: LIMIT {query.limit} with {len(want)} complex "
                f"events in the oracle, but the engine emitted {len(got)}:\n{_triples(got)}\n"
                f"oracle:\n{_triples(want)}"
            )


@settings(max_examples=MAX_EXAMPLES, deadline=None, database=None)
@given(query=queries(), stream=streams())
def test_engine_matches_oracle(query: pattern.Pattern, stream: Stream) -> None:
    """SELECT ALL, no consumption, no LIMIT."""
    check_against_oracle(query, stream)


def strategy_examples(
    data: st.DataObject, strategy: pattern.Strategy
) -> tuple[pattern.Pattern, Stream]:
    """A query with ``strategy``, any consumption policy, window and partitioning
    (LIMIT only without consumption) and a stream for it. Three in four are
    dense (see ``queries``) over at least 3 events mostly of the query's own
    event types, so that several complex events compete for the same end and
    consumption has something to consume."""
    dense = data.draw(st.sampled_from((True, True, True, False)), label="dense")
    query = data.draw(
        queries(strategies=(strategy,), consumes=tuple(pattern.Consume), limits=True, dense=dense),
        label="query",
    )
    if dense:
        # Mostly the query's own event types, and every type of the stream now and then.
        types = sorted(event_types(query.where) & set(EVENT_TYPES)) * 3 + list(EVENT_TYPES)
        stream = data.draw(streams(min_size=3, types=types), label="stream")
    else:
        stream = data.draw(streams(), label="stream")
    return query, stream


@pytest.mark.parametrize("strategy", list(pattern.Strategy), ids=lambda s: s.value)
@settings(max_examples=MAX_EXAMPLES, deadline=None, database=None)
@given(data=st.data())
def test_strategy_matches_oracle(strategy: pattern.Strategy, data: st.DataObject) -> None:
    """One selection strategy with every consumption policy, window kind and
    partitioning drawn at random, and LIMIT without consumption."""
    query, stream = strategy_examples(data, strategy)
    check_against_oracle(query, stream)


def _outputs(complex_events: Iterable[ComplexEvent]) -> list[str]:
    """One process() call's output, order-insensitive but duplicate-sensitive."""
    return sorted(json.dumps(ce.to_dict(), sort_keys=True) for ce in complex_events)


def check_snapshot_restore(query: pattern.Pattern, stream: Stream, every: int) -> None:
    """Restoring after every ``every``-th event gives the outputs of an uninterrupted run."""
    context = describe(query, stream) + f"\nrestored after every {every} event(s)"
    note(context)
    text = to_ceql(query)
    compiled = compile_query(text, time_field=TIME_FIELD)

    straight = compiled.evaluator()
    expected = [_outputs(straight.process(dict(event))) for event in stream]

    # Restore alternately into the same compiled query and into a fresh compilation
    # of the same text, as a restarted process would.
    recompiled = compile_query(text, time_field=TIME_FIELD)
    evaluator = compiled.evaluator()
    got = []
    for index, event in enumerate(stream):
        got.append(_outputs(evaluator.process(dict(event))))
        if (index + 1) % every == 0:
            target = recompiled if (index + 1) // every % 2 else compiled
            evaluator = target.restore(evaluator.snapshot())
    for index, (want, have) in enumerate(zip(expected, got, strict=True)):
        assert have == want, (
            f"{context}\nevent {index}: uninterrupted run emitted\n  {want}\n"
            f"restored run emitted\n  {have}"
        )


@settings(max_examples=MAX_EXAMPLES, deadline=None, database=None)
@given(query=queries(), stream=streams(), every=st.integers(min_value=1, max_value=3))
def test_snapshot_restore_mid_stream(query: pattern.Pattern, stream: Stream, every: int) -> None:
    check_snapshot_restore(query, stream, every)


@settings(max_examples=MAX_EXAMPLES, deadline=None, database=None)
@given(
    query=queries(strategies=tuple(pattern.Strategy), consumes=tuple(pattern.Consume)),
    stream=streams(),
    every=st.integers(min_value=1, max_value=3),
)
def test_snapshot_restore_with_selection_and_consumption(
    query: pattern.Pattern, stream: Stream, every: int
) -> None:
    """The same with every strategy and consumption policy (whose restart points
    are state too); no LIMIT, since which n complex events it keeps is unspecified."""
    check_snapshot_restore(query, stream, every)


def _with_operator(data: st.DataObject, operator: str) -> tuple[pattern.Pattern, Stream]:
    """A query whose formula is built around ``operator`` (``:``, ``:+`` or an empty
    window), any strategy, consumption, window and partitioning, and a dense stream."""
    strategy = data.draw(st.sampled_from(tuple(pattern.Strategy)), label="strategy")
    query = data.draw(
        queries(strategies=(strategy,), consumes=tuple(pattern.Consume), limits=True),
        label="query",
    )
    where = query.where
    if operator == ":":
        right = data.draw(formulas(max_size=4), label="right")
        where = pattern.Contiguous(where, right)
    elif operator == ":+":
        # A small body: iterating a whole random formula (itself with + inside) makes the
        # oracle's fixpoint exponential in the stream.
        body = data.draw(formulas(max_size=3, max_plus_depth=0), label="body")
        where = pattern.Seq(where, pattern.ContiguousPlus(body))
    elif operator == "; ! ;":
        right = data.draw(formulas(max_size=4), label="right")
        excluded = data.draw(st.sampled_from(EVENT_TYPES), label="excluded")
        pred = data.draw(st.one_of(st.none(), predicates(max_depth=1)), label="pred")
        where = pattern.Absent(where, excluded, pred, right)
    elif operator == "NOT":
        excluded = data.draw(st.sampled_from(EVENT_TYPES), label="excluded")
        pred = data.draw(st.one_of(st.none(), predicates(max_depth=1)), label="pred")
        where = pattern.Seq(where, pattern.NotEvent(excluded, pred))
    elif operator == "AND":
        where = _conjunction(data, where)
    else:
        kind = data.draw(st.sampled_from(tuple(pattern.WindowKind)), label="window")
        unit = "MILLISECONDS" if kind is pattern.WindowKind.TIME else None
        attr = TIME_FIELD if kind is pattern.WindowKind.ATTRIBUTE else None
        query = replace(query, within=pattern.Window(kind, 0, unit=unit, attr=attr))
    query = replace(query, where=where)
    types = sorted(event_types(where) & set(EVENT_TYPES)) * 3 + list(EVENT_TYPES)
    stream = data.draw(streams(min_size=2, max_size=8, types=types), label="stream")
    return query, stream


def _conjunction(data: st.DataObject, where: pattern.Formula) -> pattern.Formula:
    """``where AND ψ``, or a conjunction of two small formulas inside a sequence or an
    iteration (so the product automaton is also an operand)."""
    right = data.draw(formulas(max_size=4, max_plus_depth=1), label="right")
    shape = data.draw(st.sampled_from(("top", "top", "seq", "plus")), label="shape")
    if shape == "top":
        return pattern.And(where, right)
    left = data.draw(formulas(max_size=3, max_plus_depth=0), label="left")
    if shape == "seq":
        return pattern.Seq(where, pattern.And(left, right))
    small = data.draw(formulas(max_size=2, max_plus_depth=0), label="small")
    return pattern.Seq(where, pattern.Plus(pattern.And(left, small)))


@pytest.mark.parametrize("operator", [":", ":+", "WITHIN 0", "; ! ;", "NOT", "AND"])
# Drawing a query, a second formula and a stream is slow next to the default budget
# on a loaded machine; what is drawn does not change.
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_contiguity_and_empty_windows_match_oracle(operator: str, data: st.DataObject) -> None:
    """Each of CORE C++'s contiguous operators, ε = 0, absence between events,
    NOT(...) and pattern conjunction, in every example."""
    query, stream = _with_operator(data, operator)
    check_against_oracle(query, stream)


# ------------------------------------------------------------------------ streams

STREAM_FIELD = "st"
STREAM_NAMES = ("S1", "S2")


def _qualified(data: st.DataObject, phi: pattern.Formula, streams: tuple[str, ...]) -> Any:
    """``phi`` with some event types qualified by a stream of FROM (``S>E``), in the
    form the parser gives them."""
    if isinstance(phi, pattern.EventType):
        stream = data.draw(st.sampled_from((None, *streams)))
        if stream is None:
            return phi
        atom = pattern.FilterAtom(phi.name, pattern.InStream((stream,)))
        return pattern.Filter(phi, atom)
    if isinstance(phi, pattern.NotEvent | pattern.AnyEvent):
        return phi
    changes = {
        name: _qualified(data, getattr(phi, name), streams)
        for name in ("formula", "left", "right")
        if hasattr(phi, name)
    }
    return replace(phi, **changes)


@pytest.mark.parametrize("stream_field", [STREAM_FIELD, None])
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_stream_qualifiers_and_from_match_oracle(
    stream_field: str | None, data: st.DataObject
) -> None:
    """``FROM S1[, S2]`` and ``S>E`` over events of S1, S2, S3 or no stream; without a
    stream field every event is in every stream."""
    strategy = data.draw(st.sampled_from(tuple(pattern.Strategy)), label="strategy")
    query = data.draw(
        queries(strategies=(strategy,), consumes=tuple(pattern.Consume), limits=True),
        label="query",
    )
    streams_in_from = data.draw(st.sampled_from((("S1",), STREAM_NAMES)), label="from")
    where = _qualified(data, query.where, streams_in_from)
    query = replace(query, where=where, streams=streams_in_from)
    types = sorted(event_types(where) & set(EVENT_TYPES)) * 3 + list(EVENT_TYPES)
    stream = data.draw(streams(max_size=8, types=types), label="events")
    names = st.sampled_from(("S1", "S1", "S2", "S3", None))
    for event in stream:
        if (name := data.draw(names)) is not None:
            event[STREAM_FIELD] = name
    check_against_oracle(query, stream, stream_field)


@settings(
    max_examples=MAX_EXAMPLES // 5,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_conjunction_and_streams_in_columns_match_rows(data: st.DataObject) -> None:
    """The columnar path (vector letters: exclusions of the product's guards, the stream
    field's atoms) gives what the oracle-checked row path gives."""
    query, stream = _with_operator(data, "AND")
    query = replace(query, where=_qualified(data, query.where, STREAM_NAMES), streams=STREAM_NAMES)
    for event in stream:
        if (name := data.draw(st.sampled_from(("S1", "S2", "S3", None)))) is not None:
            event[STREAM_FIELD] = name
    note(describe(query, stream))
    compiled = compile_query(to_ceql(query), time_field=TIME_FIELD, stream_field=STREAM_FIELD)
    evaluator = compiled.evaluator()
    rows = []
    for event in stream:
        rows += [_as_result(ce) for ce in evaluator.process(dict(event))]
    columns = compiled.evaluator().process_columns(
        columns_of(stream, compiled.attributes), events=stream
    )
    if query.limit is None:
        assert sorted(map(_as_result, columns), key=repr) == sorted(rows, key=repr)
    else:
        assert len(columns) == len(rows)
