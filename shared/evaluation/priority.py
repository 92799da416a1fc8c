"""NEXT and LAST: Algorithms 5 and 6 of *Foundations of CEP* (Theorem 6), run over
the on-the-fly I/O-determinised CEA, with CORE's runs that may start anywhere.

Competitors are all complex events ending at the same position; NEXT keeps the
maximum under ≤next (``min(C1 △ C2) ∈ C2``), LAST under ≤last (``max``), with the
corrected (non-inverted) definitions of the research notes.

State: an ordered list ``O`` of disjoint *groups* of deterministic states. All
runs held in one group have the same set D of marked positions, and groups are
in decreasing priority of D. Runs reaching the same deterministic state have the
same futures, and both orders are preserved when the same later positions are
added to both sides, so only the highest-priority group may claim a state: the
others' runs there can never win again and are dropped. A group may hold runs
with different starts (the same D); all are kept, as the complex events differ.

The runs that have not started yet sit in a virtual pre-start state with a
TRUE/∘ self-loop; they have D = ∅, the minimum of both orders, so they live in
the last group, and at each event they start a new run through q0's transitions.

NEXT moves each group by • then ∘ before the next group; LAST moves every group
by • before any by ∘ (marking the newest position wins). Only the first group
holding a final state outputs: at most one D per event.

Runs outside the window cannot be dropped as in Algorithm 1: the strategy is
applied before WITHIN, so an expired run still wins the competition (and then
nothing is output). Their nodes are dropped but their states stay as *ghosts*
that keep claiming; states are bounded by the automaton, so memory stays flat.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cerfleet.evaluation.determinization import NONE, DetCEA
from cerfleet.evaluation.relevance import Relevance
from cerfleet.evaluation.substream import NodeOf, NodeRef, SubstreamEvaluator, nodes_of
from cerfleet.evaluation.tecs import Node, UnionList, combine, extend, merge, new_bottom, prune

Group = list[tuple[int, UnionList]]


class PriorityEvaluator(SubstreamEvaluator):
    """``O`` of Algorithm 5 is ``groups``; its last group is the D = ∅ group."""

    __slots__ = ("groups", "marks_first")

    def __init__(self, dcea: DetCEA, epsilon: float, *, last: bool) -> None:
        super().__init__(dcea, epsilon)
        self.groups: list[Group] = [[]]
        self.marks_first = last  # LAST: every group's •-move precedes every ∘-move

    def advance(
        self, j: int, event: Mapping[str, Any], letter: int, clock: float | None
    ) -> list[Node]:
        self.tick(clock)
        tau = self.tau
        step = self.dcea.step
        made = self.made
        groups = self.groups
        for group in groups:
            for _, ul in group:
                prune(ul, tau)
        # The pre-start state's new run; without a clock it can start no complex event,
        # but it still competes (strategies come before WITHIN): a ghost with no nodes.
        started: UnionList = [new_bottom(j, clock)] if clock is not None else []
        empty_group = len(groups) - 1
        if self.marks_first:
            moves = [(g, True) for g in range(len(groups))]
            moves += [(g, False) for g in range(len(groups))]
        else:
            moves = [(g, m) for g in range(len(groups)) for m in (True, False)]

        claimed: set[int] = set()
        new_groups: list[Group] = []
        for g, marking in moves:
            members = groups[g]
            if g == empty_group:
                members = [*members, (self.dcea.initial, started)]
            moved: dict[int, UnionList] = {}
            for q, ul in members:
                target = step(q, letter)[0 if marking else 1]
                if target == NONE or target in claimed:
                    continue
                if not marking:
                    runs = ul  # handed over: this group's •-move already merged it
                elif ul:
                    runs = [extend(merge(ul, made), j, event)]
                else:
                    runs = []  # a ghost's run: out of the window, but it still claims
                moved[target] = combine(moved[target], runs, made) if target in moved else runs
            claimed.update(moved)
            # The D = ∅ group always survives: the pre-start state loops on TRUE/∘.
            if moved or (g == empty_group and not marking):
                new_groups.append(list(moved.items()))
        self.groups = new_groups
        self.after_event(made)
        if clock is None:
            return []
        is_final = self.dcea.is_final
        for group in new_groups:
            finals = [ul for q, ul in group if is_final[q]]
            if finals:
                return [merge(ul) for ul in finals if ul]
        return []

    def reset(self) -> None:
        self.groups = [[]]

    def relevant(self, rel: Relevance) -> frozenset[int]:
        return rel.of_states(tuple(q for group in self.groups for q, _ in group))

    @property
    def idle(self) -> bool:
        return len(self.groups) == 1 and not self.groups[0]

    def export(self, ref: NodeRef) -> Any:
        return [
            [[self.states(q), [ref(n) for n in ul]] for q, ul in group] for group in self.groups
        ]

    def load(self, state: Any, node: NodeOf) -> None:
        self.groups = [
            [(self.intern(states), [node(i) for i in ids]) for states, ids in group]
            for group in state
        ]

    def roots(self) -> list[Node]:
        return nodes_of([ul for group in self.groups for _, ul in group])
