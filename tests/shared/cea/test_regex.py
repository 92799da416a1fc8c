"""LIKE matches in time linear in the value, and refuses what cannot."""

from __future__ import annotations

import re
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cerfleet import CEQLError, compile_query
from cerfleet.cea.regex import LikeSyntaxError, compile_like
from cerfleet.events.columns import columns_of
from tests.shared.strategies import like_patterns

EVIL = "SELECT * FROM S WHERE A FILTER A[name LIKE '(a+)+$']"


@pytest.mark.parametrize(
    ("regex", "value", "expected"),
    [
        ("a.c", "abc", True),
        ("a.c", "abcd", False),  # the whole value must match
        ("a.c", "xabc", False),
        ("a|ab", "ab", True),  # fullmatch, not the leftmost alternative
        ("", "", True),
        (r"\d+", "123", True),
        ("(?i)ibm", "IBM", True),
        ("é.", "éé", True),  # code points, not bytes
        ("a.c", "a\nc", False),  # '.' excludes newlines, as in re
        ("a.b", "a\ud800b", True),  # a lone surrogate is one character too
    ],
)
def test_whole_value_matches(regex: str, value: str, expected: bool) -> None:
    assert compile_like(regex)(value) is expected
    if "\ud800" not in value:
        assert (re.fullmatch(regex, value) is not None) is expected


@pytest.mark.parametrize(
    ("regex", "construct", "fragment"),
    [
        (r"(a)\1", "backreference", r"\1"),
        (r"(?P<n>a)(?P=n)", "named backreference", "(?P="),
        ("(?=a)a", "look-ahead", "(?="),
        ("a(?!b)", "look-ahead", "(?!"),
        ("(?<=a)b", "look-behind", "(?<="),
        ("(?<!a)b", "look-behind", "(?<!"),
        ("(?>a)", "atomic group", "(?>"),
        ("a++", "possessive quantifier", "++"),
    ],
)
def test_constructs_without_linear_time_are_refused(
    regex: str, construct: str, fragment: str
) -> None:
    with pytest.raises(LikeSyntaxError) as info:
        compile_like(regex)
    assert info.value.reason.startswith(construct)
    assert "linear" in info.value.reason
    assert info.value.fragment == fragment


def test_refused_at_compile_time_with_position_and_reason() -> None:
    text = r"SELECT * FROM S WHERE A FILTER A[name LIKE '(x)y\1']"
    with pytest.raises(CEQLError) as info:
        compile_query(text)
    err = info.value
    assert "backreference" in err.message and "linear" in err.message
    assert (err.line, err.column, err.length) == (1, text.index("\\1") + 1, 2)


def test_too_large_a_pattern_is_refused() -> None:
    with pytest.raises(LikeSyntaxError, match="repetition"):
        compile_like("((a{1000}){1000}){1000}")


def _evil_event(n: int) -> dict[str, object]:
    return {"type": "A", "name": "a" * n + "b"}


def test_catastrophic_pattern_runs_in_linear_time() -> None:
    """The query that hung a worker on 33 characters, over 10,000 of them."""
    event = _evil_event(10_000)
    evaluator = compile_query(EVIL).evaluator()
    start = time.perf_counter()
    assert evaluator.process(event) == []
    scalar = time.perf_counter() - start
    batch = [event, {"type": "A", "name": "a" * 10_000}]
    start = time.perf_counter()
    out = compile_query(EVIL).evaluator().process_columns(columns_of(batch, {"type", "name"}))
    vector = time.perf_counter() - start
    assert [ce.positions for ce in out] == [(1,)]
    # Measured about a millisecond each; backtracking needs 20 s for 33 characters.
    assert scalar < 0.5 and vector < 0.5, (scalar, vector)


@given(like_patterns(), st.lists(st.text(alphabet="ab\n", max_size=6), max_size=5))
@settings(max_examples=300, deadline=None, database=None)
def test_generated_patterns_agree_with_python_re(regex: str, values: list[str]) -> None:
    """The oracle's re.fullmatch and RE2 agree on the syntax the differential tests draw."""
    fullmatch = compile_like(regex)
    assert [fullmatch(v) for v in values] == [re.fullmatch(regex, v) is not None for v in values]


def test_vector_form_matches_scalar_form() -> None:
    query = compile_query("SELECT * FROM S WHERE A FILTER A[name NOT LIKE 'a[bc]+']")
    batch = [{"type": "A", "name": s} for s in ("abc", "ab", "a", "bc", "")]
    cols = columns_of(batch, {"type", "name"})
    assert cols["name"].dtype.kind == "U"
    got = [ce.positions for ce in query.evaluator().process_columns(cols)]
    want = [ce.positions for i, e in enumerate(batch) for ce in query.evaluator().process(e, i)]
    assert got == want == [(2,), (3,), (4,)]
    assert np.array_equal(cols["name"], np.array(["abc", "ab", "a", "bc", ""]))
