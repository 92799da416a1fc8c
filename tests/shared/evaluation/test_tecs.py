"""tECS operations keep the structure time-ordered, 3-bounded, safe and duplicate-free."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from cerfleet.evaluation.enumeration import enumerate_node
from cerfleet.evaluation.tecs import (
    UNION,
    Node,
    extend,
    insert,
    merge,
    new_bottom,
    safe,
    union,
)


def _odepth(n: Node) -> int:
    d = 0
    while n.kind == UNION:
        d += 1
        n = n.left  # type: ignore[assignment]
    return d


def _check_time_ordered_3_bounded(n: Node, seen: set[int] | None = None) -> None:
    seen = set() if seen is None else seen
    if id(n) in seen:
        return
    seen.add(id(n))
    assert _odepth(n) <= 3
    if n.kind == UNION:
        assert n.left is not None and n.right is not None
        assert n.left.max == n.max >= n.right.max
        _check_time_ordered_3_bounded(n.left, seen)
        _check_time_ordered_3_bounded(n.right, seen)
    elif n.left is not None:
        assert n.left.max == n.max
        _check_time_ordered_3_bounded(n.left, seen)


def _paths(n: Node) -> list[tuple[int, tuple[int, ...]]]:
    return [(s, p) for s, p, _ in enumerate_node(n, float("-inf"))]


_E: dict[str, object] = {}


def test_union_gadgets_cover_all_four_cases() -> None:
    # Two safe union nodes with equal max, built from distinct open complex events.
    b0, b1 = new_bottom(0, 0), new_bottom(1, 1)
    o = [extend(b1, j, _E) for j in (2, 3, 4, 5)]
    lo = [extend(b0, j, _E) for j in (6, 7)]
    n1 = union(o[0], lo[0])  # case (a): n1 non-union
    n2 = union(o[1], lo[1])
    assert safe(n1) and safe(n2)
    for a, b in ((n1, n2), (n2, n1), (o[2], n1), (n1, o[3])):
        u = union(a, b)
        assert safe(u)
        _check_time_ordered_3_bounded(u)
        paths = _paths(u)
        assert sorted(paths) == sorted(_paths(a) + _paths(b))
        assert len(paths) == len(set(paths))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 3)), min_size=1, max_size=25))
def test_union_lists_stay_sorted_and_merge_to_all_inserted(items: list[tuple[int, int]]) -> None:
    """Insert extended runs into one union-list in non-increasing max order (as Algorithm 1
    does) and check the invariants of §3.4 and that merge represents exactly what went in."""
    counter = itertools.count(100)
    items.sort(key=lambda it: -it[0])
    top = items[0][0]
    ul = [new_bottom(top, top)]
    expected = [(top, ())]
    for start, marks in items[1:]:
        node: Node = new_bottom(start, start)
        positions: tuple[int, ...] = ()
        for _ in range(marks):
            pos = next(counter)
            node = extend(node, pos, _E)
            positions = (*positions, pos)
        insert(ul, node)
        expected.append((start, tuple(sorted(positions))))
    assert ul[0].kind != UNION
    assert all(ul[0].max >= n.max for n in ul)
    assert all(ul[i].max > ul[i + 1].max for i in range(1, len(ul) - 1))
    assert all(safe(n) for n in ul)
    merged = merge(ul)
    assert safe(merged)
    _check_time_ordered_3_bounded(merged)
    assert sorted(_paths(merged)) == sorted(expected)


def test_enumeration_prunes_by_window_and_yields_only_valid_paths() -> None:
    ul = [extend(new_bottom(5, 5), 9, _E)]
    for start in (4, 2, 0):
        insert(ul, extend(new_bottom(start, start), 9, _E))
    merged = merge(ul)
    assert [s for s, _, _ in enumerate_node(merged, 2)] == [5, 4, 2]
    assert list(enumerate_node(merged, 6)) == []
