"""``φ1 AND φ2`` as an automaton: the product of the two sides' VCEAs.

A run of the product is a pair of runs, one per side, that read the same events and
end on the same event; an event is bound to the union of what each side binds it to.
The sides need not start together: each side gets a *waiting* state (a TRUE/∅ self-loop
that may start the side at any later event), and the product's first event must start
at least one side, so that the product's run, like every run, starts on the first
event of its complex event. The result is one run per pair of runs, so the engine's
evaluation stays the usual constant time per event; the price is size, up to
|Δ1|·|Δ2| transitions (the construction's transition bound still applies).

Guards meet by conjunction (``meet``): two types clash, atoms add up, negated guards
(``NOT(R)`` events, the gaps of ``; !R ;``) become excluded ``(type, atoms)`` pairs.
"""

from __future__ import annotations

from collections.abc import Callable

from cerfleet.cea.automaton import TRUE, VCEA, Guard, VTransition

__all__ = ["conjunction", "meet"]

# A side's waiting state: never a state of a VCEA (their ids are positive).
_WAIT = -1

_Exclusions = frozenset[tuple[str, frozenset[int]]]


def _parts(g: Guard) -> tuple[str | None, frozenset[int], _Exclusions]:
    """``(etype, atoms, exclusions)`` with a negated guard turned into an exclusion."""
    if g.negated:
        assert g.etype is not None, "only typed guards are negated"
        return None, frozenset(), g.exclude | {(g.etype, g.atoms)}
    return g.etype, g.atoms, g.exclude


def meet(g1: Guard, g2: Guard) -> Guard | None:
    """``g1 ∧ g2`` as one guard; None when no event can satisfy both."""
    t1, a1, x1 = _parts(g1)
    t2, a2, x2 = _parts(g2)
    if t1 is not None and t2 is not None and t1 != t2:
        return None
    etype = t1 if t1 is not None else t2
    atoms = a1 | a2
    exclude = x1 | x2
    if etype is not None:
        # An event of type etype is never an R of another type: those exclusions hold.
        exclude = frozenset((r, a) for r, a in exclude if r == etype)
        if any(a <= atoms for _, a in exclude):
            return None  # it must be an etype with those atoms and must not be one
    if etype is None and not atoms and len(exclude) == 1:
        ((r, a),) = exclude
        return Guard(r, a, negated=True)  # the plain negated form
    return Guard(etype, atoms, exclude=exclude)


def _moves(a: VCEA) -> dict[int, list[tuple[Guard, frozenset[str], int]]]:
    """Each state's outgoing ``(guard, labels, target)``; the waiting state stays or
    starts the side like its initial states."""
    moves: dict[int, list[tuple[Guard, frozenset[str], int]]] = {
        _WAIT: [(TRUE, frozenset(), _WAIT)]
    }
    for t in a.transitions:
        moves.setdefault(t.source, []).append((t.guard, t.labels, t.target))
        if t.source in a.initial:
            moves[_WAIT].append((t.guard, t.labels, t.target))
    return moves


def conjunction(a: VCEA, b: VCEA, fresh: Callable[[], int], limit: int) -> VCEA:
    """The product VCEA of ``φ1 AND φ2`` from the VCEAs of φ1 (``a``) and φ2 (``b``).

    Only pairs reachable from the start are built; once more than ``limit`` transitions
    are made it stops, and the caller reports the automaton as too large.
    """
    moves_a, moves_b = _moves(a), _moves(b)
    start = fresh()
    ids: dict[tuple[int, int], int] = {}
    todo: list[tuple[int, int]] = []

    def state(pair: tuple[int, int]) -> int:
        if pair not in ids:
            ids[pair] = fresh()
            todo.append(pair)
        return ids[pair]

    transitions: list[VTransition] = []

    def pair_moves(source: int, pair: tuple[int, int], *, starting: bool) -> None:
        for ga, la, ta in moves_a.get(pair[0], []):
            for gb, lb, tb in moves_b.get(pair[1], []):
                if starting and ta == _WAIT and tb == _WAIT:
                    continue  # the first event of the product starts a side
                guard = meet(ga, gb)
                if guard is not None:
                    transitions.append(VTransition(source, guard, la | lb, state((ta, tb))))

    pair_moves(start, (_WAIT, _WAIT), starting=True)
    while todo and len(transitions) <= limit:
        pair = todo.pop()
        pair_moves(ids[pair], pair, starting=False)
    final = {q for (p1, p2), q in ids.items() if p1 in a.final and p2 in b.final}
    return VCEA(transitions, {start}, final)
