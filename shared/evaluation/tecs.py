"""The timed Enumerable Compact Set (tECS) of CORE §4, with union-lists.

A tECS is a DAG of three node kinds:

* **bottom** ``new-bottom(i)``: a run that starts at position ``i``;
* **output** ``extend(n, j)``: position ``j`` marked on top of the runs of ``n``;
* **union** ``union(n1, n2)``: the runs of both.

Every node stores its maximum start ``max`` (paper: ``max(n)``) and the window
clock of that start, ``tmax``, so the enumerator can prune in O(1) by
``tmax >= τ``. The structure is kept time-ordered (``max(left) >= max(right)``),
3-bounded and duplicate-free, which gives output-linear-delay enumeration
(Theorem 3). ``pos`` is the global input index, ``event`` the marked event.

Union-lists (§4.2, App. B) are Python lists ``[n0, n1, ..., nk]`` of safe nodes,
``n0`` non-union, sorted by decreasing ``max`` with only ``n0``/``n1`` tying.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

BOTTOM = 0
OUTPUT = 1
UNION = 2


class Node:
    """One tECS node. ``left`` is ``next(o)`` for output nodes."""

    __slots__ = ("event", "kind", "left", "max", "pos", "right", "tmax")

    def __init__(
        self,
        kind: int,
        pos: int,
        max_start: int,
        tmax: float,
        left: Node | None = None,
        right: Node | None = None,
        event: Mapping[str, Any] | None = None,
    ) -> None:
        self.kind = kind
        self.pos = pos
        self.max = max_start
        self.tmax = tmax
        self.left = left
        self.right = right
        self.event = event

    def __repr__(self) -> str:
        name = ("bottom", "output", "union")[self.kind]
        return f"<{name} pos={self.pos} max={self.max}>"


# Stands in for a right child that fell out of the window and was cut loose so
# the garbage collector can reclaim it; its tmax fails every window test.
DEAD = Node(BOTTOM, -1, -1, float("-inf"))

UnionList = list[Node]


def new_bottom(i: int, clock: float) -> Node:
    return Node(BOTTOM, i, i, clock)


def extend(n: Node, j: int, event: Mapping[str, Any]) -> Node:
    return Node(OUTPUT, j, n.max, n.tmax, n, None, event)


def _odepth(n: Node) -> int:
    depth = 0
    while n.kind == UNION:
        depth += 1
        n = n.left  # type: ignore[assignment]
    return depth


def _u(left: Node, right: Node, made: list[Node] | None) -> Node:
    u = Node(UNION, -1, left.max, left.tmax, left, right)
    if made is not None:
        made.append(u)
    return u


def union(n1: Node, n2: Node, made: list[Node] | None = None) -> Node:
    """``union(n1, n2)`` for safe nodes with ``max(n1) = max(n2)``: the Fig. 5 gadgets.

    New union nodes are appended to ``made`` (the evaluator's reclamation queue).
    """
    if n1.kind != UNION:  # (a)
        return _u(n1, n2, made)
    if n2.kind != UNION:  # (b)
        return _u(n2, n1, made)
    r1, r2 = n1.right, n2.right
    assert r1 is not None and r2 is not None and n1.left is not None and n2.left is not None
    # (c) / (d): keep the lower union time-ordered by putting the larger max on the left.
    u2 = _u(r1, r2, made) if r1.max >= r2.max else _u(r2, r1, made)
    u1 = _u(n2.left, u2, made)
    return _u(n1.left, u1, made)


def insert(ul: UnionList, n: Node, made: list[Node] | None = None) -> None:
    """``insert(ul, n)`` in place; requires ``max(n) <= max(n0)``."""
    m = n.max
    for i in range(1, len(ul)):
        mi = ul[i].max
        if mi == m:
            ul[i] = union(ul[i], n, made)
            return
        if mi < m:
            ul.insert(i, n)
            return
    ul.append(n)


def merge(ul: UnionList, made: list[Node] | None = None) -> Node:
    """``merge(ul)``: one safe node representing the union of the list (Fig. 5e)."""
    k = len(ul) - 1
    if k == 0:
        return ul[0]
    node = ul[k]
    for i in range(k - 1, -1, -1):
        node = _u(ul[i], node, made)
    return node


def combine(a: UnionList, b: UnionList, made: list[Node] | None = None) -> UnionList:
    """The union-list of the runs of ``a`` and ``b`` (disjoint), reusing one of them.

    Selection strategies gather runs into a state from several predecessors in no
    particular max-start order; inserting the merge of the list with the smaller
    first max keeps ``insert``'s precondition.
    """
    if not a:
        return b
    if not b:
        return a
    if a[0].max < b[0].max:
        a, b = b, a
    insert(a, merge(b, made), made)
    return a


def prune(ul: UnionList, tau: float) -> None:
    """Drop the entries whose max-start fell out of the window (all, if ``n0`` did)."""
    if ul and ul[0].tmax < tau:
        ul.clear()
        return
    while ul and ul[-1].tmax < tau:
        ul.pop()


def safe(n: Node) -> bool:
    """Safe node: non-union, or odepth 1 with a right child of odepth <= 2."""
    if n.kind != UNION:
        return True
    assert n.right is not None
    return _odepth(n) == 1 and _odepth(n.right) <= 2


class TaggedNode(Node):
    """An output node of a correlated query (``evaluation.tagged``): ``tags`` say which
    correlated variables and formula instances its event belongs to; ``marked`` is
    False for an event kept only for the correlation check (no position of the
    complex event)."""

    __slots__ = ("marked", "tags")

    def __init__(
        self, j: int, n: Node, event: Mapping[str, Any], marked: bool, tags: frozenset[str]
    ) -> None:
        super().__init__(OUTPUT, j, n.max, n.tmax, n, None, event)
        self.marked = marked
        self.tags = tags
