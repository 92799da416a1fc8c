"""``CompiledQuery``: what a compiled query knows about the events it reads."""

from __future__ import annotations

import pytest

from cerfleet import compile_query


@pytest.mark.parametrize(
    ("text", "attributes"),
    [
        ("SELECT * FROM S WHERE A ; B", {"type"}),
        # EVENTS windows count events: no attribute.
        ("SELECT * FROM S WHERE A ; B WITHIN 3 EVENTS", {"type"}),
        ("SELECT * FROM S WHERE A ; B WITHIN 3 SECONDS", {"type", "timestamp"}),
        ("SELECT * FROM S WHERE A ; B WITHIN 30 [ts]", {"type", "ts"}),
        (
            "SELECT * FROM S WHERE (A ; B) FILTER A[price * volume > 10 OR NOT name LIKE 'I.*']"
            " AND B[-x IN (1, 2) AND y NOT IN RANGE(0, 5)] PARTITION BY [k, j]",
            {"type", "price", "volume", "name", "x", "y", "k", "j"},
        ),
        # Every filter, nested anywhere, also one whose variable binds nothing useful.
        (
            "SELECT A FROM S WHERE ((A ; B FILTER B[b = 1])+ ; C) FILTER A[a > 1] OR C[c < 2]",
            {"type", "a", "b", "c"},
        ),
    ],
)
def test_attributes_are_what_the_query_reads(text: str, attributes: set[str]) -> None:
    assert compile_query(text).attributes == frozenset(attributes)


def test_attributes_follow_the_configured_fields() -> None:
    q = compile_query(
        "SELECT * FROM S WHERE A ; B FILTER A[x > 1] WITHIN 2 MINUTES",
        type_field="kind",
        time_field="at",
    )
    assert q.attributes == {"kind", "x", "at"}
