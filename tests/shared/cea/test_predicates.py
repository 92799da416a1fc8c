"""Compiled predicates of the shape ``attribute op constant`` against the oracle's
``holds``, on values of every kind an event may hold."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cerfleet import pattern
from cerfleet.cea.predicates import compile_predicate
from tests.shared.oracle import holds

numbers = st.integers(-5, 5) | st.floats(-5, 5) | st.sampled_from([2**63, -(2**70)])
constants = numbers | st.sampled_from(["a", "b", ""]) | st.booleans()
values = (
    constants
    | st.none()
    | st.just(float("nan"))
    | st.floats(-5, 5).map(np.float64)  # a float subclass, as a Python caller may pass
    | st.lists(st.integers(0, 2), max_size=2)
)


@settings(max_examples=1000, deadline=None)
@given(
    op=st.sampled_from(["=", "!=", "<", "<=", ">", ">="]),
    const=constants,
    value=values,
    present=st.booleans(),
)
def test_attribute_against_constant_holds_as_the_oracle_says(
    op: str, const: Any, value: Any, present: bool
) -> None:
    if isinstance(const, bool) and op not in ("=", "!="):
        op = "="  # booleans are unordered: such a query does not compile
    pred = pattern.Compare(op, pattern.Attr("x"), pattern.Const(const))
    event = {"type": "T", "x": value} if present else {"type": "T"}
    assert compile_predicate(pred)(event) == holds(pred, event)
