"""The output stage: labels by the standard's preferment, long matches, measures."""

from __future__ import annotations

from cerfleet.match_recognize.measures import labels
from cerfleet.match_recognize.parser import parse


def regex(text: str):  # type: ignore[no-untyped-def]
    return parse(f"SELECT * FROM T MATCH_RECOGNIZE (ALL MATCHES PATTERN ({text}))").regex


def anything(var: str, i: int, before: object) -> bool:
    return True


def test_preferment() -> None:
    rows = [{}, {}, {}]
    assert labels(regex("(A | B) C+"), rows, anything) == ("A", "C", "C")
    assert labels(regex("A* B*"), rows, anything) == ("A", "A", "A")
    assert labels(regex("A{1,2} B+"), rows, anything) == ("A", "A", "B")
    assert labels(regex("A+ B{2}"), rows, anything) == ("A", "B", "B")


def test_long_matches_need_no_deep_recursion() -> None:
    rows = [{"x": 1}] * 20_000 + [{"x": 0}]
    found = labels(regex("A+ B"), rows, lambda v, i, _: (v == "A") == (rows[i]["x"] == 1))
    assert found == ("A",) * 20_000 + ("B",)


def test_running_conditions_see_the_labels_before_the_row() -> None:
    # Greedy A+ would take three rows; B accepts a row only after exactly two A rows,
    # so the preferred labelling the condition allows is A A B B.
    rows = [{}, {}, {}, {}]

    def two_a_before(v: str, i: int, before: object) -> bool:
        assert isinstance(before, list | tuple)
        return v != "B" or list(before).count("A") == 2

    assert labels(regex("A+ B+"), rows, two_a_before, running=True) == ("A", "A", "B", "B")
