"""``pattern.AnyEvent``: a type-free guard whose filter atoms are read for events of
every type, the query's own types included (row path and columnar path)."""

from __future__ import annotations

from cerfleet import pattern as p
from cerfleet.events.columns import columns_of
from cerfleet.query import CompiledQuery

BIG = p.FilterAtom("X", p.Compare(">", p.Attr("v"), p.Const(1)))
# T : X[v > 1] : T — X any event, of type T or not, with v > 1, right after a T.
FORM = p.Pattern(
    where=p.Contiguous(
        p.Contiguous(p.EventType("T"), p.Filter(p.AnyEvent("X"), BIG)), p.EventType("T")
    )
)
EVENTS = [
    {"type": "T", "v": 0},  # 0
    {"type": "T", "v": 5},  # 1  X (a T) and a T
    {"type": "T", "v": 0},  # 2
    {"type": "U", "v": 7},  # 3  X (a U)
    {"type": "T", "v": 0},  # 4
    {"type": "U", "v": 1},  # 5  not X: v = 1
    {"type": "T", "v": 0},  # 6
]
EXPECTED = [(0, 1, 2), (2, 3, 4)]


def test_rows_and_columns() -> None:
    query = CompiledQuery.from_pattern(FORM)
    ev = query.evaluator()
    assert [ce.positions for e in EVENTS for ce in ev.process(e)] == EXPECTED
    columns = columns_of(EVENTS, query.attributes)
    found = query.evaluator().process_columns(columns, events=EVENTS)
    assert [ce.positions for ce in found] == EXPECTED
    rebuilt = query.evaluator().process_columns(columns)
    assert [ce.positions for ce in rebuilt] == EXPECTED


def test_without_a_type_column() -> None:
    # Every event is "other"; the atoms are still read (the letters once skipped them).
    form = p.Pattern(where=p.Contiguous(p.Filter(p.AnyEvent("X"), BIG), p.AnyEvent("Y")))
    query = CompiledQuery.from_pattern(form)
    rows = [{"v": 0}, {"v": 3}, {"v": 0}]
    columns = columns_of(rows, query.attributes - {"type"})
    assert [ce.positions for ce in query.evaluator().process_columns(columns)] == [(1, 2)]
