"""Hand-computed checks of the brute-force oracle, so the differential suite
compares the engine against something itself verified."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cerfleet import pattern
from cerfleet.ceql.printer import to_ceql
from tests.shared.oracle import (
    OracleResult,
    evaluate_formula,
    holds,
    is_contiguous,
    last_le,
    next_le,
    oracle_by_end,
    oracle_eval,
    select_positions,
)
from tests.shared.strategies import decided, queries, streams


def _by_end(query: pattern.Pattern, events: list[dict[str, Any]]) -> dict[int, set[OracleResult]]:
    return decided(lambda: oracle_by_end(query, events, time_field="t"))


def _eval(query: pattern.Pattern, events: list[dict[str, Any]]) -> set[OracleResult]:
    return decided(lambda: oracle_eval(query, events, time_field="t"))


# ----------------------------------------------------------------- AST shorthands

A, B, C = pattern.EventType("A"), pattern.EventType("B"), pattern.EventType("C")


def seq(*parts: pattern.Formula) -> pattern.Formula:
    out = parts[0]
    for part in parts[1:]:
        out = pattern.Seq(out, part)
    return out


def cmp(attr: str, op: str, value: pattern.Scalar) -> pattern.Compare:
    return pattern.Compare(op, pattern.Attr(attr), pattern.Const(value))


def atom(var: str, pred: pattern.Pred) -> pattern.FilterAtom:
    return pattern.FilterAtom(var, pred)


def all_of(*filters: pattern.FilterExpr) -> pattern.FilterExpr:
    out = filters[0]
    for f in filters[1:]:
        out = pattern.FilterAnd(out, f)
    return out


def ev(type_: str, **attrs: Any) -> dict[str, Any]:
    return {"type": type_, **attrs}


def run(where: pattern.Formula, events: list[dict[str, Any]], **clauses: Any) -> set[OracleResult]:
    return oracle_eval(pattern.Pattern(where=where, streams=("S",), **clauses), events)


def ces(*triples: tuple[int, int, set[int]]) -> set[OracleResult]:
    """Complex events without partition key."""
    return {(s, e, tuple(sorted(ps)), None) for s, e, ps in triples}


# -------------------------------------------------------- CORE Fig. 1 Q1 / Fig. 3

SELL = pattern.EventType("SELL")

Q1 = pattern.Filter(
    seq(pattern.As(SELL, "msft"), pattern.As(SELL, "intel"), pattern.As(SELL, "amzn")),
    all_of(
        atom("msft", cmp("name", "=", "MSFT")),
        atom("msft", cmp("price", ">", 100)),
        atom("intel", cmp("name", "=", "INTL")),
        atom("amzn", cmp("name", "=", "AMZN")),
        atom("amzn", cmp("price", "<", 2000)),
    ),
)

FIG3 = [
    ev("SELL", name="MSFT", price=101),
    ev("SELL", name="MSFT", price=102),
    ev("SELL", name="INTL", price=80),
    ev("BUY", name="INTL", price=80),
    ev("SELL", name="AMZN", price=1900),
    ev("SELL", name="INTL", price=81),
    ev("SELL", name="AMZN", price=1920),
]


def test_q1_fig3_all_outputs() -> None:
    assert run(Q1, FIG3) == ces(
        (0, 4, {0, 2, 4}),
        (1, 4, {1, 2, 4}),
        (0, 6, {0, 2, 6}),
        (0, 6, {0, 5, 6}),
        (1, 6, {1, 2, 6}),
        (1, 6, {1, 5, 6}),
    )


def test_q1_fig3_within_5_events() -> None:
    window = pattern.Window(pattern.WindowKind.EVENTS, 5)
    assert run(Q1, FIG3, within=window) == ces(
        (0, 4, {0, 2, 4}),
        (1, 4, {1, 2, 4}),
        (1, 6, {1, 2, 6}),
        (1, 6, {1, 5, 6}),
    )


# ------------------------------------------------------------------ CEL operators


def test_event_type_binds_single_positions() -> None:
    events = [ev("A"), ev("B"), ev("A")]
    assert run(A, events) == ces((0, 0, {0}), (2, 2, {2}))
    assert run(pattern.EventType("D"), events) == set()


def test_sequence_is_non_contiguous_and_strict_in_order() -> None:
    events = [ev("A"), ev("A"), ev("C"), ev("B")]
    assert run(seq(A, B), events) == ces((0, 3, {0, 3}), (1, 3, {1, 3}))
    # B ; A: the only B is last, so nothing.
    assert run(seq(B, A), events) == set()
    # A ; A needs two distinct, ordered A's.
    assert run(seq(A, A), events) == ces((0, 1, {0, 1}))


def test_or_is_union() -> None:
    events = [ev("A"), ev("B"), ev("C")]
    assert run(pattern.Or(A, B), events) == ces((0, 0, {0}), (1, 1, {1}))


def test_plus_gives_every_nonempty_subsequence() -> None:
    events = [ev("A"), ev("A"), ev("B"), ev("A")]
    # All non-empty subsets of {0, 1, 3}, interval from min to max.
    assert run(pattern.Plus(A), events) == ces(
        (0, 0, {0}),
        (1, 1, {1}),
        (3, 3, {3}),
        (0, 1, {0, 1}),
        (0, 3, {0, 3}),
        (1, 3, {1, 3}),
        (0, 3, {0, 1, 3}),
    )


def test_plus_of_sequence() -> None:
    events = [ev("A"), ev("B"), ev("A"), ev("B")]
    assert run(pattern.Plus(seq(A, B)), events) == ces(
        (0, 1, {0, 1}),
        (0, 3, {0, 3}),
        (2, 3, {2, 3}),
        (0, 3, {0, 1, 2, 3}),
    )


def test_nested_plus_equals_plus() -> None:
    events = [ev("A"), ev("B"), ev("A"), ev("A")]
    assert run(pattern.Plus(pattern.Plus(A)), events) == run(pattern.Plus(A), events)


def test_as_binds_all_positions_and_filter_sees_them() -> None:
    events = [ev("A", x=1), ev("B", x=1), ev("A", x=1), ev("B", x=0)]
    where = pattern.Filter(pattern.As(seq(A, B), "w"), atom("w", cmp("x", "=", 1)))
    # w covers both events, so the B at 3 (x=0) is excluded.
    assert run(where, events) == ces((0, 1, {0, 1}))


def test_filter_on_variable_inside_plus_constrains_every_iteration() -> None:
    events = [ev("A", x=1), ev("A", x=0), ev("A", x=1)]
    where = pattern.Filter(pattern.Plus(pattern.As(A, "v")), atom("v", cmp("x", "=", 1)))
    assert run(where, events) == ces((0, 0, {0}), (2, 2, {2}), (0, 2, {0, 2}))


def test_filter_on_event_type_constrains_the_bound_events_of_that_type() -> None:
    events = [ev("A", x=1), ev("B", x=0), ev("A", x=0), ev("B", x=1)]
    where = pattern.Filter(seq(A, B), atom("A", cmp("x", "=", 1)))
    assert run(where, events) == ces((0, 1, {0, 1}), (0, 3, {0, 3}))


def test_filter_is_vacuous_on_unbound_variable() -> None:
    events = [ev("A", x=0), ev("B", x=0)]
    where = pattern.Filter(pattern.Or(A, pattern.As(B, "v")), atom("v", cmp("x", "=", 1)))
    # The A alternative does not bind v, so the filter holds vacuously.
    assert run(where, events) == ces((0, 0, {0}))


def test_filter_or_is_union_of_filtered_sets() -> None:
    events = [ev("A", x=1), ev("A", x=0), ev("A", x=0), ev("A", x=1)]
    where = pattern.Filter(
        seq(pattern.As(A, "u"), pattern.As(A, "v")),
        pattern.FilterOr(atom("u", cmp("x", "=", 1)), atom("v", cmp("x", "=", 1))),
    )
    got = run(where, events)
    # Pairs (i, j), i < j, where event i or event j has x = 1.
    expected = {
        (i, j, (i, j), None)
        for i in range(4)
        for j in range(i + 1, 4)
        if events[i]["x"] == 1 or events[j]["x"] == 1
    }
    assert got == expected
    assert (1, 2, (1, 2), None) not in got


def test_filter_and_equals_nested_filters() -> None:
    events = [ev("A", x=1, y=0), ev("A", x=1, y=1), ev("B", x=0, y=1)]
    f1, f2 = atom("A", cmp("x", "=", 1)), atom("B", cmp("y", "=", 1))
    body = seq(A, B)
    assert run(pattern.Filter(body, pattern.FilterAnd(f1, f2)), events) == run(
        pattern.Filter(pattern.Filter(body, f1), f2), events
    )


def test_valuation_semantics_keeps_variables_apart() -> None:
    # (A AS u) OR (A AS v) gives two valuations per A; both collapse to one complex event.
    events = [ev("A")]
    vals = evaluate_formula(pattern.Or(pattern.As(A, "u"), pattern.As(A, "v")), events)
    assert len(vals) == 2
    assert run(pattern.Or(pattern.As(A, "u"), pattern.As(A, "v")), events) == ces((0, 0, {0}))


# ------------------------------------------------------------------- projection


def test_select_projects_positions_but_keeps_interval() -> None:
    events = [ev("A"), ev("C"), ev("B")]
    where = seq(pattern.As(A, "u"), B)
    assert run(where, events, select=("u",)) == ces((0, 2, {0}))
    assert run(where, events, select=("B",)) == ces((0, 2, {2}))
    assert run(where, events) == ces((0, 2, {0, 2}))


def test_select_of_unbound_variable_gives_empty_data() -> None:
    events = [ev("A"), ev("B")]
    where = pattern.Or(pattern.As(A, "u"), B)
    assert run(where, events, select=("u",)) == ces((0, 0, {0}), (1, 1, set()))


# -------------------------------------------------------------------- partition


def test_partition_by_splits_the_stream_and_maps_back_positions() -> None:
    events = [ev("A", k=0), ev("A", k=1), ev("B", k=1), ev("B"), ev("B", k=0)]
    got = run(seq(A, B), events, partition_by=("k",))
    # Event 3 has no k and belongs to no partition.
    assert got == {(0, 4, (0, 4), (0,)), (1, 2, (1, 2), (1,))}


def test_partition_by_none_value_is_no_partition() -> None:
    events = [ev("A", k=None), ev("B", k=None)]
    assert run(seq(A, B), events, partition_by=("k",)) == set()


def test_partition_by_several_attributes() -> None:
    events = [ev("A", k=0, j=1), ev("B", k=0, j=2), ev("B", k=0, j=1)]
    got = run(seq(A, B), events, partition_by=("k", "j"))
    assert got == {(0, 2, (0, 2), (0, 1))}


def test_events_window_counts_positions_in_the_partition() -> None:
    events = [ev("A", k=0), ev("C", k=1), ev("C", k=1), ev("B", k=0)]
    window = pattern.Window(pattern.WindowKind.EVENTS, 1)
    # Globally 0 and 3 are 3 apart; in partition k=0 they are adjacent.
    assert run(seq(A, B), events, partition_by=("k",), within=window) == {(0, 3, (0, 3), (0,))}
    assert run(seq(A, B), events, within=window) == set()


# ---------------------------------------------------------------------- windows


def test_events_window_zero_keeps_single_events_only() -> None:
    events = [ev("A"), ev("A")]
    window = pattern.Window(pattern.WindowKind.EVENTS, 0)
    assert run(pattern.Plus(A), events, within=window) == ces((0, 0, {0}), (1, 1, {1}))


def test_attribute_window() -> None:
    events = [ev("A", t=0), ev("A", t=2), ev("B", t=5), ev("B", t=6)]
    window = pattern.Window(pattern.WindowKind.ATTRIBUTE, 4, attr="t")
    # 6 - 0 > 4, 5 - 0 > 4; the others are within 4.
    assert run(seq(A, B), events, within=window) == ces((1, 2, {1, 2}), (1, 3, {1, 3}))


def test_attribute_window_drops_complex_events_without_clock_at_the_ends() -> None:
    events = [ev("A"), ev("A", t=1), ev("C"), ev("B", t=2), ev("B", t="late")]
    window = pattern.Window(pattern.WindowKind.ATTRIBUTE, 10, attr="t")
    # Event 0 has no t, event 4 a non-numeric t: no complex event may start or
    # end there; a clockless event in the middle (2) is fine.
    where = seq(A, pattern.Plus(pattern.Or(B, C)))
    assert run(where, events, within=window) == ces((1, 3, {1, 3}), (1, 3, {1, 2, 3}))


def test_late_events_are_removed_before_evaluation() -> None:
    events = [ev("A", t=5), ev("B", t=3), ev("B", t=5), ev("A"), ev("B", t=6)]
    window = pattern.Window(pattern.WindowKind.ATTRIBUTE, 100, attr="t")
    # Event 1 (t=3 after t=5) is late and never matches, even as a B.
    # Event 3 has no clock: kept, but it can only sit strictly inside a match.
    assert run(seq(A, B), events, within=window) == ces(
        (0, 2, {0, 2}),
        (0, 4, {0, 4}),
    )
    assert run(pattern.Plus(B), events, within=window) == ces(
        (2, 2, {2}), (4, 4, {4}), (2, 4, {2, 4})
    )


def test_late_events_are_judged_per_partition() -> None:
    events = [ev("A", k=0, t=5), ev("A", k=1, t=1), ev("B", k=1, t=2), ev("B", k=0, t=4)]
    window = pattern.Window(pattern.WindowKind.ATTRIBUTE, 10, attr="t")
    # t=1 after t=5 is late globally but not inside partition k=1; event 3 is
    # late in partition k=0.
    got = run(seq(A, B), events, within=window, partition_by=("k",))
    assert got == {(1, 2, (1, 2), (1,))}


def test_time_window_uses_time_field_in_milliseconds() -> None:
    events = [
        {"type": "A", "timestamp": 0},
        {"type": "B", "timestamp": 1000},
        {"type": "B", "timestamp": 2500},
    ]
    query = pattern.Pattern(
        where=seq(A, B),
        streams=("S",),
        within=pattern.Window(pattern.WindowKind.TIME, 2, unit="SECONDS"),
    )
    assert oracle_eval(query, events) == ces((0, 1, {0, 1}))
    renamed = [{"kind": e["type"], "ts": e["timestamp"]} for e in events]
    assert oracle_eval(query, renamed, type_field="kind", time_field="ts") == ces((0, 1, {0, 1}))


# ------------------------------------------------------------------- predicates


@pytest.mark.parametrize(
    ("pred", "event", "expected"),
    [
        (cmp("x", "=", 1), {"x": 1}, True),
        (cmp("x", "=", 1), {"x": 1.0}, True),
        (cmp("x", "=", 1), {}, False),
        (cmp("x", "!=", 1), {}, False),
        (cmp("x", "!=", 1), {"x": None}, False),
        (cmp("x", "!=", 1), {"x": 2}, True),
        (cmp("x", "!=", 1), {"x": "1"}, False),
        (cmp("x", "=", 1), {"x": True}, False),
        (cmp("x", "=", True), {"x": True}, True),
        (cmp("x", "<", True), {"x": False}, False),
        (cmp("x", "<", "b"), {"x": "a"}, True),
        (pattern.PNot(cmp("x", "=", 1)), {}, True),
        (pattern.PNot(cmp("x", "=", 1)), {"x": 1}, False),
        (pattern.InList(pattern.Attr("x"), (pattern.Const(1), pattern.Const(2))), {"x": 2}, True),
        (pattern.InList(pattern.Attr("x"), (pattern.Const(1),)), {}, False),
        (pattern.InList(pattern.Attr("x"), (pattern.Const(1),), negated=True), {"x": 2}, True),
        (pattern.InList(pattern.Attr("x"), (pattern.Const(1),), negated=True), {}, True),
        (pattern.InRange(pattern.Attr("x"), pattern.Const(1), pattern.Const(3)), {"x": 3}, True),
        (pattern.InRange(pattern.Attr("x"), pattern.Const(1), pattern.Const(3)), {"x": 4}, False),
        (pattern.InRange(pattern.Attr("x"), pattern.Const(1), pattern.Const(3)), {"x": "2"}, False),
        (pattern.Like(pattern.Attr("s"), "a.c"), {"s": "abc"}, True),
        (pattern.Like(pattern.Attr("s"), "a.c"), {"s": "abcd"}, False),
        (pattern.Like(pattern.Attr("s"), "a.c"), {"s": 5}, False),
        (pattern.Like(pattern.Attr("s"), "a.c", negated=True), {"s": "abcd"}, True),
        (pattern.BoolLit(False), {}, False),
        (
            pattern.Compare(
                ">", pattern.Arith("+", pattern.Attr("x"), pattern.Attr("y")), pattern.Const(2)
            ),
            {"x": 1, "y": 2},
            True,
        ),
        (
            pattern.Compare(
                ">", pattern.Arith("+", pattern.Attr("x"), pattern.Attr("y")), pattern.Const(2)
            ),
            {"x": 1},
            False,
        ),
        (
            pattern.Compare(
                "!=", pattern.Arith("/", pattern.Attr("x"), pattern.Attr("y")), pattern.Const(2)
            ),
            {"x": 1, "y": 0},
            False,
        ),
        (pattern.Compare("=", pattern.Neg(pattern.Attr("x")), pattern.Const(-2)), {"x": 2}, True),
        (pattern.Compare("=", pattern.Attr("x"), pattern.Attr("y")), {"x": 1, "y": 1}, True),
        (pattern.PAnd(cmp("x", ">=", 1), cmp("y", "<", 1)), {"x": 1, "y": 0}, True),
        (pattern.POr(cmp("x", ">=", 1), cmp("y", "<", 1)), {"x": 0, "y": 1}, False),
    ],
)
def test_predicate_semantics(pred: pattern.Pred, event: dict[str, Any], expected: bool) -> None:
    assert holds(pred, event) is expected


def test_missing_values_in_a_query() -> None:
    events = [ev("A", x=1), ev("A"), ev("A", x=None), ev("A", x=2)]
    not_one = pattern.Filter(A, atom("A", cmp("x", "!=", 1)))
    assert run(not_one, events) == ces((3, 3, {3}))
    negated = pattern.Filter(A, atom("A", pattern.PNot(cmp("x", "=", 1))))
    assert run(negated, events) == ces((1, 1, {1}), (2, 2, {2}), (3, 3, {3}))


# ------------------------------------------------ properties of the oracle itself


@settings(max_examples=150, deadline=None, database=None)
@given(data=st.data())
def test_plus_equals_its_unrolling(data: st.DataObject) -> None:
    """φ+ over n events equals φ OR φ;φ OR ... (n copies): a check of the fixpoint."""
    query = data.draw(queries(max_size=3, max_plus_depth=1))
    events = data.draw(streams(max_size=5))
    body = query.where
    plus = pattern.Plus(body)
    unrolled: pattern.Formula = body
    chain: pattern.Formula = body
    for _ in range(1, len(events)):
        chain = pattern.Seq(chain, body)
        unrolled = pattern.Or(unrolled, chain)
    assert evaluate_formula(plus, events) == evaluate_formula(unrolled, events)


@settings(max_examples=300, deadline=None, database=None)
@given(
    query=queries(strategies=tuple(pattern.Strategy), consumes=tuple(pattern.Consume), limits=True),
    events=streams(),
)
def test_oracle_runs_on_generated_inputs(
    query: pattern.Pattern, events: list[dict[str, Any]]
) -> None:
    by_end = _by_end(query, events)
    for end, results in by_end.items():
        assert results
        for start, result_end, positions, key in results:
            assert result_end == end
            assert 0 <= start <= end < len(events)
            assert all(start <= p <= end for p in positions)
            assert (key is None) == (not query.partition_by)
    assert _eval(query, events) == set().union(*by_end.values())
    assert to_ceql(query)


# ---------------------------------------------------------- selection strategies


def fs(*positions: int) -> frozenset[int]:
    return frozenset(positions)


def test_orders_on_the_paper_examples() -> None:
    # §4 of the Foundations paper: {5,8} ≤next {1,8} and {1,8} ≤last {5,8}.
    assert next_le(fs(5, 8), fs(1, 8))
    assert not next_le(fs(1, 8), fs(5, 8))
    assert last_le(fs(1, 8), fs(5, 8))
    assert not last_le(fs(5, 8), fs(1, 8))
    # A superset is greater for both orders; ∅ is the least set.
    assert next_le(fs(1, 8), fs(1, 5, 8)) and last_le(fs(1, 8), fs(1, 5, 8))
    assert next_le(fs(), fs(3)) and last_le(fs(), fs(3))


_SETS = st.frozensets(st.integers(0, 5), max_size=6)


@settings(max_examples=300, deadline=None, database=None)
@given(d1=_SETS, d2=_SETS, d3=_SETS)
def test_orders_are_total_orders(
    d1: frozenset[int], d2: frozenset[int], d3: frozenset[int]
) -> None:
    """Lemma 1: ≤next (and likewise ≤last) is total, antisymmetric and transitive."""
    for le in (next_le, last_le):
        assert le(d1, d1)
        assert le(d1, d2) or le(d2, d1)
        if le(d1, d2) and le(d2, d1):
            assert d1 == d2
        if le(d1, d2) and le(d2, d3):
            assert le(d1, d3)


def test_is_contiguous() -> None:
    assert is_contiguous(fs()) and is_contiguous(fs(4)) and is_contiguous(fs(2, 3, 4))
    assert not is_contiguous(fs(2, 4))


def test_select_positions_by_hand() -> None:
    candidates = {fs(1, 8), fs(5, 8), fs(7, 8), fs(1, 5, 8)}
    assert select_positions(pattern.Strategy.ALL, candidates) == candidates
    assert select_positions(pattern.Strategy.STRICT, candidates) == {fs(7, 8)}
    assert select_positions(pattern.Strategy.NEXT, candidates) == {fs(1, 5, 8)}
    assert select_positions(pattern.Strategy.LAST, candidates) == {fs(7, 8)}
    assert select_positions(pattern.Strategy.MAX, candidates) == {fs(1, 5, 8), fs(7, 8)}
    for strategy in pattern.Strategy:
        assert select_positions(strategy, set()) == set()


def _with(query: pattern.Pattern, **changes: Any) -> pattern.Pattern:
    return dataclasses.replace(query, **changes)


def _positions_by_end(results: set[OracleResult]) -> dict[tuple[int, Any], set[tuple[int, ...]]]:
    out: dict[tuple[int, Any], set[tuple[int, ...]]] = {}
    for _, end, positions, key in results:
        out.setdefault((end, key), set()).add(positions)
    return out


@settings(max_examples=300, deadline=None, database=None)
@given(query=queries(), events=streams())
def test_strategies_are_related_as_expected(
    query: pattern.Pattern, events: list[dict[str, Any]]
) -> None:
    """STRICT ⊆ ALL and NEXT, LAST ⊆ MAX ⊆ ALL; NEXT and LAST keep one set of
    positions per end and substream; a complex event is kept exactly when a kept
    one has the same end, key and positions (the start does not matter)."""
    run = {s: _eval(_with(query, strategy=s), events) for s in pattern.Strategy}
    every = run[pattern.Strategy.ALL]
    assert run[pattern.Strategy.STRICT] <= every
    assert run[pattern.Strategy.MAX] <= every
    assert run[pattern.Strategy.NEXT] <= run[pattern.Strategy.MAX]
    assert run[pattern.Strategy.LAST] <= run[pattern.Strategy.MAX]
    if query.within is None:  # a window may drop the selected set at some ends
        assert (
            _positions_by_end(every).keys() == _positions_by_end(run[pattern.Strategy.NEXT]).keys()
        )
    for strategy in (pattern.Strategy.NEXT, pattern.Strategy.LAST):
        for positions in _positions_by_end(run[strategy]).values():
            assert len(positions) == 1
    for strategy, results in run.items():
        kept = {(end, positions, key) for _, end, positions, key in results}
        assert results == {r for r in every if (r[1], r[2], r[3]) in kept}, strategy


# ------------------------------------------------------------------- consumption


@settings(max_examples=300, deadline=None, database=None)
@given(query=queries(strategies=tuple(pattern.Strategy)), events=streams())
def test_consume_by_partition_without_partition_by_is_any(
    query: pattern.Pattern, events: list[dict[str, Any]]
) -> None:
    query = _with(query, partition_by=())
    assert _eval(_with(query, consume=pattern.Consume.PARTITION), events) == (
        _eval(_with(query, consume=pattern.Consume.ANY), events)
    )


@settings(max_examples=300, deadline=None, database=None)
@given(query=queries(), events=streams())
def test_consumption_under_all_keeps_a_subset_starting_after_each_output(
    query: pattern.Pattern, events: list[dict[str, Any]]
) -> None:
    """With SELECT ALL, consuming only removes complex events, and every output
    starts after the previous output's end (of any substream for ANY, of its own
    for PARTITION)."""
    everything = _eval(query, events)
    for consume in (pattern.Consume.ANY, pattern.Consume.PARTITION):
        by_end = _by_end(_with(query, consume=consume), events)
        assert set().union(*by_end.values()) <= everything
        last_output: dict[Any, int] = {}
        for end in sorted(by_end):
            for start, _, _, key in by_end[end]:
                scope = None if consume is pattern.Consume.ANY else key
                assert start > last_output.get(scope, -1)
            for _, _, _, key in by_end[end]:
                last_output[None if consume is pattern.Consume.ANY else key] = end


@settings(max_examples=300, deadline=None, database=None)
@given(query=queries(strategies=tuple(pattern.Strategy), partitions=False), events=streams())
def test_consume_by_any_is_a_restart_on_the_rest_of_the_stream(
    query: pattern.Pattern, events: list[dict[str, Any]]
) -> None:
    """A second, recursive reading of CONSUME BY ANY: up to the first output it
    agrees with no consumption; after an output at j it is the same query on
    ``events[j + 1:]``, positions shifted by j + 1. (Without PARTITION BY and
    clock windows, whose late events depend on what came before.)"""
    if query.within is not None and query.within.kind is not pattern.WindowKind.EVENTS:
        query = _with(query, within=None)
    consuming = _with(query, consume=pattern.Consume.ANY)
    got = _by_end(consuming, events)
    plain = _by_end(query, events)
    if not plain:
        assert not got
        return
    first = min(plain)
    assert got.get(first) == plain[first]
    assert all(end >= first for end in got)
    shift = first + 1
    rest = _by_end(consuming, events[shift:])
    shifted = {
        end + shift: {(s + shift, e + shift, tuple(p + shift for p in ps), k) for s, e, ps, k in rs}
        for end, rs in rest.items()
    }
    assert {end: rs for end, rs in got.items() if end > first} == shifted
