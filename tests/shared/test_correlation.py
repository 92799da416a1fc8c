"""Correlations (filters comparing events) against the brute-force oracle.

Random queries of the differential suite get random correlations: on the whole
formula and on random sub-formulas (inside ``+`` too, where each iteration is one
instance), between variables bound inside the filtered formula and around it, with
arithmetic and ``PREV(x)``. Every strategy, consumption policy, window and
partitioning is drawn; the engine must emit exactly the oracle's complex events.
Foundations' φ4 on its Figure 1 stream is checked by hand, as are the syntax and
the errors.
"""

from __future__ import annotations

import itertools
import json
import os
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cerfleet import pattern
from cerfleet.ceql.printer import to_ceql
from cerfleet.errors import CerfleetError
from cerfleet.query import compile_query
from tests.shared.evaluation.test_batch import to_columns
from tests.shared.strategies import (
    ATTRIBUTES,
    EVENT_TYPES,
    MISSING_ATTRIBUTE,
    TIME_FIELD,
    event_types,
    streams,
)
from tests.shared.test_differential import check_against_oracle, check_snapshot_restore

# Each example draws a query, its correlations and a stream, and the oracle enumerates
# every valuation: 600 per strategy keep the suite's time in bounds; the proof run with
# 2,500 per strategy is ``CERFLEET_CORRELATION_EXAMPLES=2500 pytest <this file>``.
MAX_EXAMPLES = int(os.environ.get("CERFLEET_CORRELATION_EXAMPLES", "600"))


def _defined(formula: pattern.Formula) -> set[str]:
    """Variables a correlation may read in ``formula``: bound by a type or AS, never to
    a NOT(...) event."""
    if isinstance(formula, pattern.EventType):
        return {formula.name}
    if isinstance(formula, pattern.NotEvent):
        return set()
    if isinstance(formula, pattern.As):
        inner = formula.formula
        if _has_not(inner):
            return _defined(inner)
        return _defined(inner) | {formula.var}
    out: set[str] = set()
    for name in ("formula", "left", "right"):
        child = getattr(formula, name, None)
        if child is not None:
            out |= _defined(child)
    return out


def _has_not(formula: pattern.Formula) -> bool:
    if isinstance(formula, pattern.NotEvent):
        return True
    return any(
        _has_not(child)
        for child in (getattr(formula, n, None) for n in ("formula", "left", "right"))
        if child is not None
    )


def _negated_vars(formula: pattern.Formula) -> set[str]:
    out: set[str] = set()
    if isinstance(formula, pattern.As) and _has_not(formula.formula):
        out.add(formula.var)
    for name in ("formula", "left", "right"):
        child = getattr(formula, name, None)
        if child is not None:
            out |= _negated_vars(child)
    return out


@st.composite
def _reference(draw: st.DrawFn, inner: list[str], outer: list[str]) -> pattern.VarAttr:
    var = draw(st.sampled_from(inner + outer))
    attr = draw(st.sampled_from((*ATTRIBUTES, *ATTRIBUTES, MISSING_ATTRIBUTE)))
    back = draw(st.sampled_from((0, 0, 1))) if var in inner else 0
    return pattern.VarAttr(var, attr, back)


@st.composite
def _side(draw: st.DrawFn, inner: list[str], outer: list[str]) -> pattern.Expr:
    ref = draw(_reference(inner, outer))
    roll = draw(st.integers(0, 5))
    if roll == 0:
        return pattern.Arith("+", ref, pattern.Const(draw(st.integers(-2, 2))))
    if roll == 1:
        return pattern.Arith("*", ref, pattern.Const(draw(st.sampled_from((2, 0.5)))))
    if roll == 2:
        return pattern.Neg(ref)
    return ref


@st.composite
def correlations(draw: st.DrawFn, inner: list[str], outer: list[str]) -> pattern.Correlation:
    """A comparison of two sides; at least one reads a variable of the filtered formula."""
    op = draw(st.sampled_from(("=", "!=", "<", "<=", ">", ">=")))
    left = draw(_side(inner, []))
    right = draw(_side(inner, outer))
    if draw(st.booleans()):
        left, right = right, left
    return pattern.Correlation(pattern.Compare(op, left, right))


_FORMULAS = (
    pattern.EventType,
    pattern.As,
    pattern.Seq,
    pattern.Or,
    pattern.And,
    pattern.Plus,
    pattern.Filter,
    pattern.Contiguous,
    pattern.ContiguousPlus,
    pattern.Absent,
    pattern.NotEvent,
)


@st.composite
def correlated(
    draw: st.DrawFn, formula: pattern.Formula, allowed: frozenset[str]
) -> pattern.Formula:
    """``formula`` with correlations on random sub-formulas (and often on itself)."""

    def walk(phi: pattern.Formula, depth: int) -> pattern.Formula:
        children = {
            name: walk(child, depth + 1)
            for name in ("formula", "left", "right")
            if isinstance(
                child := getattr(phi, name, None),
                pattern.EventType
                | pattern.As
                | pattern.Seq
                | pattern.Or
                | pattern.Plus
                | pattern.Filter
                | pattern.Contiguous
                | pattern.ContiguousPlus
                | pattern.Absent,
            )
        }
        if children:
            phi = replace(phi, **children)  # type: ignore[arg-type]
        inner = sorted(_defined(phi) & allowed)
        outer = sorted(allowed - set(inner))
        if inner and draw(st.integers(0, 5 if depth else 1)) == 0:
            corr = draw(correlations(inner, outer))
            return pattern.Filter(phi, corr)
        return phi

    return walk(formula, 0)


def correlated_examples(
    data: st.DataObject, strategy: pattern.Strategy
) -> tuple[pattern.Pattern, list[dict[str, Any]]]:
    from tests.shared.strategies import queries

    query = data.draw(
        queries(strategies=(strategy,), consumes=tuple(pattern.Consume), limits=True, dense=True),
        label="query",
    )
    allowed = frozenset(_defined(query.where) - _negated_vars(query.where))
    if not allowed:
        return query, []
    where = data.draw(correlated(query.where, allowed), label="where")
    query = replace(query, where=where)
    types = sorted(event_types(where) & set(EVENT_TYPES)) * 3 + list(EVENT_TYPES)
    stream = data.draw(streams(min_size=2, max_size=9, types=types), label="stream")
    return query, stream


@pytest.mark.parametrize("strategy", list(pattern.Strategy), ids=lambda s: s.value)
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_correlations_match_oracle(strategy: pattern.Strategy, data: st.DataObject) -> None:
    query, stream = correlated_examples(data, strategy)
    check_against_oracle(query, stream)


@settings(
    max_examples=MAX_EXAMPLES // 5,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data(), every=st.integers(min_value=1, max_value=3))
def test_correlated_snapshots_restore(data: st.DataObject, every: int) -> None:
    strategy = data.draw(st.sampled_from(list(pattern.Strategy)))
    query, stream = correlated_examples(data, strategy)
    check_snapshot_restore(replace(query, limit=None), stream, every)


# Foundations of CEP, Figure 1: index, type, id, value (tmp for T, hum for H).
_FIGURE_1 = [
    ("H", 2, 25),
    ("T", 0, 45),
    ("H", 0, 20),
    ("H", 1, 25),
    ("T", 1, 40),
    ("T", 0, 42),
    ("T", 1, 25),
    ("H", 1, 70),
    ("H", 0, 18),
]
_S = [{"type": t, "id": i, ("hum" if t == "H" else "tmp"): v} for t, i, v in _FIGURE_1]
_PHI4 = (
    "[H AS x ; (T AS y FILTER y[id] = x[id])+ ; H AS z] "
    "FILTER x[hum < 30] AND z[hum > 60] AND x[id] = z[id]"
)


def _run(text: str, events: list[dict[str, Any]]) -> list[tuple[int, ...]]:
    evaluator = compile_query(text).evaluator()
    return sorted(ce.positions for e in events for ce in evaluator.process(e))


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        # The paper: φ4 has φ3's three complex events (only x = 3, z = 7 qualify) ...
        ("", [(3, 4, 6, 7), (3, 4, 7), (3, 6, 7)]),
        # ... and NXT(φ4) keeps {3,4,6,7} but neither {3,4,7} nor {3,6,7}.
        ("NEXT", [(3, 4, 6, 7)]),
        ("LAST", [(3, 4, 6, 7)]),
        ("MAX", [(3, 4, 6, 7)]),
        ("STRICT", []),
    ],
)
def test_foundations_phi4(strategy: str, expected: list[tuple[int, ...]]) -> None:
    query = f"SELECT {strategy} * FROM S WHERE " + _PHI4.replace("[H", "(H").replace("z] ", "z) ")
    assert _run(query, _S) == expected


def test_the_issue_query_works_as_written() -> None:
    text = (
        "SELECT * FROM S WHERE (A AS a ; B AS b ; C AS c) "
        "FILTER a[name = 'INTC'] AND b[price] > a[price] * 1.05 AND a[volume] = c[volume]"
    )
    events = [
        {"type": "A", "name": "INTC", "price": 10, "volume": 5},
        {"type": "B", "price": 10.2, "volume": 1},  # not 5% above
        {"type": "B", "price": 11, "volume": 2},
        {"type": "A", "name": "AMD", "price": 1, "volume": 5},  # not INTC
        {"type": "C", "volume": 5},
        {"type": "C", "volume": 6},  # another volume
    ]
    assert _run(text, events) == [(0, 2, 4)]


def test_rising_run_with_prev() -> None:
    text = "SELECT * FROM S WHERE A ; B+ FILTER B[price] > PREV(B)[price] WITHIN 4 EVENTS"
    events = [{"type": "A"}] + [{"type": "B", "price": p} for p in (1, 3, 2, 4)]
    # Every subsequence of the B's whose prices rise, after the A.
    assert _run(text, events) == [
        (0, 1),
        (0, 1, 2),
        (0, 1, 2, 4),
        (0, 1, 3),
        (0, 1, 3, 4),
        (0, 1, 4),
        (0, 2),
        (0, 2, 4),
        (0, 3),
        (0, 3, 4),
        (0, 4),
    ]


def test_prev_is_per_iteration_instance() -> None:
    # Inside (A ; B+)+ each iteration's B's rise; a later iteration may start lower.
    text = "SELECT * FROM S WHERE (A ; B+ FILTER B[p] > PREV(B)[p])+"
    events = [
        {"type": "A"},
        {"type": "B", "p": 5},
        {"type": "B", "p": 6},
        {"type": "A"},
        {"type": "B", "p": 1},
    ]
    assert (0, 1, 2, 3, 4) in _run(text, events)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("SELECT * FROM S WHERE A ; B FILTER B[x] > q[x]", "unbound variable 'q'"),
        ("SELECT * FROM S WHERE A ; (B FILTER B[x] > PREV(A)[x]) ; A", "unbound variable 'A'"),
        (
            "SELECT * FROM S WHERE A ; B FILTER B[x] > A[x] OR B[y > 1]",
            "cannot be one side of a filter OR",
        ),
    ],
)
def test_correlation_errors_point_at_the_text(text: str, message: str) -> None:
    with pytest.raises(CerfleetError, match=message) as caught:
        compile_query(text)
    assert "line 1" in str(caught.value)


@settings(
    max_examples=MAX_EXAMPLES // 3,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data(), cut=st.integers(0, 9))
def test_correlated_columns_and_records_match_rows(data: st.DataObject, cut: int) -> None:
    """The columnar path and raw JSON records give what the rows give."""
    strategy = data.draw(st.sampled_from(list(pattern.Strategy)))
    query, stream = correlated_examples(data, strategy)
    query = replace(query, limit=None)
    compiled = compile_query(to_ceql(query), time_field=TIME_FIELD)
    rows = compiled.evaluator()
    expected = sorted(_key(ce) for e in stream for ce in rows.process(e))
    columns, records = compiled.evaluator(), compiled.evaluator()
    by_columns: list[tuple[Any, ...]] = []
    by_records: list[tuple[Any, ...]] = []
    for part in (stream[:cut], stream[cut:]):
        by_columns += [_key(ce) for ce in columns.process_columns(to_columns(part))]
        raw = [json.dumps(e).encode() for e in part]
        by_records += [_key(ce) for ce in records.process_records(raw)]
    assert sorted(by_columns) == expected
    assert sorted(by_records) == expected


def _key(ce: Any) -> tuple[Any, ...]:
    return (ce.start, ce.end, ce.positions, ce.key)


def _leaf_vars(formula: pattern.Formula, above: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    if isinstance(formula, pattern.EventType):
        return [(formula.name, *above)]
    if isinstance(formula, pattern.As):
        return _leaf_vars(formula.formula, (*above, formula.var))
    out: list[tuple[str, ...]] = []
    for name in ("formula", "left", "right"):
        child = getattr(formula, name, None)
        if isinstance(child, _FORMULAS):
            out += _leaf_vars(child, above)
    return out


@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_equalities_over_every_event_match_oracle(data: st.DataObject) -> None:
    """Equalities chaining a variable of every event (``cea.equality_keys`` turns them
    into a PARTITION BY key when that means the same), with every window, consumption
    and partitioning, out-of-order clocks included."""
    from tests.shared.strategies import queries

    query = data.draw(
        queries(consumes=tuple(pattern.Consume), limits=True, dense=True), label="query"
    )
    allowed = _defined(query.where) - _negated_vars(query.where)
    chosen = [
        data.draw(st.sampled_from(sorted(set(vs) & allowed)), label="var")
        for vs in _leaf_vars(query.where)
        if set(vs) & allowed
    ]
    chosen = list(dict.fromkeys(chosen))
    if len(chosen) < 2:
        return
    attr = data.draw(st.sampled_from(ATTRIBUTES), label="attr")
    theta: pattern.FilterExpr | None = None
    for a, b in itertools.pairwise(chosen):
        eq = pattern.Correlation(
            pattern.Compare("=", pattern.VarAttr(a, attr), pattern.VarAttr(b, attr))
        )
        theta = eq if theta is None else pattern.FilterAnd(theta, eq)
    assert theta is not None
    query = replace(query, where=pattern.Filter(query.where, theta))
    types = sorted(event_types(query.where) & set(EVENT_TYPES)) * 3 + list(EVENT_TYPES)
    stream = data.draw(streams(min_size=2, max_size=9, types=types), label="stream")
    check_against_oracle(query, stream)


def test_an_equality_over_every_event_is_a_partition_key() -> None:
    phi4 = compile_query("SELECT * FROM S WHERE " + _PHI4.replace("[H", "(H").replace("z] ", "z) "))
    assert phi4.implicit_keys == ("id",)
    assert phi4.correlation is None  # nothing left to check at enumeration
    # Under NEXT the strategy chooses among correlated complex events: checked, not keyed.
    nxt = compile_query(
        "SELECT NEXT * FROM S WHERE " + _PHI4.replace("[H", "(H").replace("z] ", "z) ")
    )
    assert nxt.implicit_keys == ()
    assert nxt.correlation is not None
    # One event type left out of the chain: no key.
    partial = compile_query("SELECT * FROM S WHERE A AS a ; B AS b ; C FILTER a[k] = b[k]")
    assert partial.implicit_keys == ()


# Every strategy × consumption × window kind, each with its own examples: the proof
# run gives each cell 2,500 (``CERFLEET_CORRELATION_GRID_EXAMPLES=2500``); the suite
# a few per cell, since ``test_correlations_match_oracle`` already draws them all.
GRID_EXAMPLES = int(os.environ.get("CERFLEET_CORRELATION_GRID_EXAMPLES", "12"))
_GRID_WINDOWS = {
    "none": None,
    "events": pattern.Window(pattern.WindowKind.EVENTS, 3),
    "attribute": pattern.Window(pattern.WindowKind.ATTRIBUTE, 3, attr=TIME_FIELD),
    "time": pattern.Window(pattern.WindowKind.TIME, 3, unit="MILLISECONDS"),
}


@pytest.mark.parametrize("window", sorted(_GRID_WINDOWS))
@pytest.mark.parametrize("consume", list(pattern.Consume), ids=lambda c: c.value)
@pytest.mark.parametrize("strategy", list(pattern.Strategy), ids=lambda s: s.value)
@settings(
    max_examples=GRID_EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_correlation_grid_matches_oracle(
    strategy: pattern.Strategy, consume: pattern.Consume, window: str, data: st.DataObject
) -> None:
    query, stream = correlated_examples(data, strategy)
    limit = query.limit if consume is pattern.Consume.NONE else None
    query = replace(query, consume=consume, within=_GRID_WINDOWS[window], limit=limit)
    check_against_oracle(query, stream)


def test_an_outer_variable_counts_only_its_bindings_inside_the_formula_defining_it() -> None:
    """``u`` is bound by the OR's left branch and by an ``AS u`` around everything; the
    correlation in the right branch takes ``u`` from the OR's instance, where the right
    branch binds no ``u``: nothing to compare, so it holds (the AS around it does not
    count)."""
    text = "SELECT * FROM S WHERE ((A FILTER A[x] = B[x]) AS u OR (B ; B FILTER B[x] = u[x])) AS u"
    assert _run(text, [{"type": "B"}, {"type": "B", "x": 0}]) == [(0, 1)]
