"""Reclaiming tECS nodes that fell out of the window (CORE §4.4, research notes §3.10).

CORE's Java engine relies on weak references; here a live node can still point
at an expired sub-DAG only through a union node's right child (left children and
output nodes' successors share their parent's max-start). Every union node that
may persist is queued in creation order; when the queue has doubled since the
last sweep, the sweep cuts expired right children (replacing them by ``DEAD``)
and forgets union nodes that expired themselves or have nothing left to cut.
That is amortised O(1) per union node, and afterwards nothing in the window
reaches anything outside it, so CPython frees expired nodes: memory stays flat.
"""

from __future__ import annotations

from cerfleet.evaluation.tecs import DEAD, UNION, Node

_MIN_SWEEP = 4096  # union nodes queued before the first sweep: keeps sweeps rare on small windows


class Reclaimer:
    """The queue of union nodes ``made`` by one evaluator, and its sweep."""

    __slots__ = ("made", "sweep_at")

    def __init__(self, made: list[Node] | None = None) -> None:
        self.made: list[Node] = [] if made is None else made
        self.sweep_at = max(2 * len(self.made), _MIN_SWEEP)

    def maybe_sweep(self, tau: float) -> None:
        if len(self.made) >= self.sweep_at:
            self.sweep(tau)

    def sweep(self, tau: float) -> None:
        keep: list[Node] = []
        for u in self.made:
            if u.tmax < tau:
                continue  # expired itself: only reachable through right children cut here
            right = u.right
            assert right is not None
            if right.tmax < tau:
                u.right = DEAD
            else:
                keep.append(u)
        self.made = keep
        self.sweep_at = max(2 * len(keep), _MIN_SWEEP)


def unions_under(roots: list[Node]) -> list[Node]:
    """The union nodes reachable from ``roots`` (to rebuild the queue after a restore)."""
    seen: set[int] = set()
    out: list[Node] = []
    stack = list(roots)
    while stack:
        n = stack.pop()
        if id(n) in seen or n is DEAD:
            continue
        seen.add(id(n))
        if n.kind == UNION:
            out.append(n)
        stack.extend(c for c in (n.left, n.right) if c is not None)
    return out
