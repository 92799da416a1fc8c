"""Algorithm 2 of CORE (Appendix B.1): enumerate ``⟦n⟧^ε(j)`` with output-linear delay.

A left-to-right depth-first walk over the tECS with an explicit stack. A right
child is only pushed when its ``tmax`` is inside the window, and the leftmost
full path under any node starts at that node's ``max``: every push therefore
yields at least one complex event, and no path is visited twice
(duplicate-freeness), which is what bounds the delay by the output size.

The set ``P`` of marked positions is the walk's path: two lists the descent appends
to (largest position first), with the stack holding each pushed node's depth in them,
so pushing ``(node, P)`` is O(1) and a pop truncates the lists back to that depth.
Each complex event copies them reversed, one C-level slice per list, where
rebuilding a linked list cost a Python step per position.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from cerfleet.complex_event import ComplexEvent
from cerfleet.evaluation.tecs import BOTTOM, OUTPUT, Node

OpenComplexEvent = tuple[int, tuple[int, ...], tuple[Mapping[str, Any], ...]]


def enumerate_node(n: Node, tau: float) -> Iterator[OpenComplexEvent]:
    """Yield ``(start, positions, events)`` for every full path of ``n`` whose start's
    clock is ``>= tau`` (τ = clock(j) − ε)."""
    if n.tmax < tau:
        return
    positions: list[int] = []
    events: list[Mapping[str, Any]] = []
    stack: list[tuple[Node, int]] = [(n, 0)]
    while stack:
        node, depth = stack.pop()
        del positions[depth:]
        del events[depth:]
        while True:
            kind = node.kind
            if kind == BOTTOM:
                yield node.pos, tuple(positions[::-1]), tuple(events[::-1])
                break
            if kind == OUTPUT:
                positions.append(node.pos)
                events.append(node.event)  # type: ignore[arg-type]
                node = node.left  # type: ignore[assignment]
            else:
                right = node.right
                assert right is not None
                if right.tmax >= tau:
                    stack.append((right, len(positions)))
                node = node.left  # type: ignore[assignment]


def complex_events(
    finals: list[Node], tau: float, j: int, key: Any, limit: int | None, cap: int | None
) -> tuple[list[ComplexEvent], bool]:
    """The complex events ending at position ``j`` (of the substream keyed ``key``) from
    its final nodes: at most ``limit`` (LIMIT: the query asked for no more) and at most
    ``cap`` (a host's bound); whether ``cap`` cut a complex event off."""
    if cap is not None and limit is not None and limit <= cap:
        cap = None  # LIMIT stops first: nothing the query asked for is lost
    out: list[ComplexEvent] = []
    for node in finals:
        for start, positions, events in enumerate_node(node, tau):
            if cap is not None and len(out) >= cap:
                return out, True
            out.append(ComplexEvent(start, j, positions, key, events))
            if limit is not None and len(out) >= limit:
                return out, False
    return out, False
