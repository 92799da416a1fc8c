"""MAX: keep the complex events no competitor strictly contains (Foundations Thm 4,
Algorithm 7), determinised on the fly, with CORE's runs that may start anywhere.

Algorithm 7 pairs, for the runs producing one complex event C, the states ``T``
of the runs with exactly C's marks and the states ``U`` of the runs whose marks
strictly contain C's. Marking moves ``U' = Δ(U,•)``, ``T' = Δ(T,•) \\ U'``;
not marking moves ``U' = Δ(U,•) ∪ Δ(U,∘) ∪ Δ(T,•)``, ``T' = Δ(T,∘) \\ U'``
(a state also reached by a superset run is dominated forever: same future).
C is output when ``T ∩ F ≠ ∅`` and ``U ∩ F = ∅``.

Competition is over all starts, so T and U are start-agnostic: they are
computed over the CEA extended with a virtual pre-start state ``S⁻`` (a TRUE/∘
self-loop plus q0's transitions), which stands for runs not started yet. But a
complex event also has its own start, whose run must still be alive and
accepting: each *class* is therefore ``(P, T, U)`` with ``P`` the deterministic
state of its own run (``PSEUDO`` for the not-yet-started runs). A class holds a
union-list of runs (different starts and marks may share a class); classes
move deterministically, so the tECS stays duplicate-free. Classes do not
interact, so a class whose runs all left the window is simply dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cerfleet.evaluation.determinization import NONE, DetCEA
from cerfleet.evaluation.relevance import Relevance
from cerfleet.evaluation.substream import NodeOf, NodeRef, SubstreamEvaluator, nodes_of
from cerfleet.evaluation.tecs import Node, UnionList, combine, extend, merge, new_bottom, prune

PRE_START = -1  # S⁻ inside T: a CEA state id that no real state uses
PSEUDO = -1  # P of the not-yet-started runs

Class = tuple[int, frozenset[int], frozenset[int]]


class MaxCEA:
    """The lazily built class automaton over a det-CEA, shared by all substreams."""

    def __init__(self, dcea: DetCEA) -> None:
        self.dcea = dcea
        self.classes: list[Class] = []
        self.accepting: list[bool] = []
        self._ids: dict[Class, int] = {}
        self._delta: list[dict[int, tuple[int, int, int]]] = []
        self.pseudo = self.intern((PSEUDO, frozenset({PRE_START}), frozenset()))

    def intern(self, c: Class) -> int:
        cid = self._ids.get(c)
        if cid is None:
            cid = self._ids[c] = len(self.classes)
            self.classes.append(c)
            p, _, u = c
            final = self.dcea.cea.final
            own = self.dcea.states[p] if p != PSEUDO else frozenset()
            self.accepting.append(not own.isdisjoint(final) and u.isdisjoint(final))
            self._delta.append({})
        return cid

    def step(self, cid: int, letter: int) -> tuple[int, int, int]:
        """``(•-class, ∘-class, ∘-started class)``; the third is only for the pseudo
        class: the run that starts here without marking. NONE where there is none."""
        cached = self._delta[cid].get(letter)
        if cached is None:
            cached = self._delta[cid][letter] = self._compute(cid, letter)
        return cached

    def _delta_set(self, states: frozenset[int], letter: int) -> tuple[frozenset[int], ...]:
        """``(Δ(X,•), Δ(X,∘))`` over the CEA extended with S⁻."""
        dcea = self.dcea
        real = states - {PRE_START}
        marked: frozenset[int] = frozenset()
        unmarked: frozenset[int] = frozenset()
        if real:
            m, u = dcea.step(dcea.intern(real), letter)
            marked = dcea.states[m] if m != NONE else marked
            unmarked = dcea.states[u] if u != NONE else unmarked
        if PRE_START in states:
            m, u = dcea.step(dcea.initial, letter)
            marked |= dcea.states[m] if m != NONE else frozenset()
            unmarked |= dcea.states[u] if u != NONE else frozenset()
            unmarked |= {PRE_START}
        return marked, unmarked

    def _own(self, p: int, letter: int) -> tuple[frozenset[int], frozenset[int]]:
        m, u = self.dcea.step(self.dcea.initial if p == PSEUDO else p, letter)
        states = self.dcea.states
        return (
            states[m] if m != NONE else frozenset(),
            states[u] if u != NONE else frozenset(),
        )

    def _class(self, own: frozenset[int], t: frozenset[int], u: frozenset[int]) -> int:
        if not own:
            return NONE
        return self.intern((self.dcea.intern(own), t, u))

    def _compute(self, cid: int, letter: int) -> tuple[int, int, int]:
        p, t, u = self.classes[cid]
        t_m, t_u = self._delta_set(t, letter)
        u_m, u_u = self._delta_set(u, letter)
        own_m, own_u = self._own(p, letter)
        # Marking: supersets must mark too; equal runs that mark stay equal.
        u1 = u_m
        marked = self._class(own_m - u1, t_m - u1, u1)
        # Not marking: equal runs that mark become strict supersets.
        u2 = u_m | u_u | t_m
        t2 = t_u - u2
        if p == PSEUDO:
            return marked, self.intern((PSEUDO, t2, u2)), self._class(own_u - u2, t2, u2)
        return marked, self._class(own_u - u2, t2, u2), NONE


class MaxEvaluator(SubstreamEvaluator):
    """Classes of runs with their union-lists; the pseudo class holds no nodes."""

    __slots__ = ("active", "max_cea", "pseudo")

    def __init__(self, max_cea: MaxCEA, epsilon: float) -> None:
        super().__init__(max_cea.dcea, epsilon)
        self.max_cea = max_cea
        self.pseudo = max_cea.pseudo
        self.active: dict[int, UnionList] = {}

    def advance(
        self, j: int, event: Mapping[str, Any], letter: int, clock: float | None
    ) -> list[Node]:
        self.tick(clock)
        tau = self.tau
        made = self.made
        step = self.max_cea.step
        new: dict[int, UnionList] = {}

        def add(target: int, runs: UnionList) -> None:
            if target != NONE and runs:
                new[target] = combine(new[target], runs, made) if target in new else runs

        marked_to, self.pseudo, started_to = step(self.pseudo, letter)
        if clock is not None:  # without a clock no complex event may start here
            bottom = new_bottom(j, clock)
            add(marked_to, [extend(bottom, j, event)])
            add(started_to, [bottom])
        for c, ul in self.active.items():
            prune(ul, tau)
            if not ul:
                continue  # classes do not compete with each other: expired ones just go
            marked_to, unmarked_to, _ = step(c, letter)
            if marked_to != NONE:
                add(marked_to, [extend(merge(ul, made), j, event)])
            add(unmarked_to, ul)
        self.active = new
        self.after_event(made)
        if clock is None:
            return []
        accepting = self.max_cea.accepting
        return [merge(ul) for c, ul in new.items() if accepting[c]]

    def reset(self) -> None:
        self.active = {}
        self.pseudo = self.max_cea.pseudo

    def relevant(self, rel: Relevance) -> frozenset[int]:
        held = (self.pseudo, *self.active)
        found = rel.held.get(held)
        if found is None:
            found = rel.held[held] = frozenset().union(*(self._class_letters(rel, c) for c in held))
        return found

    def _class_letters(self, rel: Relevance, c: int) -> frozenset[int]:
        """The batch's letters that would change class ``c`` (accepting: all of them)."""
        found = rel.of_max_class.get(c)
        if found is None:
            max_cea = self.max_cea
            if max_cea.accepting[c]:
                found = rel.of_max_class[c] = frozenset(rel.letters)
                return found
            step = max_cea.step
            found = rel.of_max_class[c] = frozenset(
                v for v in rel.letters if step(c, v) != (NONE, c, NONE)
            )
        return found

    @property
    def idle(self) -> bool:
        return not self.active and self.pseudo == self.max_cea.pseudo

    def export(self, ref: NodeRef) -> Any:
        classes = self.max_cea.classes
        return {
            "pseudo": self._class_doc(classes[self.pseudo]),
            "active": [
                [self._class_doc(classes[c]), [ref(n) for n in ul]] for c, ul in self.active.items()
            ],
        }

    def load(self, state: Any, node: NodeOf) -> None:
        self.pseudo = self._class_of(state["pseudo"])
        self.active = {self._class_of(doc): [node(i) for i in ids] for doc, ids in state["active"]}

    def _class_doc(self, c: Class) -> list[Any]:
        p, t, u = c
        return [None if p == PSEUDO else self.states(p), sorted(t), sorted(u)]

    def _class_of(self, doc: list[Any]) -> int:
        p, t, u = doc
        return self.max_cea.intern(
            (PSEUDO if p is None else self.intern(p), frozenset(t), frozenset(u))
        )

    def roots(self) -> list[Node]:
        return nodes_of(list(self.active.values()))
