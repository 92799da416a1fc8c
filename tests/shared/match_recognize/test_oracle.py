"""The MATCH_RECOGNIZE oracle on cases worked out by hand (it judges the engine, so it
is checked on its own first)."""

from __future__ import annotations

from tests.shared.match_recognize import oracle

A, B = ("var", "A"), ("var", "B")
ROWS = [{"x": x} for x in (1, 1, 2, 1, 2, 2)]
BIG = {"A": lambda rows, i: rows[i]["x"] == 1, "B": lambda rows, i: rows[i]["x"] == 2}


def matches(regex: oracle.Regex, mode: str, defines: dict = BIG, rows: list = ROWS) -> list:
    return [(idx, labels) for _, idx, labels in oracle.evaluate(regex, defines, rows, mode=mode)]


def test_all_matches_are_every_matching_interval() -> None:
    # A+ B over 1 1 2 1 2 2: ends at 2 (from 0 and 1) and at 4 (from 3).
    assert matches(("cat", ("rep", A, 1, None), B), "MATCHES") == [
        ([0, 1, 2], "AAB"),
        ([1, 2], "AB"),
        ([3, 4], "AB"),
    ]


def test_past_last_row_takes_the_preferred_match_from_the_earliest_start() -> None:
    # Greedy A B+ from 3 takes rows 3 4 5; from 1: rows 1 2 (row 3 is no B).
    assert matches(("cat", A, ("rep", B, 1, None)), "PAST LAST ROW") == [
        ([1, 2], "AB"),
        ([3, 4, 5], "ABB"),
    ]
    # TO NEXT ROW starts again at 4, where A fails, and at 5.
    assert matches(("cat", A, ("rep", B, 1, None)), "NEXT ROW") == [
        ([1, 2], "AB"),
        ([3, 4, 5], "ABB"),
    ]


def test_preferred_labels() -> None:
    anything: dict = {}
    # Both variables match every row: the left alternative, greedy iterations first.
    assert matches(("alt", A, B), "PAST LAST ROW", anything, ROWS[:1]) == [([0], "A")]
    two = ("cat", ("rep", A, 0, None), ("rep", B, 0, None))
    assert ([0, 1, 2], "AAB") in matches(("cat", two, B), "MATCHES", anything, ROWS[:3])


def test_window_is_inclusive() -> None:
    rows = [{"x": 1, "t": 0}, {"x": 2, "t": 5}]
    found = oracle.evaluate(("cat", A, B), BIG, rows, mode="MATCHES", window=("t", 5))
    assert [idx for _, idx, _ in found] == [[0, 1]]
    assert oracle.evaluate(("cat", A, B), BIG, rows, mode="MATCHES", window=("t", 4)) == []
