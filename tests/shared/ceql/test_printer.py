"""The printer: ``parse(to_ceql(q)) == q`` for every query the parser can produce."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cerfleet import pattern
from cerfleet.ceql.parser import parse
from cerfleet.ceql.printer import format_formula, format_predicate, format_value, to_ceql
from tests.shared.strategies import queries

A, B, C = pattern.EventType("A"), pattern.EventType("B"), pattern.EventType("C")
X1 = pattern.FilterAtom("x", pattern.Compare("=", pattern.Attr("a"), pattern.Const(1)))
Y2 = pattern.FilterAtom("y", pattern.Compare("=", pattern.Attr("a"), pattern.Const(2)))
Z3 = pattern.FilterAtom("z", pattern.Compare("=", pattern.Attr("a"), pattern.Const(3)))


# ------------------------------------------------------------ exact renderings


@pytest.mark.parametrize(
    ("formula", "text"),
    [
        (pattern.Seq(pattern.Seq(A, B), C), "A ; B ; C"),
        (pattern.Seq(A, pattern.Seq(B, C)), "A ; (B ; C)"),
        (pattern.Or(pattern.Seq(A, B), C), "A ; B OR C"),
        (pattern.Seq(pattern.Or(A, B), C), "(A OR B) ; C"),
        (pattern.Or(A, pattern.Or(B, C)), "A OR (B OR C)"),
        (pattern.As(A, "x"), "A AS x"),
        (pattern.As(pattern.Or(A, B), "x"), "(A OR B) AS x"),
        (pattern.Plus(pattern.As(A, "x")), "(A AS x)+"),
        (pattern.As(pattern.Plus(A), "x"), "(A+) AS x"),
        (pattern.Filter(pattern.Or(A, pattern.Seq(B, C)), X1), "A OR B ; C FILTER x[a = 1]"),
        (pattern.Seq(pattern.Filter(A, X1), B), "(A FILTER x[a = 1]) ; B"),
        (pattern.Or(A, pattern.Filter(B, X1)), "A OR (B FILTER x[a = 1])"),
        (pattern.Or(A, pattern.And(B, C)), "A OR B AND C"),
        (pattern.And(pattern.Or(A, B), C), "(A OR B) AND C"),
        (pattern.And(A, pattern.And(B, C)), "A AND (B AND C)"),
        (pattern.And(pattern.Seq(A, B), pattern.Seq(C, A)), "A ; B AND C ; A"),
        (pattern.And(pattern.Filter(A, X1), B), "(A FILTER x[a = 1]) AND B"),
        (pattern.Filter(pattern.And(A, B), X1), "A AND B FILTER x[a = 1]"),
        (pattern.Filter(pattern.Filter(A, X1), Y2), "(A FILTER x[a = 1]) FILTER y[a = 2]"),
        (
            pattern.Filter(A, pattern.FilterOr(pattern.FilterAnd(X1, Y2), Z3)),
            "A FILTER x[a = 1] AND y[a = 2] OR z[a = 3]",
        ),
        (
            pattern.Filter(A, pattern.FilterAnd(X1, pattern.FilterOr(Y2, Z3))),
            "A FILTER x[a = 1] AND (y[a = 2] OR z[a = 3])",
        ),
    ],
)
def test_format_formula(formula: pattern.Formula, text: str) -> None:
    assert format_formula(formula) == text


P, Q = pattern.Compare(">", pattern.Attr("p"), pattern.Const(0)), pattern.BoolLit(True)


@pytest.mark.parametrize(
    ("pred", "text"),
    [
        (pattern.POr(pattern.PAnd(P, Q), P), "p > 0 AND TRUE OR p > 0"),
        (pattern.PAnd(pattern.POr(P, Q), P), "(p > 0 OR TRUE) AND p > 0"),
        (pattern.PAnd(P, pattern.PAnd(Q, P)), "p > 0 AND (TRUE AND p > 0)"),
        (pattern.PNot(pattern.PNot(P)), "NOT (NOT (p > 0))"),
        (
            pattern.Compare(
                "<",
                pattern.Arith(
                    "*",
                    pattern.Arith("+", pattern.Attr("a"), pattern.Const(1)),
                    pattern.Neg(pattern.Attr("b")),
                ),
                pattern.Const(-2.5),
            ),
            "(a + 1) * (-b) < -2.5",
        ),
        (
            pattern.Compare(
                "=",
                pattern.Arith(
                    "-", pattern.Attr("a"), pattern.Arith("-", pattern.Attr("b"), pattern.Const(-1))
                ),
                pattern.Const(True),
            ),
            "a - (b - (-1)) = TRUE",
        ),
        (
            pattern.InList(
                pattern.Attr("a"),
                (pattern.Const(-1), pattern.Const("it's"), pattern.Const(False)),
                True,
            ),
            "a NOT IN (-1, 'it\\'s', FALSE)",
        ),
        (
            pattern.InRange(pattern.Attr("a"), pattern.Const(1), pattern.Const(2.0)),
            "a IN RANGE(1, 2.0)",
        ),
        (pattern.Like(pattern.Attr("s"), r"\d+\\"), r"s LIKE '\\d+\\\\'"),
    ],
)
def test_format_predicate(pred: pattern.Pred, text: str) -> None:
    assert format_predicate(pred) == text


def test_format_value() -> None:
    assert format_value(True) == "TRUE"
    assert format_value(1e-7) == "1e-07"
    assert format_value("a\nb\t'\\") == "'a\\nb\\t\\'\\\\'"
    with pytest.raises(ValueError):
        format_value(float("inf"))


def test_to_ceql_clauses() -> None:
    query = pattern.Pattern(
        where=pattern.Filter(pattern.Seq(pattern.As(A, "x"), B), X1),
        select=("x", "B"),
        strategy=pattern.Strategy.MAX,
        streams=("S", "T"),
        partition_by=("k", "j"),
        within=pattern.Window(pattern.WindowKind.TIME, 2, unit="MINUTES"),
        consume=pattern.Consume.PARTITION,
        limit=3,
        declarations=(
            pattern.StreamDecl(
                "S",
                (
                    pattern.EventDecl(
                        "A", (("a", pattern.AttrType.INT), ("s", pattern.AttrType.STRING))
                    ),
                ),
            ),
        ),
    )
    assert to_ceql(query) == (
        "DECLARE STREAM S { EVENT A { a: int, s: string } }\n"
        "SELECT MAX x, B\n"
        "FROM S, T\n"
        "WHERE A AS x ; B FILTER x[a = 1]\n"
        "PARTITION BY [k, j]\n"
        "WITHIN 2 MINUTES\n"
        "CONSUME BY PARTITION\n"
        "LIMIT 3"
    )
    assert parse(to_ceql(query)) == query


# --------------------------------------------------------------- paper queries

PAPER_QUERIES = [
    """SELECT * FROM Stock
       WHERE SELL as msft; SELL as intel; SELL as amzn
       FILTER msft[name="MSFT"] AND msft[price > 100]
          AND intel[name="INTC"]
          AND amzn[name="AMZN"] AND amzn[price < 2000]""",
    """SELECT b FROM Stock
       WHERE (BUY or SELL) as s; (BUY or SELL) as b
       PARTITION BY [name], [volume]
       WITHIN 1 minute""",
    """SELECT MAX * FROM Stock
       WHERE (BUY OR SELL) as low; (BUY OR SELL)+ as mid; (BUY OR SELL) as high
       FILTER low[price < 100] AND mid[price >= 100]
          AND mid[price <= 2000] AND high[price > 2000]
       PARTITION BY [name]""",
    """SELECT * FROM S WHERE (LOAD as L1; LOAD as L2) as L FILTER
       L1[pickup_loc = 'a' and dropoff_loc = 'b'] OR (L2[x IN RANGE(1, 2)] AND L[NOT y LIKE 'q.*'])
       WITHIN 10000 [stock_time] CONSUME BY ANY""",
]


@pytest.mark.parametrize("text", PAPER_QUERIES)
def test_paper_queries_round_trip(text: str) -> None:
    query = parse(text)
    printed = to_ceql(query)
    assert parse(printed) == query, printed
    assert to_ceql(parse(printed)) == printed


# ------------------------------------------------- arbitrary parseable queries

_KEYWORD_TEXT = """
    SELECT FROM WHERE AS OR AND NOT FILTER PARTITION BY WITHIN CONSUME LIMIT ALL NEXT LAST MAX
    STRICT ANY NONE EVENT EVENTS IN RANGE LIKE TRUE FALSE DECLARE STREAM
    MILLISECONDS MILLISECOND SECONDS SECOND MINUTES MINUTE HOURS HOUR
"""
# Identifiers spelled like these read as keywords; generated names avoid them.
_KEYWORDS = frozenset(_KEYWORD_TEXT.split())

names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,5}", fullmatch=True).filter(
    lambda name: name.upper() not in _KEYWORDS
)
numbers = st.one_of(
    st.integers(-(10**12), 10**12), st.floats(allow_nan=False, allow_infinity=False)
)
# Literals as IN lists and ranges accept them; the parser folds `-5` into Const(-5).
literals = st.builds(pattern.Const, st.one_of(numbers, st.text(max_size=8), st.booleans()))


def _neg(operand: pattern.Expr) -> pattern.Expr:
    # The parser folds a minus before a number into the literal, so Neg(Const(5))
    # cannot come out of it.
    if isinstance(operand, pattern.Const) and not isinstance(operand.value, str):
        return pattern.Const(-operand.value)
    return pattern.Neg(operand)


exprs: st.SearchStrategy[pattern.Expr] = st.recursive(
    st.one_of(
        st.builds(pattern.Attr, names),
        st.builds(pattern.Const, st.one_of(numbers, st.text(max_size=8))),
    ),
    lambda sub: st.one_of(
        st.builds(pattern.Arith, st.sampled_from(("+", "-", "*", "/", "%")), sub, sub),
        sub.map(_neg),
    ),
    max_leaves=5,
)

preds: st.SearchStrategy[pattern.Pred] = st.recursive(
    st.one_of(
        st.builds(
            pattern.Compare,
            st.sampled_from(("=", "!=", "<", "<=", ">", ">=")),
            exprs,
            st.one_of(exprs, st.builds(pattern.Const, st.booleans())),
        ),
        st.builds(
            pattern.InList,
            exprs,
            st.lists(literals, min_size=1, max_size=3).map(tuple),
            st.booleans(),
        ),
        st.builds(pattern.InRange, exprs, literals, literals, st.booleans()),
        st.builds(pattern.Like, exprs, st.text(max_size=8), st.booleans()),
        st.builds(pattern.BoolLit, st.booleans()),
    ),
    lambda sub: st.one_of(
        st.builds(pattern.PNot, sub),
        st.builds(pattern.PAnd, sub, sub),
        st.builds(pattern.POr, sub, sub),
    ),
    max_leaves=4,
)

filters: st.SearchStrategy[pattern.FilterExpr] = st.recursive(
    st.builds(pattern.FilterAtom, names, preds),
    lambda sub: st.one_of(
        st.builds(pattern.FilterAnd, sub, sub), st.builds(pattern.FilterOr, sub, sub)
    ),
    max_leaves=3,
)

formulas: st.SearchStrategy[pattern.Formula] = st.recursive(
    st.builds(pattern.EventType, names),
    lambda sub: st.one_of(
        st.builds(pattern.As, sub, names),
        st.builds(pattern.Seq, sub, sub),
        st.builds(pattern.Or, sub, sub),
        st.builds(pattern.And, sub, sub),
        st.builds(pattern.Plus, sub),
        st.builds(pattern.Filter, sub, filters),
    ),
    max_leaves=6,
)

amounts = st.one_of(
    st.integers(0, 10**9), st.floats(min_value=0, allow_nan=False, allow_infinity=False)
)
windows = st.one_of(
    st.builds(pattern.Window, st.just(pattern.WindowKind.EVENTS), amounts),
    st.builds(
        pattern.Window,
        st.just(pattern.WindowKind.TIME),
        amounts,
        unit=st.sampled_from(tuple(pattern.TIME_UNITS_MS)),
    ),
    st.builds(pattern.Window, st.just(pattern.WindowKind.ATTRIBUTE), amounts, attr=names),
)
declarations = st.builds(
    pattern.StreamDecl,
    names,
    st.lists(
        st.builds(
            pattern.EventDecl,
            names,
            st.lists(st.tuples(names, st.sampled_from(pattern.AttrType)), max_size=3).map(tuple),
        ),
        min_size=1,
        max_size=2,
    ).map(tuple),
)
any_queries = st.builds(
    pattern.Pattern,
    where=formulas,
    select=st.one_of(st.none(), st.lists(names, min_size=1, max_size=3).map(tuple)),
    strategy=st.sampled_from(pattern.Strategy),
    streams=st.lists(names, min_size=1, max_size=2).map(tuple),
    partition_by=st.lists(names, max_size=3).map(tuple),
    within=st.one_of(st.none(), windows),
    consume=st.sampled_from(pattern.Consume),
    limit=st.one_of(st.none(), st.integers(1, 10**6)),
    declarations=st.lists(declarations, max_size=2).map(tuple),
)


@settings(max_examples=300, deadline=None)
@given(query=any_queries)
def test_round_trip_arbitrary_queries(query: pattern.Pattern) -> None:
    printed = to_ceql(query)
    assert parse(printed) == query, printed


@settings(max_examples=300, deadline=None)
@given(query=queries())
def test_round_trip_generated_queries(query: pattern.Pattern) -> None:
    """The differential suite's queries survive printing, as it relies on that."""
    printed = to_ceql(query)
    assert parse(printed) == query, printed
