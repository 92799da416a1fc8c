"""Complex event automata (CORE §3, Appendix A).

A *VCEA* transition ``(p, P, L, q)`` carries the set ``L`` of variables the
event is bound to; the CEA ``A = (Q, Δ, q0, F)`` replaces ``L`` by a mark
(• when ``L ≠ ∅``, ∘ otherwise). A predicate ``P`` is a conjunction of an
optional event-type test and of filter atoms, each atom an index into the
query's table of unary predicates (so that every atom is evaluated once per
event, into a bit vector).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Guard:
    """``P`` of a transition: ``type(t) = etype`` (None: TRUE) and every atom holds;
    ``negated``: the complement of that, ``¬(type(t) = etype ∧ atoms)`` (CEQL's
    ``NOT(R FILTER …)`` and the gaps of ``φ1 ; !ψ ; φ2``)."""

    etype: str | None
    atoms: frozenset[int] = frozenset()
    negated: bool = False

    def conjoin(self, atom: int) -> Guard:
        if self.negated:
            # ¬P ∧ Q is no guard of this form; the front-end rejects such filters.
            raise ValueError("a filter on a negated event cannot be compiled")
        return Guard(self.etype, self.atoms | {atom})


TRUE = Guard(None)


@dataclass(frozen=True, slots=True)
class VTransition:
    """``(source, P, L, target)`` of a VCEA."""

    source: int
    guard: Guard
    labels: frozenset[str]
    target: int


@dataclass
class VCEA:
    """A CEA with variable labels and a set of initial states (Appendix A)."""

    transitions: list[VTransition] = field(default_factory=list)
    initial: set[int] = field(default_factory=set)
    final: set[int] = field(default_factory=set)

    def states(self) -> set[int]:
        out = set(self.initial) | self.final
        for t in self.transitions:
            out.add(t.source)
            out.add(t.target)
        return out


@dataclass(frozen=True, slots=True)
class Transition:
    """``p —P/m→ q`` of a CEA; ``marking`` is • (True) or ∘ (False).

    ``tags`` is empty except in queries with correlations (``cea.correlation``): the
    correlated variables the event is bound to and the formula instances it belongs to,
    which enumeration reads to check the correlations; a tagged ∘ event is kept in the
    tECS for the check but is no position of the complex event."""

    source: int
    guard: Guard
    marking: bool
    target: int
    tags: frozenset[str] = frozenset()


@dataclass(frozen=True)
class CEA:
    """``A = (Q, Δ, q0, F)``; no transition enters ``q0``.

    ``atoms`` is the number of filter atoms the guards index into.
    """

    states: frozenset[int]
    transitions: tuple[Transition, ...]
    initial: int
    final: frozenset[int]
    atoms: int

    def outgoing(self) -> dict[int, list[Transition]]:
        out: dict[int, list[Transition]] = {q: [] for q in self.states}
        for t in self.transitions:
            out[t.source].append(t)
        return out

    def event_types(self) -> frozenset[str]:
        return frozenset(t.guard.etype for t in self.transitions if t.guard.etype is not None)
