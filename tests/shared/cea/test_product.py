"""``meet``: the conjunction of two guards, as the product of ``φ1 AND φ2`` needs it."""

from __future__ import annotations

import pytest

from cerfleet.cea.automaton import TRUE, Guard
from cerfleet.cea.construction import AutomatonTooLarge
from cerfleet.cea.product import meet
from cerfleet.query import compile_query

A, B = Guard("A"), Guard("B")
NOT_A = Guard("A", negated=True)
NOT_A1 = Guard("A", frozenset({1}), negated=True)


def test_types_clash_or_narrow() -> None:
    assert meet(A, B) is None
    assert meet(A, TRUE) == A
    assert meet(Guard("A", frozenset({1})), Guard(None, frozenset({2}))) == Guard(
        "A", frozenset({1, 2})
    )


def test_negated_guards_become_exclusions() -> None:
    assert meet(NOT_A, TRUE) == NOT_A  # stays in the plain negated form
    assert meet(NOT_A, B) == B  # a B is never an A
    assert meet(NOT_A, A) is None
    assert meet(NOT_A1, Guard("A", frozenset({1, 2}))) is None
    # An A without atom 1: both parts kept.
    assert meet(NOT_A1, A) == Guard("A", exclude=frozenset({("A", frozenset({1}))}))
    not_b = Guard("B", negated=True)
    both = meet(NOT_A, not_b)
    assert both == Guard(None, exclude=frozenset({("A", frozenset()), ("B", frozenset())}))
    assert both is not None and both.types() == {"A", "B"}


def test_a_conjunction_too_large_is_refused_naming_and() -> None:
    side = "(A ; B+ ; C ; (A OR B)+ ; C)"
    with pytest.raises(AutomatonTooLarge, match="AND multiplies"):
        compile_query("SELECT * FROM S WHERE " + " AND ".join([side] * 4) + " WITHIN 5 EVENTS")


def test_conjunction_ends_both_sides_on_one_event() -> None:
    evaluator = compile_query("SELECT * FROM S WHERE (A ; C) AND (B ; C)").evaluator()
    found = [
        (ce.start, tuple(ce.positions))
        for event in ("A", "C", "B", "C")
        for ce in evaluator.process({"type": event})
    ]
    assert found == [(0, (0, 2, 3))]  # the first C ends no B ; C
