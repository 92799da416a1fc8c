"""MATCH_RECOGNIZE → pattern form: the mapping, and every rejection naming its place."""

from __future__ import annotations

from pathlib import Path

import pytest

from cerfleet import pattern as p
from cerfleet.errors import CEQLError, MatchRecognizeError
from cerfleet.languages import detect, parse
from cerfleet.match_recognize.translate import parse_and_check


def mr(body: str, head: str = "") -> str:
    return f"SELECT * FROM T MATCH_RECOGNIZE ({head}\n  PATTERN ({body})\n)"


A, B, C = p.AnyEvent("A"), p.AnyEvent("B"), p.AnyEvent("C")


def test_optional_middle_expands_into_alternatives() -> None:
    # A B* C = (A : B:+  OR  A) : C
    form = parse_and_check(mr("A B* C", "ALL MATCHES"))
    assert form.where == p.Contiguous(p.Or(p.Contiguous(A, p.ContiguousPlus(B)), A), C)
    assert (form.strategy, form.consume) == (p.Strategy.ALL, p.Consume.NONE)


def test_quantifiers() -> None:
    assert parse_and_check(mr("A+", "ALL MATCHES")).where == p.ContiguousPlus(A)
    assert parse_and_check(mr("A?B", "ALL MATCHES")).where == p.Or(p.Contiguous(A, B), B)
    # A{2,3} = A : A : (A)?, the optional tail nested
    assert parse_and_check(mr("A{2,3}", "ALL MATCHES")).where == p.Or(
        p.Contiguous(p.Contiguous(A, A), A), p.Contiguous(A, A)
    )
    assert parse_and_check(mr("A{2,}", "ALL MATCHES")).where == p.Contiguous(A, p.ContiguousPlus(A))
    assert parse_and_check(mr("A* B", "ALL MATCHES")).where == p.Or(
        p.Contiguous(p.ContiguousPlus(A), B), B
    )


def test_define_filters_the_variable_and_options_map() -> None:
    text = """SELECT * FROM Ticker MATCH_RECOGNIZE (
      PARTITION BY Ticker.sym ORDER BY ts
      AFTER MATCH SKIP PAST LAST ROW
      PATTERN (A B) WITHIN INTERVAL '10' SECONDS
      DEFINE A AS A.price > 10 AND NOT (price - 1) * 2 = 4
    )"""
    form = parse(text, "match_recognize")
    pred = p.PAnd(
        p.Compare(">", p.Attr("price"), p.Const(10)),
        p.PNot(
            p.Compare(
                "=", p.Arith("*", p.Arith("-", p.Attr("price"), p.Const(1)), p.Const(2)), p.Const(4)
            )
        ),
    )
    assert form.where == p.Contiguous(p.Filter(A, p.FilterAtom("A", pred)), B)
    assert form.partition_by == ("sym",)
    assert form.consume is p.Consume.PARTITION
    assert form.within == p.Window(p.WindowKind.ATTRIBUTE, 10_000, attr="ts")
    no_order = parse_and_check(mr("A B").replace("(A B)", "(A B) INTERVAL 3 minutes"))
    assert no_order.within == p.Window(p.WindowKind.TIME, 3, unit="MINUTES")


def test_skip_to_next_row_is_no_consumption() -> None:
    form = parse_and_check(mr("(A | B) C", "AFTER MATCH SKIP TO NEXT ROW"))
    assert form.consume is p.Consume.NONE


def test_detect() -> None:
    assert detect(mr("A")) == "match_recognize"
    assert detect("SELECT * FROM S WHERE A ; B") == "ceql"


def _error(text: str) -> MatchRecognizeError:
    with pytest.raises(MatchRecognizeError) as info:
        parse_and_check(text)
    assert isinstance(info.value, CEQLError)  # caught wherever CEQL's errors are
    return info.value


@pytest.mark.parametrize(
    ("head", "body", "tail", "line", "column", "words"),
    [
        ("", "A B+ C", "", 2, 15, "quantifier + lets matches differ in length"),
        ("AFTER MATCH SKIP TO NEXT ROW", "A (B | C D)", "", 2, 15, "'|' lets matches"),
        ("ALL MATCHES", "A+? B", "DEFINE A AS x > NEXT(x)", 3, 19, "NEXT"),
        ("ALL MATCHES", "A* B?", "", 2, 12, "matches zero rows"),
        ("AFTER MATCH SKIP TO FIRST B", "A B", "", 1, 34, "SKIP TO FIRST"),
        ("ALL MATCHES AFTER MATCH SKIP PAST LAST ROW", "A B", "", 1, 46, "ALL MATCHES with"),
        ("AFTER MATCH SKIP TO CURRENT ROW", "A B", "", 1, 34, "only with ALL MATCHES"),
        ("", "A B", "DEFINE A AS A.price > PREV(B.price)", 3, 25, "another variable's row"),
        ("", "A B", "DEFINE A AS A.price > PREV(price, 0)", 3, 25, "between 1 and"),
        ("", "A B", "DEFINE A AS A.price > NEXT(price)", 3, 25, "NEXT"),
        ("", "A B", "DEFINE B AS B.price > Z.price", 3, 25, "Z is not a variable"),
        ("", "A B", "DEFINE B AS B.price > LAST(Z.price)", 3, 30, "Z is not a variable"),
        ("", "A B", "DEFINE B AS B.price > FIRST(A.price, B.x)", 3, 40, "whole number"),
        ("", "A B", "DEFINE B AS B.price > LAST(1)", 3, 25, "LAST takes a column"),
        ("", "A B", "DEFINE B AS B.price > LAST(A.price, 1001)", 3, 39, "at most 1000"),
        ("", "A B", "DEFINE B AS B.price > SUM(A.price)", 3, 25, "SUM() in DEFINE"),
        ("", "A B", "DEFINE C AS price > 1", 3, 10, "C is not a variable"),
        ("", "A B", "DEFINE A AS price", 3, 15, "expected a condition"),
        ("MEASURES PREV(A.x) AS y", "A B", "", 1, 43, "PREV() is not supported"),
        ("ALL MATCHES", "(A? B?)+ C", "", 2, 19, "can match zero rows"),
        ("MEASURES LAST(Z.x) AS y", "A B", "", 1, 48, "Z is not a variable"),
    ],
)
def test_rejections_name_line_and_column(
    head: str, body: str, tail: str, line: int, column: int, words: str
) -> None:
    text = f"SELECT * FROM T MATCH_RECOGNIZE ({head}\n  PATTERN ({body})\n  {tail}\n)"
    err = _error(text)
    assert words in err.message, err.message
    assert (err.line, err.column) == (line, column), str(err)


def test_syntax_error_names_what_was_expected() -> None:
    err = _error("SELECT * FROM T MATCH_RECOGNIZE (\n  PATTERN (A B)\n  DEFINE A AS x > )")
    assert (err.line, err.column) == (3, 19)
    assert err.expected is not None and "a number" in err.expected


def test_the_readme_example_compiles() -> None:
    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## MATCH_RECOGNIZE") :]
    example = section[
        section.index("```sql") + 6 : section.index("```", section.index("```sql") + 6)
    ]
    form = parse_and_check(example)
    assert form.partition_by == ("sym",)
    assert form.consume is p.Consume.PARTITION


def test_prev_is_a_lagged_value() -> None:
    form = parse_and_check(
        mr("A B", "ALL MATCHES").replace(")\n)", ")\n DEFINE A AS x > PREV(A.x, 2)\n)")
    )
    pred = p.Compare(">", p.Attr("x"), p.Prev("x", 2))
    assert form.where == p.Contiguous(p.Filter(A, p.FilterAtom("A", pred)), B)


def test_other_rows_are_a_running_correlation_over_the_whole_pattern() -> None:
    form = parse_and_check(
        mr("A+ B", "ALL MATCHES").replace(
            ")\n)", ")\n DEFINE B AS B.x > A.x AND x > 1 AND FIRST(A.y, 1) < LAST(B.y, 1)\n)"
        )
    )
    own = p.Compare(">", p.Attr("x"), p.Const(1))
    last_a = p.Compare(">", p.Attr("x"), p.RunningAttr("B", "A", "x"))
    nav = p.Compare(
        "<", p.RunningAttr("B", "A", "y", False, 1), p.RunningAttr("B", "B", "y", True, 1)
    )
    inner = p.Contiguous(p.ContiguousPlus(A), p.Filter(B, p.FilterAtom("B", own)))
    assert form.where == p.Filter(inner, p.Correlation(p.PAnd(last_a, nav)))


def test_last_of_the_row_itself_is_the_row() -> None:
    form = parse_and_check(
        mr("A B", "ALL MATCHES").replace(")\n)", ")\n DEFINE B AS LAST(B.x) > 1\n)")
    )
    pred = p.Compare(">", p.Attr("x"), p.Const(1))
    assert form.where == p.Contiguous(A, p.Filter(B, p.FilterAtom("B", pred)))
