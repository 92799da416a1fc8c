"""AFTER MATCH SKIP over variable-length patterns: random queries through
``stream.RowPatternEvaluator`` and the output stage against the brute-force oracle
(Python's backtracking ``re`` for the preferred match, its own parse enumeration for
the labels), rows one by one, one columnar batch, and two batches with a snapshot
between. ``CERFLEET_MR_SKIP_EXAMPLES`` sets the number of drawn cases."""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from cerfleet.errors import MatchRecognizeError
from cerfleet.events.columns import columns_of
from cerfleet.match_recognize.stream import RowPatternEvaluator
from cerfleet.match_recognize.translate import writer
from tests.shared.match_recognize import oracle
from tests.shared.match_recognize.test_differential import (
    _conditions,
    _nullable_iteration,
    _regexes,
    _sorted,
    expected,
    query_text,
)

EXAMPLES = int(os.environ.get("CERFLEET_MR_SKIP_EXAMPLES", "400"))
ATTRIBUTES = ("type", "p", "x", "y", "ts")


def _v(name: str) -> oracle.Regex:
    return ("var", name)


def _plus(r: oracle.Regex, greedy: bool = True) -> oracle.Regex:
    return ("rep", r, 1, None, greedy)


# Shapes where the preferred match is the hard one to find in a stream: a greedy run
# that may still grow, a shorter alternative that must wait for a longer one, a
# reluctant run that must stop early.
SHAPES: tuple[oracle.Regex, ...] = (
    ("cat", ("cat", _v("A"), _plus(_v("B"))), _v("C")),
    ("cat", ("cat", _v("A"), _plus(_v("B"), False)), _v("C")),
    ("cat", _v("A"), _plus(_v("B"))),
    ("cat", _v("A"), _plus(_v("B"), False)),
    ("alt", ("cat", ("cat", _v("A"), _plus(_v("B"))), _v("C")), _v("A")),
    ("cat", ("alt", _v("A"), ("cat", _v("A"), _v("B"))), _v("C")),
    _plus(("alt", _v("A"), ("cat", _v("B"), _v("C")))),
    ("cat", ("rep", _v("A"), 1, 3, True), ("rep", _v("B"), 0, 1, False)),
    ("cat", ("rep", _v("A"), 0, None, False), _plus(_v("B"))),
)


@st.composite
def cases(draw: Any, dense: bool = False, long: bool = False) -> dict[str, Any]:
    """``dense``: fewer DEFINEs, values in {0, 1} and half the time one of ``SHAPES``, so
    that rows match more often and greedy matches stay open over several rows (what
    makes a match final late)."""
    shape = long or (dense and draw(st.booleans()))
    regex = draw(st.sampled_from(SHAPES) if shape else _regexes(max_leaves=5))
    used = sorted(set(oracle.variables(regex)))
    defined = st.booleans() if dense else st.integers(0, 3)
    defines = {v: draw(_conditions(v)) for v in used if draw(defined)}
    top = 1 if dense else 2
    mode = draw(st.sampled_from(["PAST LAST ROW", "NEXT ROW", "TO FIRST", "TO LAST"]))
    if mode.startswith("TO "):
        mode = f"{mode} {draw(st.sampled_from(used))}"
    n = draw(st.integers(15, 30) if long else st.integers(0, 12))
    window = draw(st.sampled_from([None, None, 2, 5]))
    least = -1500 if window is not None and draw(st.booleans()) else 0
    gaps = draw(st.lists(st.integers(least, 3000), min_size=n, max_size=n))
    rows = [
        {
            "type": "r",
            "p": draw(st.integers(0, 1)),
            "x": draw(st.integers(0, top)),
            "y": draw(st.integers(0, top)),
            "ts": sum(gaps[: i + 1]),
        }
        for i in range(n)
    ]
    wanted = [("n", "COUNT", None, None), ("cls", "CLASSIFIER", None, None)]
    for i, v in enumerate(used):
        fn = draw(st.sampled_from(["FIRST", "LAST", "SUM", "MIN", "MAX", "COUNT"]))
        wanted.append((f"m{i}", fn, v, None if fn == "COUNT" else draw(st.sampled_from("xy"))))
    return {
        "regex": regex,
        "defines": defines,
        "mode": mode,
        "rows_per": draw(st.sampled_from(["ONE", "ALL"])),
        "rows": rows,
        "partition": draw(st.sampled_from([(), ("p",)])),
        "window": window,
        "cut": draw(st.integers(0, n)),
        "wanted": wanted,
    }


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_skip_modes_match_oracle(case: dict[str, Any]) -> None:
    check(case)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(dense=True))
def test_skip_modes_on_dense_matches(case: dict[str, Any]) -> None:
    check(case)


@settings(
    max_examples=max(1, EXAMPLES // 4),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(cases(dense=True, long=True))
def test_skip_modes_over_long_inputs(case: dict[str, Any]) -> None:
    # Long greedy runs, many matches per partition, buffers trimmed and read again
    # (at most 30 rows: beyond that the oracle's enumeration of parses can take hours).
    check(case)


def _run(ev: RowPatternEvaluator, text: str, batches: list[Any]) -> list[Any]:
    write = writer(text, skipping=True)
    out: list[Any] = []
    for batch in batches:
        out += [(ce.positions, write.rows(ce)) for ce in batch(ev)]
    return out


def _finish(ev: RowPatternEvaluator) -> list[Any]:
    return ev.finish()


def check(case: dict[str, Any]) -> None:
    text = query_text(case)
    low, _ = oracle.span(case["regex"])
    rejected = low == 0 or _nullable_iteration(case["regex"])
    event("rejected" if rejected else f"{case['mode'].split(' ')[:2]}, {case['rows_per']}")
    if rejected:
        with pytest.raises(MatchRecognizeError):
            RowPatternEvaluator(text)
        return
    want = _sorted(expected(case))
    rows, cut = case["rows"], case["cut"]
    late = 0  # matches final only some rows after their last

    def one_by_one(ev: RowPatternEvaluator) -> list[Any]:
        nonlocal late
        out = []
        for i, r in enumerate(rows):
            found = ev.process(r)
            late += sum(ce.end < i for ce in found)
            out += found
        return out

    by_rows = _run(RowPatternEvaluator(text), text, [one_by_one, _finish])
    by_columns = _run(
        RowPatternEvaluator(text),
        text,
        [lambda ev: ev.process_columns(columns_of(rows, ATTRIBUTES), events=rows), _finish],
    )
    first = RowPatternEvaluator(text)
    head = first.process_columns(columns_of(rows[:cut], ATTRIBUTES))
    second = RowPatternEvaluator.restore(first.snapshot())
    tail = second.process_columns(
        columns_of(rows[cut:], ATTRIBUTES), positions=range(cut, len(rows))
    )
    by_batches = _run(second, text, [lambda _: head + tail, _finish])
    event("some match" if want else "no match")
    if want and len({len(idx) for idx, _ in want}) > 1:
        event("matches of different lengths")
    if late:
        event("a match final some rows after its last")
    if want and "?" in text.split("PATTERN")[1].split(")\n")[0]:
        event("some match, a reluctant or optional quantifier")
    assert _sorted(by_rows) == want, text
    assert _sorted(by_columns) == want, text
    assert _sorted(by_batches) == want, text
