"""STRICT as an automaton: the CEA's runs whose marked positions are contiguous.

A run reads every event of its substream from its start to its end, marking
some (•) and skipping others (∘). Its positions are contiguous exactly when its
marks read ∘* •* ∘*, so the product with a three-phase automaton (before the
first mark, marking, after the last mark) accepts exactly the STRICT complex
events (Foundations Thm 4 uses two phases because there the last event is always
marked; CORE's projection can end a complex event on an unmarked event).
STRICT compares nothing across complex events, so Algorithm 1 evaluates the
product as it evaluates ALL.
"""

from __future__ import annotations

from cerfleet.cea.automaton import CEA, Transition

# phase after reading a • / ∘ event in each phase (None: the run breaks contiguity)
_NEXT_PHASE: dict[tuple[int, bool], int | None] = {
    (0, False): 0,
    (0, True): 1,
    (1, True): 1,
    (1, False): 2,
    (2, False): 2,
    (2, True): None,
}


def strict_product(cea: CEA) -> CEA:
    """The product CEA; state ``(q, phase)`` is ``3q + phase``, so q0 stays 0."""
    transitions = []
    for t in cea.transitions:
        for phase in (0, 1, 2):
            nxt = _NEXT_PHASE[phase, t.marking]
            if nxt is not None:
                transitions.append(
                    Transition(3 * t.source + phase, t.guard, t.marking, 3 * t.target + nxt, t.tags)
                )
    states = {0} | {t.source for t in transitions} | {t.target for t in transitions}
    return CEA(
        states=frozenset(states),
        transitions=tuple(transitions),
        initial=3 * cea.initial,
        final=frozenset(3 * f + phase for f in cea.final for phase in (0, 1, 2)) & states,
        atoms=cea.atoms,
    )
