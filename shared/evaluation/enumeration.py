"""Algorithm 2 of CORE (Appendix B.1): enumerate ``⟦n⟧^ε(j)`` with output-linear delay.

A left-to-right depth-first walk over the tECS with an explicit stack. A right
child is only pushed when its ``tmax`` is inside the window, and the leftmost
full path under any node starts at that node's ``max``: every push therefore
yields at least one complex event, and no path is visited twice
(duplicate-freeness), which is what bounds the delay by the output size.

The set ``P`` of marked positions is a persistent linked list ``(pos, event,
rest)`` so that pushing ``(node, P)`` is O(1); its head is the smallest
position, so reading it front to back gives positions in increasing order.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from cerfleet.complex_event import ComplexEvent
from cerfleet.evaluation.tecs import BOTTOM, OUTPUT, Node

Marked = tuple[int, Mapping[str, Any], "Marked"] | None
OpenComplexEvent = tuple[int, tuple[int, ...], tuple[Mapping[str, Any], ...]]


def enumerate_node(n: Node, tau: float) -> Iterator[OpenComplexEvent]:
    """Yield ``(start, positions, events)`` for every full path of ``n`` whose start's
    clock is ``>= tau`` (τ = clock(j) − ε)."""
    if n.tmax < tau:
        return
    stack: list[tuple[Node, Marked]] = [(n, None)]
    while stack:
        node, marked = stack.pop()
        while True:
            kind = node.kind
            if kind == BOTTOM:
                yield node.pos, *_unzip(marked)
                break
            if kind == OUTPUT:
                marked = (node.pos, node.event, marked)  # type: ignore[assignment]
                node = node.left  # type: ignore[assignment]
            else:
                right = node.right
                assert right is not None
                if right.tmax >= tau:
                    stack.append((right, marked))
                node = node.left  # type: ignore[assignment]


def _unzip(marked: Marked) -> tuple[tuple[int, ...], tuple[Mapping[str, Any], ...]]:
    positions: list[int] = []
    events: list[Mapping[str, Any]] = []
    while marked is not None:
        pos, event, marked = marked
        positions.append(pos)
        events.append(event)
    return tuple(positions), tuple(events)


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
