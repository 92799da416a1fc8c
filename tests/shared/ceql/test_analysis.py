"""Semantic checks: variables, windows, limits, types, regexes and the schema."""

from __future__ import annotations

import pytest

from cerfleet import pattern
from cerfleet.ceql.analysis import bindings, check, event_types
from cerfleet.ceql.parser import parse, parse_and_check
from cerfleet.errors import CEQLError
from cerfleet.query import compile_query

SCHEMA = """DECLARE STREAM Stock {
    EVENT SELL { name: string, price: double, volume: int, stock_time: primary_time },
    EVENT BUY { name: string, price: double, volume: int, ok: boolean }
}
DECLARE STREAM Taxi { EVENT TRIP { pickup_loc: string } }
"""


def _error(text: str) -> CEQLError:
    with pytest.raises(CEQLError) as info:
        parse_and_check(text)
    return info.value


def _assert_points_at(err: CEQLError, text: str, culprit: str, occurrence: int = 0) -> None:
    """The error's line/column/length cover the ``occurrence``-th ``culprit`` in ``text``."""
    offset = -1
    for _ in range(occurrence + 1):
        offset = text.index(culprit, offset + 1)
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    assert (err.line, err.column, err.length) == (line, column, len(culprit))
    rendered = str(err).splitlines()
    assert rendered[1] == "  " + text.splitlines()[line - 1]
    assert rendered[2] == "  " + " " * (column - 1) + "^" * len(culprit)
    assert rendered[-1] == f"expected {err.expected}"


# ------------------------------------------------------------------ bindings


def test_bindings_and_event_types() -> None:
    where = parse("SELECT * FROM S WHERE (A OR B) AS x ; (C AS y ; A)+ AS x").where
    assert event_types(where) == ["A", "B", "C"]
    assert bindings(where) == {"A": ["A"], "B": ["B"], "x": ["A", "B", "C"], "C": ["C"], "y": ["C"]}


# ----------------------------------------------------------- no schema needed


def test_paper_queries_pass() -> None:
    parse_and_check(
        """SELECT MAX * FROM Stock
        WHERE (BUY OR SELL) as low; (BUY OR SELL)+ as mid; (BUY OR SELL) as high
        FILTER low[price < 100] AND mid[price >= 100]
           AND mid[price <= 2000] AND high[price > 2000]
        PARTITION BY [name]"""
    )
    parse_and_check(
        """SELECT * FROM S
        WHERE (LOAD as L1; LOAD as L2; LOAD as L3) as L
        FILTER L[value > 76] AND
               L1[household_id = 0] AND L2[household_id = 2] AND L3[household_id = 4]
        WITHIN 10 [plug_timestamp]"""
    )


def test_unbound_filter_variable() -> None:
    text = "SELECT * FROM S\nWHERE A AS a ; B AS b\nFILTER a[x > 1] AND c[y < 2]"
    err = _error(text)
    assert err.message == "unbound variable 'c' in FILTER"
    assert err.expected == "a variable bound in the filtered formula: A, a, B, b"
    _assert_points_at(err, text, "c")


def test_filter_variables_must_be_bound_in_the_filtered_formula() -> None:
    # x is bound in the query, but not on the left of this FILTER.
    text = "SELECT * FROM S WHERE (A AS x ; B FILTER x[p = 1]) ; (C FILTER x[p = 2])"
    err = _error(text)
    assert err.message == "unbound variable 'x' in FILTER"
    assert err.expected == "a variable bound in the filtered formula: C"
    _assert_points_at(err, text, "x", occurrence=2)
    parse_and_check("SELECT * FROM S WHERE A AS x ; B FILTER x[p = 1] AND B[q = 2]")


def test_select_variable_must_be_bound() -> None:
    text = "SELECT a, zz FROM S WHERE A AS a ; B"
    err = _error(text)
    assert err.message == "unknown variable 'zz' in SELECT"
    assert err.expected == "a variable bound in WHERE: A, a, B"
    _assert_points_at(err, text, "zz")
    parse_and_check("SELECT a, B FROM S WHERE A AS a ; B")


@pytest.mark.parametrize("window", ["0 EVENTS", "0 SECONDS", "0.0 [t]", "0 HOURS 0 MINUTES"])
def test_an_empty_window_is_a_window(window: str) -> None:
    # ε = 0: the complex events whose events share one instant (or one position).
    query = parse_and_check(f"SELECT * FROM S WHERE A WITHIN {window}")
    assert query.within is not None and query.within.amount == 0


def test_a_window_cannot_be_negative() -> None:
    err = _error("SELECT * FROM S WHERE A WITHIN -1 EVENTS")
    assert err.message == "unexpected '-'"


def test_event_window_counts_whole_events() -> None:
    err = _error("SELECT * FROM S WHERE A WITHIN 2.5 EVENTS")
    assert err.expected == "a whole number of events"


def test_limit_must_be_positive() -> None:
    text = "SELECT * FROM S WHERE A LIMIT 0"
    err = _error(text)
    assert err.message == "LIMIT must be positive"
    _assert_points_at(err, text, "0")


def test_string_constant_compared_with_number() -> None:
    text = "SELECT * FROM S WHERE A FILTER A[1 = 'one']"
    err = _error(text)
    assert err.message == "cannot compare a number with a string"
    assert err.expected == "a number on the right of '='"
    _assert_points_at(err, text, "'one'")


@pytest.mark.parametrize(
    ("pred", "culprit", "expected"),
    [
        ("p + 'a' > 1", "'a'", "a number"),
        ("-'a' > 1", "'a'", "a number"),
        ("p IN (1, 'a')", "'a'", "a number"),
        ("p IN RANGE('a', 2)", "'a'", "a number"),
        ("'a' IN RANGE(1, 2)", "'a'", "a number"),
        ("2 LIKE 'a'", "2", "a string"),
        ("1 = TRUE", "TRUE", "a number on the right of '='"),
    ],
)
def test_kind_mismatches(pred: str, culprit: str, expected: str) -> None:
    text = f"SELECT * FROM S WHERE A FILTER A[{pred}]"
    err = _error(text)
    assert err.expected == expected
    _assert_points_at(err, text, culprit)


def test_invalid_regex() -> None:
    text = "SELECT * FROM S WHERE A FILTER A[name LIKE '(unclosed']"
    err = _error(text)
    assert err.message.startswith("invalid regular expression after LIKE")
    assert err.message.endswith("missing ): (unclosed")
    assert err.expected is not None and err.expected.startswith("a regular expression in RE2")
    # The caret goes under the part RE2 names, when it occurs once in the LIKE.
    _assert_points_at(err, text, "(unclosed")
    parse_and_check(r"SELECT * FROM S WHERE A FILTER A[name LIKE 'MS\w+']")


@pytest.mark.parametrize(
    ("regex", "culprit", "reason"),
    [
        (r"(a)\\1", r"\1", "backreference"),
        ("(?<=x)y", "(?<=", "look-behind"),
        ("x(?!y)", "(?!", "look-ahead"),
        ("(a)(a)(a", "(a)(a)(a", "missing )"),  # RE2 names the whole pattern
        ("(x)|(x", "(x)|(x", "missing )"),
    ],
)
def test_regex_outside_linear_time_syntax(regex: str, culprit: str, reason: str) -> None:
    text = f"SELECT * FROM S WHERE A FILTER A[name LIKE '{regex}']"
    err = _error(text)
    assert reason in err.message
    _assert_points_at(err, text, culprit)


def test_check_accepts_hand_built_queries_without_spans() -> None:
    query = pattern.Pattern(where=pattern.EventType("A"), select=("nope",))
    with pytest.raises(CEQLError) as info:
        check(query, "")
    assert (info.value.line, info.value.column) == (1, 1)


# ------------------------------------------------------------- with a schema


def test_schema_accepts_a_correct_query() -> None:
    parse_and_check(
        SCHEMA
        + """SELECT * FROM Stock
        WHERE (SELL OR BUY) AS x ; BUY
        FILTER x[name = 'MSFT' AND price * 2 > 10.5 AND volume IN RANGE(1, 9)]
           AND BUY[ok = TRUE AND name LIKE 'A.*']
        PARTITION BY [name]
        WITHIN 30000 [stock_time]"""
    )


def _schema_error(query: str) -> tuple[CEQLError, str]:
    text = SCHEMA + query
    return _error(text), text


def test_unknown_stream() -> None:
    err, text = _schema_error("SELECT * FROM Stock, Nope WHERE SELL")
    assert err.message == "unknown stream 'Nope' in FROM"
    assert err.expected == "a declared stream: Stock, Taxi"
    _assert_points_at(err, text, "Nope")


def test_unknown_event_type() -> None:
    # TRIP is declared, but not in a stream the query reads.
    err, text = _schema_error("SELECT * FROM Stock WHERE SELL ; TRIP")
    assert err.message == "unknown event type 'TRIP'"
    assert err.expected == "an event type of Stock: SELL, BUY"
    _assert_points_at(err, text, "TRIP", occurrence=1)


def test_unknown_attribute_for_the_variable() -> None:
    err, text = _schema_error("SELECT * FROM Stock WHERE BUY AS b FILTER b[stock_time > 5]")
    assert err.message == "unknown attribute 'stock_time' for 'b'"
    assert err.expected == "an attribute of BUY: name, ok, price, volume"
    _assert_points_at(err, text, "stock_time", occurrence=1)
    # An attribute of any of the event types the variable can bind is fine.
    parse_and_check(
        SCHEMA + "SELECT * FROM Stock WHERE (SELL OR BUY) AS b FILTER b[stock_time > 5]"
    )


@pytest.mark.parametrize(
    ("pred", "culprit", "message"),
    [
        ("name > 5", "5", "cannot compare a string with a number"),
        ("price = 'cheap'", "'cheap'", "cannot compare a number with a string"),
        ("5 = name", "name", "cannot compare a number with a string"),
        ("price LIKE 'a'", "price", "a number cannot stand before LIKE"),
        ("name IN RANGE(1, 2)", "name", "a string cannot stand before IN RANGE"),
        ("volume IN ('a')", "'a'", "a string cannot stand in the IN list"),
    ],
)
def test_attribute_kinds(pred: str, culprit: str, message: str) -> None:
    err, text = _schema_error(f"SELECT * FROM Stock WHERE SELL FILTER SELL[{pred}]")
    assert err.message == message
    _assert_points_at(err, text, culprit, occurrence=text.count(culprit) - 1)


def test_unknown_partition_attribute() -> None:
    err, text = _schema_error("SELECT * FROM Stock WHERE SELL PARTITION BY [name], [sector]")
    assert err.message == "unknown attribute 'sector' in PARTITION BY"
    assert err.expected == (
        "an attribute of a declared event type: name, ok, price, stock_time, volume"
    )
    _assert_points_at(err, text, "sector")


def test_window_attribute_must_be_declared_and_numeric() -> None:
    err, text = _schema_error("SELECT * FROM Stock WHERE SELL WITHIN 5 [ts]")
    assert err.message == "unknown attribute 'ts' in WITHIN"
    _assert_points_at(err, text, "WITHIN 5 [ts]")
    err, text = _schema_error("SELECT * FROM Stock WHERE SELL WITHIN 5 [name]")
    assert err.message == "window attribute 'name' is not numeric"


def test_a_stream_qualifier_names_a_stream_of_from() -> None:
    with pytest.raises(CEQLError) as info:
        compile_query("SELECT * FROM S1 WHERE S1>A ; S2>B")
    err = info.value
    assert (err.line, err.column) == (1, 31)
    assert "stream 'S2' is not in FROM" in err.message
    assert err.expected == "one of the streams in FROM: S1"
