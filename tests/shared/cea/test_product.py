"""``meet``: the conjunction of two guards, as the product of ``φ1 AND φ2`` needs it."""

from __future__ import annotations

from cerfleet.cea.automaton import TRUE, Guard
from cerfleet.cea.product import meet

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
