"""CEQL surface syntax -> AST, and syntax errors."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from lark import Lark
from lark.lexer import Lexer, LexerState, Token

from cerfleet import pattern
from cerfleet.ceql.parser import parse
from cerfleet.errors import CEQLError
from cerfleet.pattern import (
    And,
    As,
    Attr,
    Compare,
    Const,
    EventType,
    Filter,
    FilterAnd,
    FilterAtom,
    FilterOr,
    Or,
    Plus,
    Seq,
    Span,
)

A, B, C, D = (EventType(n) for n in "ABCD")


def where(cel: str) -> pattern.Formula:
    return parse(f"SELECT * FROM S WHERE {cel}").where


def filter_of(cel: str) -> pattern.FilterExpr:
    formula = where(cel)
    assert isinstance(formula, Filter)
    return formula.filter


def atom(var: str, attr: str, op: str, value: pattern.Scalar) -> FilterAtom:
    return FilterAtom(var, Compare(op, Attr(attr), Const(value)))


def pred(text: str) -> pattern.Pred:
    formula = where(f"A FILTER A[{text}]")
    assert isinstance(formula, Filter) and isinstance(formula.filter, FilterAtom)
    return formula.filter.pred


# ------------------------------------------------------------ grammar health


class _NoLexer(Lexer):
    __future_interface__ = True

    def __init__(self, conf: object) -> None:
        pass

    def lex(self, lexer_state: LexerState, parser_state: object) -> Iterator[Token]:
        return iter(())


def test_grammar_is_lalr1_without_conflicts() -> None:
    # strict=True turns lark's silent "resolve shift/reduce as shift" into an error.
    Lark.open_from_package(
        "cerfleet.ceql", "grammar.lark", parser="lalr", lexer=_NoLexer, strict=True
    )


# -------------------------------------------------------- formula precedence


@pytest.mark.parametrize(
    ("cel", "expected"),
    [
        ("A ; B ; C", Seq(Seq(A, B), C)),
        ("A OR B OR C", Or(Or(A, B), C)),
        ("A ; B OR C ; D", Or(Seq(A, B), Seq(C, D))),
        ("A OR B ; C", Or(A, Seq(B, C))),
        ("A ; (B OR C)", Seq(A, Or(B, C))),
        ("A AS x +", Plus(As(A, "x"))),
        ("A + AS x", As(Plus(A), "x")),
        ("A ; B AS x", Seq(A, As(B, "x"))),
        ("(A ; B) AS x", As(Seq(A, B), "x")),
        ("A ; B +", Seq(A, Plus(B))),
        ("((A))", A),
    ],
)
def test_cel_precedence(cel: str, expected: pattern.Formula) -> None:
    assert where(cel) == expected


def test_filter_applies_to_the_whole_formula_on_its_left() -> None:
    theta = atom("A", "x", ">", 1)
    assert where("A ; B OR C FILTER A[x > 1]") == Filter(Or(Seq(A, B), C), theta)


def test_formula_continues_after_a_filter() -> None:
    theta = atom("A", "x", ">", 1)
    expected = Or(Seq(Filter(Seq(A, B), theta), C), D)
    assert where("A ; B FILTER A[x > 1] ; C OR D") == expected


def test_postfix_operators_apply_to_a_filtered_formula() -> None:
    theta = atom("A", "x", ">", 1)
    assert where("A FILTER A[x > 1] + AS y ; B") == Seq(As(Plus(Filter(A, theta)), "y"), B)


def test_or_after_a_filter_atom_continues_the_filter_when_an_atom_follows() -> None:
    expected = Filter(A, FilterOr(atom("A", "x", ">", 1), atom("B", "y", "<", 2)))
    assert where("A FILTER A[x > 1] OR B[y < 2]") == expected


def test_or_after_a_filter_atom_is_the_formula_or_otherwise() -> None:
    assert where("A FILTER A[x > 1] OR B") == Or(Filter(A, atom("A", "x", ">", 1)), B)
    # A parenthesis that opens a formula, not a filter group.
    assert where("A FILTER A[x > 1] OR (B ; C)") == Or(Filter(A, atom("A", "x", ">", 1)), Seq(B, C))


@pytest.mark.parametrize(
    ("cel", "expected"),
    [
        ("A AND B AND C", And(And(A, B), C)),
        ("A ; B AND C ; D", And(Seq(A, B), Seq(C, D))),
        ("A OR B AND C", Or(A, And(B, C))),
        ("A AND B OR C AND D", Or(And(A, B), And(C, D))),
        ("A AND (B OR C)", And(A, Or(B, C))),
        ("A AND B +", And(A, Plus(B))),
        ("(A AND B)+", Plus(And(A, B))),
    ],
)
def test_pattern_conjunction_binds_between_or_and_sequencing(
    cel: str, expected: pattern.Formula
) -> None:
    assert where(cel) == expected


def test_and_after_a_filter_atom_continues_the_filter_only_when_an_atom_follows() -> None:
    a1, b2 = atom("A", "x", ">", 1), atom("B", "y", "<", 2)
    assert where("A ; B FILTER A[x > 1] AND B[y < 2]") == Filter(Seq(A, B), FilterAnd(a1, b2))
    assert where("A FILTER A[x > 1] AND (B[y < 2])") == Filter(A, FilterAnd(a1, b2))
    assert where("A FILTER A[x > 1] AND B") == And(Filter(A, a1), B)
    assert where("A FILTER A[x > 1] AND (B ; C)") == And(Filter(A, a1), Seq(B, C))
    # FILTER takes the whole conjunction on its left, like any formula.
    assert where("A AND B FILTER A[x > 1]") == Filter(And(A, B), a1)


def test_filter_connectives_and_groups() -> None:
    a1, b2, c3 = atom("A", "x", "=", 1), atom("B", "x", "=", 2), atom("C", "x", "=", 3)
    assert filter_of("A FILTER A[x=1] OR B[x=2] AND C[x=3]") == FilterOr(a1, FilterAnd(b2, c3))
    assert filter_of("A FILTER (A[x=1] OR B[x=2]) AND C[x=3]") == FilterAnd(FilterOr(a1, b2), c3)
    assert filter_of("A FILTER ((A[x=1])) OR (B[x=2])") == FilterOr(a1, b2)
    assert filter_of("A FILTER A[x=1] AND B[x=2] AND C[x=3]") == FilterAnd(FilterAnd(a1, b2), c3)


def test_filter_inside_parentheses_at_any_depth() -> None:
    a1, b2 = atom("A", "x", "=", 1), atom("B", "x", "=", 2)
    assert where("((A FILTER A[x=1]) ; B FILTER B[x=2])") == Filter(Seq(Filter(A, a1), B), b2)
    assert where("A FILTER A[x=1] FILTER B[x=2]") == Filter(Filter(A, a1), b2)
    assert where("(A FILTER A[x=1] OR B[x=2]) OR C") == Or(Filter(A, FilterOr(a1, b2)), C)


# ---------------------------------------------------------------- predicates


def test_comparison_operators_are_normalised() -> None:
    ops = {"=": "=", "==": "=", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
    for written, normal in ops.items():
        assert pred(f"p {written} 1") == Compare(normal, Attr("p"), Const(1))


def test_arithmetic_precedence_and_parentheses() -> None:
    assert pred("(price + 1) * 2 > 10") == Compare(
        ">", pattern.Arith("*", pattern.Arith("+", Attr("price"), Const(1)), Const(2)), Const(10)
    )
    assert pred("a + b * c - d % 2 >= -e") == Compare(
        ">=",
        pattern.Arith(
            "-",
            pattern.Arith("+", Attr("a"), pattern.Arith("*", Attr("b"), Attr("c"))),
            pattern.Arith("%", Attr("d"), Const(2)),
        ),
        pattern.Neg(Attr("e")),
    )
    assert pred("a / 2 < -3") == Compare("<", pattern.Arith("/", Attr("a"), Const(2)), Const(-3))


def test_boolean_structure_of_predicates() -> None:
    a_gt = Compare(">", Attr("a"), Const(1))
    b_lt = Compare("<", Attr("b"), Const(2))
    c_eq = Compare("=", Attr("c"), Const(3))
    assert pred("(a > 1 OR b < 2) AND NOT c = 3") == pattern.PAnd(
        pattern.POr(a_gt, b_lt), pattern.PNot(c_eq)
    )
    assert pred("a > 1 OR b < 2 AND c = 3") == pattern.POr(a_gt, pattern.PAnd(b_lt, c_eq))
    assert pred("NOT NOT (a > 1)") == pattern.PNot(pattern.PNot(a_gt))
    assert pred("TRUE") == pattern.BoolLit(True)
    assert pred("false OR (true)") == pattern.POr(pattern.BoolLit(False), pattern.BoolLit(True))
    assert pred("flag = True") == Compare("=", Attr("flag"), Const(True))


def test_in_range_and_like() -> None:
    assert pred("name IN ('a', \"b\")") == pattern.InList(Attr("name"), (Const("a"), Const("b")))
    assert pred("v NOT IN (1, -2.5, true)") == pattern.InList(
        Attr("v"), (Const(1), Const(-2.5), Const(True)), negated=True
    )
    assert pred("v IN RANGE(-5, 10)") == pattern.InRange(Attr("v"), Const(-5), Const(10))
    assert pred("v not in range(1, 2)") == pattern.InRange(Attr("v"), Const(1), Const(2), True)
    assert pred(r"name LIKE 'MS\w+'") == pattern.Like(Attr("name"), r"MS\w+")
    assert pred("name NOT LIKE 'A.*'") == pattern.Like(Attr("name"), "A.*", negated=True)


def test_literals() -> None:
    values = {
        "26.0": 26.0,
        "1e3": 1000.0,
        ".5": 0.5,
        "42": 42,
        r"'it\'s'": "it's",
        r'"say \"hi\""': 'say "hi"',
        r"'a\\b'": "a\\b",
        r"'x\ny\tz'": "x\ny\tz",
        r"'\d'": r"\d",
    }
    for text, value in values.items():
        result = pred(f"p = {text}")
        assert isinstance(result, Compare) and isinstance(result.right, Const)
        assert result.right.value == value and type(result.right.value) is type(value)


def test_conjunction_inside_one_bracket() -> None:
    formula = where("TRIP AS loc1 FILTER loc1[pickup_loc = 'a' and dropoff_loc = 'b']")
    assert formula == Filter(
        As(EventType("TRIP"), "loc1"),
        FilterAtom(
            "loc1",
            pattern.PAnd(
                Compare("=", Attr("pickup_loc"), Const("a")),
                Compare("=", Attr("dropoff_loc"), Const("b")),
            ),
        ),
    )


def test_keyword_spellings_are_attribute_names_inside_brackets() -> None:
    names = ["value", "name", "type", "time", "max", "last", "events", "range", "limit", "Select"]
    result = pred(" AND ".join(f"{n} = 1" for n in names))
    attrs = []
    while isinstance(result, pattern.PAnd):
        assert isinstance(result.right, Compare) and isinstance(result.right.left, Attr)
        attrs.append(result.right.left.name)
        result = result.left
    assert isinstance(result, Compare) and isinstance(result.left, Attr)
    assert [result.left.name, *reversed(attrs)] == names
    assert pred("range IN RANGE(1, 2)") == pattern.InRange(Attr("range"), Const(1), Const(2))
    query = parse("SELECT * FROM S WHERE A PARTITION BY [max, events] WITHIN 5 [limit]")
    assert query.partition_by == ("max", "events")
    assert query.within == pattern.Window(pattern.WindowKind.ATTRIBUTE, 5, attr="limit")


# ------------------------------------------------------------------- clauses


def test_defaults() -> None:
    query = parse("SELECT * FROM S WHERE A")
    assert query == pattern.Pattern(where=A, streams=("S",))
    assert query.select is None and query.strategy is pattern.Strategy.ALL
    assert query.consume is pattern.Consume.NONE and query.limit is None and query.within is None


def test_select_clause() -> None:
    assert parse("SELECT MAX * FROM S WHERE A").strategy is pattern.Strategy.MAX
    query = parse("SELECT LAST a, b FROM S WHERE A AS a ; B AS b")
    assert (query.strategy, query.select) == (pattern.Strategy.LAST, ("a", "b"))
    for strategy in pattern.Strategy:
        assert parse(f"SELECT {strategy.value} * FROM S WHERE A").strategy is strategy


def test_from_several_streams() -> None:
    assert parse("SELECT * FROM S1, S2 , S3 WHERE A").streams == ("S1", "S2", "S3")


def test_partition_by_flattens_groups() -> None:
    query = parse("SELECT * FROM S WHERE A PARTITION BY [name, volume], [price]")
    assert query.partition_by == ("name", "volume", "price")


@pytest.mark.parametrize(
    ("text", "window"),
    [
        ("10 EVENTS", pattern.Window(pattern.WindowKind.EVENTS, 10)),
        ("1 event", pattern.Window(pattern.WindowKind.EVENTS, 1)),
        ("1 minute", pattern.Window(pattern.WindowKind.TIME, 1, unit="MINUTES")),
        ("2.5 Seconds", pattern.Window(pattern.WindowKind.TIME, 2.5, unit="SECONDS")),
        ("3 HOUR", pattern.Window(pattern.WindowKind.TIME, 3, unit="HOURS")),
        ("500 millisecond", pattern.Window(pattern.WindowKind.TIME, 500, unit="MILLISECONDS")),
        (
            "10000 [stock_time]",
            pattern.Window(pattern.WindowKind.ATTRIBUTE, 10000, attr="stock_time"),
        ),
    ],
)
def test_within(text: str, window: pattern.Window) -> None:
    assert parse(f"SELECT * FROM S WHERE A WITHIN {text}").within == window


def test_window_epsilon() -> None:
    within = parse("SELECT * FROM S WHERE A WITHIN 1 minute").within
    assert within is not None and within.epsilon == 60_000


def test_consume_and_limit() -> None:
    for policy in pattern.Consume:
        query = parse(f"SELECT * FROM S WHERE A CONSUME BY {policy.value} LIMIT 7")
        assert (query.consume, query.limit) == (policy, 7)


def test_all_clauses_in_order() -> None:
    query = parse(
        "SELECT NEXT x FROM S WHERE A AS x PARTITION BY [k] WITHIN 5 EVENTS "
        "CONSUME BY PARTITION LIMIT 1"
    )
    assert query == pattern.Pattern(
        where=As(A, "x"),
        select=("x",),
        strategy=pattern.Strategy.NEXT,
        streams=("S",),
        partition_by=("k",),
        within=pattern.Window(pattern.WindowKind.EVENTS, 5),
        consume=pattern.Consume.PARTITION,
        limit=1,
    )


def test_declare_stream() -> None:
    query = parse(
        """
        DECLARE STREAM Stock {
            EVENT SELL { name: string, price: double, volume: int, t: primary_time },
            EVENT BUY { name: STRING, ok: boolean, max: int }
        }
        DECLARE STREAM Empty { EVENT NOTHING { } }
        SELECT * FROM Stock, Empty WHERE SELL
        """
    )
    T = pattern.AttrType
    assert [d.name for d in query.declarations] == ["Stock", "Empty"]
    sell, buy = query.declarations[0].events
    assert sell == pattern.EventDecl(
        "SELL", (("name", T.STRING), ("price", T.DOUBLE), ("volume", T.INT), ("t", T.PRIMARY_TIME))
    )
    assert buy == pattern.EventDecl("BUY", (("name", T.STRING), ("ok", T.BOOLEAN), ("max", T.INT)))
    assert query.declarations[1].events == (pattern.EventDecl("NOTHING", ()),)


def test_keywords_are_case_insensitive_identifiers_are_not() -> None:
    lower = parse(
        "select max * from S where Sell as x ; buy filter x[p > 1] and buy[q < 2] "
        "partition by [k] within 5 seconds consume by any limit 3"
    )
    upper = parse(
        "SELECT MAX * FROM S WHERE Sell AS x ; buy FILTER x[p > 1] AND buy[q < 2] "
        "PARTITION BY [k] WITHIN 5 SECONDS CONSUME BY ANY LIMIT 3"
    )
    assert lower == upper
    assert isinstance(lower.where, Filter)
    assert lower.where.formula == Seq(As(EventType("Sell"), "x"), EventType("buy"))


def test_comments_and_whitespace() -> None:
    query = parse(
        """-- a line comment
        SELECT * /* a block
        comment */ FROM S -- trailing
        WHERE\tA ; /**/ B -- done"""
    )
    assert query.where == Seq(A, B)
    assert parse("SELECT * FROM S WHERE A -- comment at end") == parse("SELECT * FROM S WHERE A")


# -------------------------------------------------------------- paper queries

Q1 = """
SELECT * FROM Stock
WHERE SELL as msft; SELL as intel; SELL as amzn
FILTER msft[name="MSFT"] AND msft[price > 100]
   AND intel[name="INTC"]
   AND amzn[name="AMZN"] AND amzn[price < 2000]
"""

Q2 = """
SELECT b FROM Stock
WHERE (BUY or SELL) as s;
      (BUY or SELL) as b
PARTITION BY [name], [volume]
WITHIN 1 minute
"""

Q3 = """
SELECT MAX * FROM Stock
WHERE (BUY OR SELL) as low; (BUY OR SELL)+ as mid; (BUY OR SELL) as high
FILTER low[price < 100] AND mid[price >= 100]
   AND mid[price <= 2000] AND high[price > 2000]
PARTITION BY [name]
"""

T3 = """
SELECT * FROM S
WHERE (TRIP as loc1; TRIP as loc2; TRIP as loc3)
FILTER loc1[pickup_loc = 'East Harlem North' and dropoff_loc = 'Midwood'] AND
       loc2[pickup_loc = 'Midwood' AND dropoff_loc = 'Gravesend'] AND
       loc3[pickup_loc = 'Gravesend' AND dropoff_loc = 'West Brighton']
WITHIN 10000 [dropoff_datetime]
"""

STOCK_Q3 = """
SELECT * FROM S WHERE (SELL as msft; BUY as oracle; BUY as csco; SELL as amat)
FILTER msft[name = 'MSFT'] AND oracle[name = 'ORCL'] AND csco[name = 'CSCO'] AND amat[name = 'AMAT']
PARTITION BY [volume]
WITHIN 30000 [stock_time]
CONSUME BY ANY
"""

H3 = """
SELECT * FROM S
WHERE (LOAD as L1; LOAD as L2; LOAD as L3) as L
FILTER L[value > 76] AND
       L1[household_id = 0] AND L2[household_id = 2] AND L3[household_id = 4]
WITHIN 10 [plug_timestamp]
"""

Q7 = """
SELECT * FROM S
WHERE (SELL as msft; (BUY OR SELL)+ as qqq; SELL as amat)
FILTER msft[name = 'MSFT'] AND qqq[name = 'QQQ'] and
       qqq[volume=4000] AND amat[name = 'AMAT']
WITHIN 30000 [stock_time]
"""

SELL, BUY = EventType("SELL"), EventType("BUY")


def _conj(*atoms: FilterAtom) -> pattern.FilterExpr:
    result: pattern.FilterExpr = atoms[0]
    for a in atoms[1:]:
        result = FilterAnd(result, a)
    return result


def test_paper_q1() -> None:
    query = parse(Q1)
    assert query.where == Filter(
        Seq(Seq(As(SELL, "msft"), As(SELL, "intel")), As(SELL, "amzn")),
        _conj(
            atom("msft", "name", "=", "MSFT"),
            atom("msft", "price", ">", 100),
            atom("intel", "name", "=", "INTC"),
            atom("amzn", "name", "=", "AMZN"),
            atom("amzn", "price", "<", 2000),
        ),
    )


def test_paper_q2() -> None:
    query = parse(Q2)
    assert query.select == ("b",)
    assert query.where == Seq(As(Or(BUY, SELL), "s"), As(Or(BUY, SELL), "b"))
    assert query.partition_by == ("name", "volume")
    assert query.within == pattern.Window(pattern.WindowKind.TIME, 1, unit="MINUTES")


def test_paper_q3() -> None:
    query = parse(Q3)
    assert query.strategy is pattern.Strategy.MAX and query.select is None
    trade = Or(BUY, SELL)
    assert query.where == Filter(
        Seq(Seq(As(trade, "low"), As(Plus(trade), "mid")), As(trade, "high")),
        _conj(
            atom("low", "price", "<", 100),
            atom("mid", "price", ">=", 100),
            atom("mid", "price", "<=", 2000),
            atom("high", "price", ">", 2000),
        ),
    )
    assert query.partition_by == ("name",)


def test_paper_taxi_t3() -> None:
    query = parse(T3)
    assert isinstance(query.where, Filter)
    trip = EventType("TRIP")
    assert query.where.formula == Seq(Seq(As(trip, "loc1"), As(trip, "loc2")), As(trip, "loc3"))
    assert query.within == pattern.Window(
        pattern.WindowKind.ATTRIBUTE, 10000, attr="dropoff_datetime"
    )


def test_paper_stock_q3_with_consume() -> None:
    query = parse(STOCK_Q3)
    assert isinstance(query.where, Filter)
    assert query.where.filter == _conj(
        atom("msft", "name", "=", "MSFT"),
        atom("oracle", "name", "=", "ORCL"),
        atom("csco", "name", "=", "CSCO"),
        atom("amat", "name", "=", "AMAT"),
    )
    assert query.partition_by == ("volume",)
    assert query.within == pattern.Window(pattern.WindowKind.ATTRIBUTE, 30000, attr="stock_time")
    assert query.consume is pattern.Consume.ANY


def test_paper_smart_homes_h3_and_q7() -> None:
    h3 = parse(H3)
    assert isinstance(h3.where, Filter) and isinstance(h3.where.formula, As)
    assert h3.where.formula.var == "L"
    q7 = parse(Q7)
    assert isinstance(q7.where, Filter)
    assert q7.where.filter == _conj(
        atom("msft", "name", "=", "MSFT"),
        atom("qqq", "name", "=", "QQQ"),
        atom("qqq", "volume", "=", 4000),
        atom("amat", "name", "=", "AMAT"),
    )


# --------------------------------------------------------------------- spans


def test_spans() -> None:
    text = "SELECT x, y FROM S\nWHERE A AS x ; B AS y\nFILTER x[price > 10]\nWITHIN 5 EVENTS"
    query = parse(text)
    assert query.select_spans == (Span(1, 8, 1, 9), Span(1, 11, 1, 12))
    assert query.stream_spans == (Span(1, 18, 1, 19),)
    formula = query.where
    assert isinstance(formula, Filter) and isinstance(formula.formula, Seq)
    assert formula.span == Span(2, 7, 3, 21)
    first = formula.formula.left
    assert isinstance(first, As) and first.span == Span(2, 12, 2, 13)
    assert first.formula.span == Span(2, 7, 2, 8)
    f_atom = formula.filter
    assert isinstance(f_atom, FilterAtom) and f_atom.span == Span(3, 8, 3, 9)
    assert isinstance(f_atom.pred, Compare) and f_atom.pred.span == Span(3, 10, 3, 20)
    assert f_atom.pred.left.span == Span(3, 10, 3, 15)
    assert f_atom.pred.right.span == Span(3, 18, 3, 20)
    assert query.within is not None and query.within.span == Span(4, 1, 4, 16)
    partitioned = parse("SELECT * FROM S WHERE A PARTITION BY [a], [bc]")
    assert partitioned.partition_spans == (Span(1, 39, 1, 40), Span(1, 44, 1, 46))


def test_spans_do_not_affect_equality() -> None:
    assert parse("SELECT * FROM S WHERE A;B") == parse("SELECT  *  FROM  S\n WHERE  A ;\n B")


# -------------------------------------------------------------------- errors


def _error(text: str) -> CEQLError:
    with pytest.raises(CEQLError) as info:
        parse(text)
    return info.value


@pytest.mark.parametrize(
    ("text", "line", "column", "message", "expected"),
    [
        ("SELECT * FROM S A", 1, 17, "unexpected identifier 'A'", "one of: ',', 'WHERE'"),
        (
            "SELECT * FROM S\nWHERE A ; ; B",
            2,
            11,
            "unexpected ';'",
            "one of: '!', '(', 'NOT', an identifier",
        ),
        ("SELECT * FROM S WHERE (A ; B", 1, 29, "unexpected end of query", "')'"),
        ("SELECT * FROM S WHERE A FILTER", 1, 31, "unexpected end of query", "x[...]"),
        ("SELECT * FROM S WHERE A FILTER A[x > ]", 1, 38, "unexpected ']'", "a number"),
        ("SELECT * FROM S WHERE A # B", 1, 25, "unexpected character '#'", "end of query"),
        ("SELECT * FROM S WHERE A WITHIN 5 weeks", 1, 34, "identifier 'weeks'", "a time unit"),
        ("SELECT * FROM S WHERE A LIMIT 1.5", 1, 31, "unexpected number 1.5", "a whole number"),
        ("SELECT * FROM S WHERE A FILTER A[n = 'x]", 1, 38, "unterminated string", "'"),
        ("SELECT * FROM S WHERE A /* oops", 1, 25, "unterminated comment", "'*/'"),
        ("SELECT * FROM S WHERE A FILTER (B)", 1, 33, "identifier 'B'", "filter atom"),
        ("SELECT * FROM S WHERE A AND AND B", 1, 29, "unexpected 'AND'", "an identifier"),
        ("SELECT * WHERE A", 1, 10, "unexpected 'WHERE'", "'FROM'"),
        ("", 1, 1, "unexpected end of query", "one of: 'SELECT', 'DECLARE'"),
        ("SELECT * FROM S WHERE A CONSUME BY ALL", 1, 36, "'ALL'", "'PARTITION', 'ANY', 'NONE'"),
        (
            "DECLARE STREAM S { EVENT A { x: float } }\nSELECT * FROM S WHERE A",
            1,
            33,
            "unknown attribute type 'float'",
            "int, double, string, boolean, primary_time",
        ),
    ],
)
def test_syntax_errors(text: str, line: int, column: int, message: str, expected: str) -> None:
    err = _error(text)
    assert (err.line, err.column) == (line, column)
    assert message in err.message
    assert err.expected is not None and expected in err.expected
    rendered = str(err)
    lines = rendered.splitlines()
    assert lines[0] == f"line {line}, column {column}: {err.message}"
    assert lines[2].strip().startswith("^") and lines[2].index("^") == column + 1
    assert lines[-1] == f"expected {err.expected}"


def test_expected_list_after_a_formula() -> None:
    err = _error("SELECT * FROM S WHERE A FILTER A[x > 1] WITHIN 10 EVENTS 5")
    assert err.expected == "one of: 'CONSUME', 'LIMIT', end of query"
    # After a time span another may follow (`WITHIN 1 HOURS 30 MINUTES`).
    err = _error("SELECT * FROM S WHERE A FILTER A[x > 1] WITHIN 10 SECONDS 5")
    assert err.expected == "a time unit (MILLISECONDS, SECONDS, MINUTES, HOURS)"
    err = _error("SELECT * FROM S WHERE A )")
    assert err.expected == (
        "one of: ';', '+', ':+', ',', ':', '>' (S>E: an E of stream S), 'AS', 'OR', 'AND', "
        "'FILTER', 'PARTITION', 'WITHIN', 'CONSUME', 'LIMIT', end of query"
    )


def test_error_length_underlines_the_token() -> None:
    err = _error("SELECT * FROM S WHERE A WITHIN 5 fortnights")
    assert err.length == len("fortnights")
    assert str(err).splitlines()[2] == "  " + " " * 33 + "^" * 10


def test_unexpected_end_points_past_the_last_token() -> None:
    err = _error("SELECT * FROM S\nWHERE A ;   -- dangling\n")
    assert (err.line, err.column) == (2, 10)
    assert err.message == "unexpected end of query"


def test_core_cpp_declarations_and_sets() -> None:
    """CORE's C++ engine's spellings: CREATE STREAM with its types, IN { ... } sets and
    ranges, composite time spans."""
    query = parse(
        "CREATE STREAM S { EVENT SELL { id: long, name: string, price: double, "
        "ok: boolean, t: primary_time } } "
        "SELECT * FROM S WHERE SELL AS s "
        "FILTER s[id IN {1..3}] AND s[price IN {..10.5}] AND s[price NOT IN {100..}] "
        "AND s[name IN {'A', 'B'}] AND s[id NOT IN {7, 9}] "
        "WITHIN 1 HOURS 30 MINUTES"
    )
    (decl,) = query.declarations
    assert dict(decl.events[0].attributes) == {
        "id": pattern.AttrType.INT,
        "name": pattern.AttrType.STRING,
        "price": pattern.AttrType.DOUBLE,
        "ok": pattern.AttrType.BOOLEAN,
        "t": pattern.AttrType.PRIMARY_TIME,
    }
    assert query.within == pattern.Window(pattern.WindowKind.TIME, 5_400_000, unit="MILLISECONDS")
    atoms = []
    f = query.where
    assert isinstance(f, Filter)
    stack: list[pattern.FilterExpr] = [f.filter]
    while stack:
        node = stack.pop()
        if isinstance(node, FilterAnd):
            stack += [node.right, node.left]
        else:
            assert isinstance(node, FilterAtom)
            atoms.append(node.pred)
    assert atoms == [
        pattern.InRange(Attr("id"), Const(1), Const(3)),
        Compare("<=", Attr("price"), Const(10.5)),
        pattern.PNot(Compare(">=", Attr("price"), Const(100))),
        pattern.InList(Attr("name"), (Const("A"), Const("B"))),
        pattern.InList(Attr("id"), (Const(7), Const(9)), negated=True),
    ]


def test_contiguous_operators() -> None:
    assert where("A : B ; C") == pattern.Seq(pattern.Contiguous(A, B), C)
    assert where("A:+ ; B") == pattern.Seq(pattern.ContiguousPlus(A), B)
    assert where("(A ; B):+ AS x") == pattern.As(pattern.ContiguousPlus(pattern.Seq(A, B)), "x")


def test_stream_qualifier_is_the_event_type_filtered_by_its_stream() -> None:
    def qualified(stream: str, name: str) -> pattern.Formula:
        return Filter(EventType(name), FilterAtom(name, pattern.InStream((stream,))))

    f = parse("SELECT * FROM S1, S2 WHERE S1>A ; S2 > B AS b FILTER b[x > 1]").where
    assert f == Filter(
        Seq(qualified("S1", "A"), As(qualified("S2", "B"), "b")), atom("b", "x", ">", 1)
    )
    # Inside [...] '>' stays a comparison.
    assert filter_of("S1>A FILTER A[x > y]") == FilterAtom("A", Compare(">", Attr("x"), Attr("y")))
