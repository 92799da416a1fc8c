"""The printer: ``parse(to_ceql(q)) == q`` for every query the parser can produce."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.ceql import ast
from shared.ceql.parser import parse
from shared.ceql.printer import format_formula, format_predicate, format_value, to_ceql
from tests.shared.strategies import queries

A, B, C = ast.EventType("A"), ast.EventType("B"), ast.EventType("C")
X1 = ast.FilterAtom("x", ast.Compare("=", ast.Attr("a"), ast.Const(1)))
Y2 = ast.FilterAtom("y", ast.Compare("=", ast.Attr("a"), ast.Const(2)))
Z3 = ast.FilterAtom("z", ast.Compare("=", ast.Attr("a"), ast.Const(3)))


# ------------------------------------------------------------ exact renderings


@pytest.mark.parametrize(
    ("formula", "text"),
    [
        (ast.Seq(ast.Seq(A, B), C), "A ; B ; C"),
        (ast.Seq(A, ast.Seq(B, C)), "A ; (B ; C)"),
        (ast.Or(ast.Seq(A, B), C), "A ; B OR C"),
        (ast.Seq(ast.Or(A, B), C), "(A OR B) ; C"),
        (ast.Or(A, ast.Or(B, C)), "A OR (B OR C)"),
        (ast.As(A, "x"), "A AS x"),
        (ast.As(ast.Or(A, B), "x"), "(A OR B) AS x"),
        (ast.Plus(ast.As(A, "x")), "(A AS x)+"),
        (ast.As(ast.Plus(A), "x"), "(A+) AS x"),
        (ast.Filter(ast.Or(A, ast.Seq(B, C)), X1), "A OR B ; C FILTER x[a = 1]"),
        (ast.Seq(ast.Filter(A, X1), B), "(A FILTER x[a = 1]) ; B"),
        (ast.Or(A, ast.Filter(B, X1)), "A OR (B FILTER x[a = 1])"),
        (ast.Filter(ast.Filter(A, X1), Y2), "(A FILTER x[a = 1]) FILTER y[a = 2]"),
        (
            ast.Filter(A, ast.FilterOr(ast.FilterAnd(X1, Y2), Z3)),
            "A FILTER x[a = 1] AND y[a = 2] OR z[a = 3]",
        ),
        (
            ast.Filter(A, ast.FilterAnd(X1, ast.FilterOr(Y2, Z3))),
            "A FILTER x[a = 1] AND (y[a = 2] OR z[a = 3])",
        ),
    ],
)
def test_format_formula(formula: ast.Formula, text: str) -> None:
    assert format_formula(formula) == text


P, Q = ast.Compare(">", ast.Attr("p"), ast.Const(0)), ast.BoolLit(True)


@pytest.mark.parametrize(
    ("pred", "text"),
    [
        (ast.POr(ast.PAnd(P, Q), P), "p > 0 AND TRUE OR p > 0"),
        (ast.PAnd(ast.POr(P, Q), P), "(p > 0 OR TRUE) AND p > 0"),
        (ast.PAnd(P, ast.PAnd(Q, P)), "p > 0 AND (TRUE AND p > 0)"),
        (ast.PNot(ast.PNot(P)), "NOT (NOT (p > 0))"),
        (
            ast.Compare(
                "<",
                ast.Arith("*", ast.Arith("+", ast.Attr("a"), ast.Const(1)), ast.Neg(ast.Attr("b"))),
                ast.Const(-2.5),
            ),
            "(a + 1) * (-b) < -2.5",
        ),
        (
            ast.Compare(
                "=",
                ast.Arith("-", ast.Attr("a"), ast.Arith("-", ast.Attr("b"), ast.Const(-1))),
                ast.Const(True),
            ),
            "a - (b - (-1)) = TRUE",
        ),
        (
            ast.InList(ast.Attr("a"), (ast.Const(-1), ast.Const("it's"), ast.Const(False)), True),
            "a NOT IN (-1, 'it\\'s', FALSE)",
        ),
        (ast.InRange(ast.Attr("a"), ast.Const(1), ast.Const(2.0)), "a IN RANGE(1, 2.0)"),
        (ast.Like(ast.Attr("s"), r"\d+\\"), r"s LIKE '\\d+\\\\'"),
    ],
)
def test_format_predicate(pred: ast.Pred, text: str) -> None:
    assert format_predicate(pred) == text


def test_format_value() -> None:
    assert format_value(True) == "TRUE"
    assert format_value(1e-7) == "1e-07"
    assert format_value("a\nb\t'\\") == "'a\\nb\\t\\'\\\\'"
    with pytest.raises(ValueError):
        format_value(float("inf"))


def test_to_ceql_clauses() -> None:
    query = ast.Query(
        where=ast.Filter(ast.Seq(ast.As(A, "x"), B), X1),
        select=("x", "B"),
        strategy=ast.Strategy.MAX,
        streams=("S", "T"),
        partition_by=("k", "j"),
        within=ast.Window(ast.WindowKind.TIME, 2, unit="MINUTES"),
        consume=ast.Consume.PARTITION,
        limit=3,
        declarations=(
            ast.StreamDecl(
                "S", (ast.EventDecl("A", (("a", ast.AttrType.INT), ("s", ast.AttrType.STRING))),)
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
literals = st.builds(ast.Const, st.one_of(numbers, st.text(max_size=8), st.booleans()))


def _neg(operand: ast.Expr) -> ast.Expr:
    # The parser folds a minus before a number into the literal, so Neg(Const(5))
    # cannot come out of it.
    if isinstance(operand, ast.Const) and not isinstance(operand.value, str):
        return ast.Const(-operand.value)
    return ast.Neg(operand)


exprs: st.SearchStrategy[ast.Expr] = st.recursive(
    st.one_of(
        st.builds(ast.Attr, names),
        st.builds(ast.Const, st.one_of(numbers, st.text(max_size=8))),
    ),
    lambda sub: st.one_of(
        st.builds(ast.Arith, st.sampled_from(("+", "-", "*", "/", "%")), sub, sub),
        sub.map(_neg),
    ),
    max_leaves=5,
)

preds: st.SearchStrategy[ast.Pred] = st.recursive(
    st.one_of(
        st.builds(
            ast.Compare,
            st.sampled_from(("=", "!=", "<", "<=", ">", ">=")),
            exprs,
            st.one_of(exprs, st.builds(ast.Const, st.booleans())),
        ),
        st.builds(
            ast.InList, exprs, st.lists(literals, min_size=1, max_size=3).map(tuple), st.booleans()
        ),
        st.builds(ast.InRange, exprs, literals, literals, st.booleans()),
        st.builds(ast.Like, exprs, st.text(max_size=8), st.booleans()),
        st.builds(ast.BoolLit, st.booleans()),
    ),
    lambda sub: st.one_of(
        st.builds(ast.PNot, sub), st.builds(ast.PAnd, sub, sub), st.builds(ast.POr, sub, sub)
    ),
    max_leaves=4,
)

filters: st.SearchStrategy[ast.FilterExpr] = st.recursive(
    st.builds(ast.FilterAtom, names, preds),
    lambda sub: st.one_of(st.builds(ast.FilterAnd, sub, sub), st.builds(ast.FilterOr, sub, sub)),
    max_leaves=3,
)

formulas: st.SearchStrategy[ast.Formula] = st.recursive(
    st.builds(ast.EventType, names),
    lambda sub: st.one_of(
        st.builds(ast.As, sub, names),
        st.builds(ast.Seq, sub, sub),
        st.builds(ast.Or, sub, sub),
        st.builds(ast.Plus, sub),
        st.builds(ast.Filter, sub, filters),
    ),
    max_leaves=6,
)

amounts = st.one_of(
    st.integers(0, 10**9), st.floats(min_value=0, allow_nan=False, allow_infinity=False)
)
windows = st.one_of(
    st.builds(ast.Window, st.just(ast.WindowKind.EVENTS), amounts),
    st.builds(
        ast.Window,
        st.just(ast.WindowKind.TIME),
        amounts,
        unit=st.sampled_from(tuple(ast.TIME_UNITS_MS)),
    ),
    st.builds(ast.Window, st.just(ast.WindowKind.ATTRIBUTE), amounts, attr=names),
)
declarations = st.builds(
    ast.StreamDecl,
    names,
    st.lists(
        st.builds(
            ast.EventDecl,
            names,
            st.lists(st.tuples(names, st.sampled_from(ast.AttrType)), max_size=3).map(tuple),
        ),
        min_size=1,
        max_size=2,
    ).map(tuple),
)
any_queries = st.builds(
    ast.Query,
    where=formulas,
    select=st.one_of(st.none(), st.lists(names, min_size=1, max_size=3).map(tuple)),
    strategy=st.sampled_from(ast.Strategy),
    streams=st.lists(names, min_size=1, max_size=2).map(tuple),
    partition_by=st.lists(names, max_size=3).map(tuple),
    within=st.one_of(st.none(), windows),
    consume=st.sampled_from(ast.Consume),
    limit=st.one_of(st.none(), st.integers(1, 10**6)),
    declarations=st.lists(declarations, max_size=2).map(tuple),
)


@settings(max_examples=300, deadline=None)
@given(query=any_queries)
def test_round_trip_arbitrary_queries(query: ast.Query) -> None:
    printed = to_ceql(query)
    assert parse(printed) == query, printed


@settings(max_examples=300, deadline=None)
@given(query=queries())
def test_round_trip_generated_queries(query: ast.Query) -> None:
    """The differential suite's queries survive printing, as it relies on that."""
    printed = to_ceql(query)
    assert parse(printed) == query, printed
