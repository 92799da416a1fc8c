"""CEL → VCEA → CEA, by induction on the formula (CORE Appendix A).

Follows the paper's construction with the errata of the research notes:

* ``ψ+`` gets a TRUE/∅ skip self-loop on its fresh state, as ``ψ1 ; ψ2`` has on
  ψ2's initial states; without it iteration would be contiguous, contradicting
  ``φ+ = φ ∪ φ;φ+`` with non-contiguous sequencing.
* ``φ FILTER θ1 OR θ2`` is ``(φ FILTER θ1) OR (φ FILTER θ2)`` and
  ``φ FILTER θ1 AND θ2`` is ``(φ FILTER θ1) FILTER θ2`` (CORE §2.1 shorthands):
  filters are universally quantified over the events bound to a variable, so a
  disjunction of filters cannot be pushed into one transition guard.

The result has linear size in the formula except for filter disjunctions,
which copy the filtered sub-automaton, nested iterations, which copy
transitions into each enclosing ``+``, and conjunctions (``φ1 AND φ2``, a product
of the two sides): ``MAX_TRANSITIONS`` stops a construction (``AutomatonTooLarge``)
before a query text can make it exponential.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from cerfleet import pattern
from cerfleet.cea.automaton import CEA, TRUE, VCEA, Guard, Transition, VTransition
from cerfleet.cea.product import conjunction
from cerfleet.errors import CerfleetError

# Far above what real queries need (tens to hundreds), low enough that building and
# determinising stay cheap.
MAX_TRANSITIONS = 10_000


class AutomatonTooLarge(CerfleetError):
    """A formula whose automaton would exceed ``MAX_TRANSITIONS``."""


def not_label(etype: str) -> str:
    """The label of a ``NOT(R)`` event's transition: marked, and no variable a query can
    name (``!`` is no identifier character)."""
    return f"!{etype}"


class AtomTable:
    """Interns filter predicates so that equal ``P`` share one bit of the bit vector."""

    def __init__(self) -> None:
        self.preds: list[pattern.Pred] = []
        self._index: dict[pattern.Pred, int] = {}

    def intern(self, pred: pattern.Pred) -> int:
        if pred not in self._index:
            self._index[pred] = len(self.preds)
            self.preds.append(pred)
        return self._index[pred]


@dataclass(frozen=True)
class Tagging:
    """What a correlated query's transitions carry for enumeration (``cea.correlation``):
    ``scopes`` maps a sub-formula (by identity) to the tag of the events it binds,
    ``iterations`` a ``+`` (by identity) to the tag of the events starting one of its
    iterations, ``variables`` are the variables whose events are tagged by name."""

    scopes: Mapping[int, frozenset[str]] = field(default_factory=dict)
    iterations: Mapping[int, str] = field(default_factory=dict)
    variables: frozenset[str] = frozenset()


def is_tag(label: str) -> bool:
    """Scope, binding-place and iteration tags start with a character no variable name
    can."""
    return label[:1] in ("@", "#", "^")


class _Builder:
    def __init__(self, atoms: AtomTable, tagging: Tagging | None = None) -> None:
        self.atoms = atoms
        self.tagging = tagging
        self._ids: Iterator[int] = itertools.count(1)  # 0 is reserved for q0

    def fresh(self) -> int:
        return next(self._ids)

    def build(self, phi: pattern.Formula) -> VCEA:
        a = self._build(phi)
        if len(a.transitions) > MAX_TRANSITIONS:
            at = "" if phi.span is None else f" at line {phi.span.line}, column {phi.span.column}"
            raise AutomatonTooLarge(
                f"the query's automaton would have more than {MAX_TRANSITIONS} transitions "
                f"(the formula{at} alone has {len(a.transitions)}): nested iterations and "
                "FILTER disjunctions copy what they apply to, and AND multiplies the sizes "
                "of its two sides"
            )
        return a

    def _build(self, phi: pattern.Formula) -> VCEA:
        a = self._build_node(phi)
        tagging = self.tagging
        if tagging is not None:
            scope = tagging.scopes.get(id(phi))
            if scope is not None:
                a.transitions = [
                    VTransition(t.source, t.guard, t.labels | scope, t.target) if t.labels else t
                    for t in a.transitions
                ]
        return a

    def _build_node(self, phi: pattern.Formula) -> VCEA:
        if isinstance(phi, pattern.EventType):
            q1, q2 = self.fresh(), self.fresh()
            return VCEA([VTransition(q1, Guard(phi.name), frozenset({phi.name}), q2)], {q1}, {q2})
        if isinstance(phi, pattern.As):
            a = self.build(phi.formula)
            a.transitions = [
                VTransition(t.source, t.guard, t.labels | {phi.var}, t.target) if t.labels else t
                for t in a.transitions
            ]
            return a
        if isinstance(phi, pattern.Filter):
            return self._filter(phi.formula, phi.filter)
        if isinstance(phi, pattern.Or):
            return self._union(self.build(phi.left), self.build(phi.right))
        if isinstance(phi, pattern.And):
            left, right = self.build(phi.left), self.build(phi.right)
            return conjunction(left, right, self.fresh, MAX_TRANSITIONS)
        if isinstance(phi, pattern.Seq):
            return self._sequence(self.build(phi.left), self.build(phi.right))
        if isinstance(phi, pattern.Plus):
            return self._plus(self.build(phi.formula), starts=self._starts(phi))
        if isinstance(phi, pattern.NotEvent):
            q1, q2 = self.fresh(), self.fresh()
            guard = self._negated(phi.etype, phi.pred)
            label = frozenset({not_label(phi.etype)})
            return VCEA([VTransition(q1, guard, label, q2)], {q1}, {q2})
        if isinstance(phi, pattern.Absent):
            gap = self._negated(phi.etype, phi.pred)
            return self._sequence(self.build(phi.left), self.build(phi.right), gap=gap)
        if isinstance(phi, pattern.Contiguous):
            return self._sequence(self.build(phi.left), self.build(phi.right), skip=False)
        if isinstance(phi, pattern.ContiguousPlus):
            return self._plus(self.build(phi.formula), skip=False, starts=self._starts(phi))
        if isinstance(phi, pattern.AnyEvent):
            # A type-free guard: filters on ``var`` conjoin their atoms to it as usual.
            q1, q2 = self.fresh(), self.fresh()
            return VCEA([VTransition(q1, TRUE, frozenset({phi.var}), q2)], {q1}, {q2})
        raise TypeError(f"not a CEL formula: {phi!r}")

    def _filter(self, phi: pattern.Formula, theta: pattern.FilterExpr) -> VCEA:
        if isinstance(theta, pattern.FilterOr):
            return self._union(self._filter(phi, theta.left), self._filter(phi, theta.right))
        if isinstance(theta, pattern.FilterAnd):
            return self._filter(pattern.Filter(phi, theta.left), theta.right)
        if isinstance(theta, pattern.Correlation):
            # ``cea.correlation`` takes them out before construction: no guard can hold one.
            raise TypeError("a correlation reached the automaton construction")
        a = self.build(phi)
        atom = self.atoms.intern(theta.pred)
        a.transitions = [
            VTransition(t.source, t.guard.conjoin(atom), t.labels, t.target)
            if theta.var in t.labels
            else t
            for t in a.transitions
        ]
        return a

    @staticmethod
    def _union(a: VCEA, b: VCEA) -> VCEA:
        return VCEA(a.transitions + b.transitions, a.initial | b.initial, a.final | b.final)

    def _negated(self, etype: str, pred: pattern.Pred | None) -> Guard:
        atoms = frozenset() if pred is None else frozenset({self.atoms.intern(pred)})
        return Guard(etype, atoms, negated=True)

    @staticmethod
    def _sequence(a: VCEA, b: VCEA, *, skip: bool = True, gap: Guard = TRUE) -> VCEA:
        transitions = a.transitions + b.transitions
        # Skip irrelevant events between ψ1 and ψ2 (non-contiguous sequencing). Without
        # the loop (``:``) a run waiting for ψ2 dies on any event ψ2 cannot start with;
        # with a negated ``gap`` (``; !R ;``) it dies on the excluded events only.
        if skip:
            transitions += [VTransition(p, gap, frozenset(), p) for p in sorted(b.initial)]
        # Runs that would complete ψ1 continue in ψ2's initial states instead.
        transitions += [
            VTransition(t.source, t.guard, t.labels, q)
            for t in a.transitions
            if t.target in a.final
            for q in sorted(b.initial)
        ]
        return VCEA(transitions, set(a.initial), set(b.final))

    def _starts(self, phi: pattern.Formula) -> str | None:
        return None if self.tagging is None else self.tagging.iterations.get(id(phi))

    def _plus(self, a: VCEA, *, skip: bool = True, starts: str | None = None) -> VCEA:
        if starts is not None:
            # Tag the body's first events before they are copied onto the iteration state.
            a.transitions = [
                VTransition(t.source, t.guard, t.labels | {starts}, t.target)
                if t.labels and t.source in a.initial
                else t
                for t in a.transitions
            ]
        q = self.fresh()
        # Runs that would complete ψ may instead wait in q for the next iteration.
        transitions = a.transitions + [
            VTransition(t.source, t.guard, t.labels, q)
            for t in a.transitions
            if t.target in a.final
        ]
        # q starts the next iteration like ψ's initial states do. The copies are taken
        # over the transitions into q too: a one-event ψ (e.g. B+) must be able to go
        # q → q, which copying only Δψ (as printed) would miss.
        transitions += [
            VTransition(q, t.guard, t.labels, t.target)
            for t in transitions
            if t.source in a.initial
        ]
        # Erratum: the printed construction lacks this loop, making iteration contiguous,
        # which is exactly what ``:+`` wants.
        if skip:
            transitions.append(VTransition(q, TRUE, frozenset(), q))
        return VCEA(transitions, set(a.initial), set(a.final))


def _marking(labels: frozenset[str], keep: frozenset[str] | None) -> bool:
    """``π_L``: the event is a position of the complex event when a kept variable binds it
    (None keeps every variable: ``SELECT *``); tags are no variables."""
    if keep is None:
        return any(not is_tag(label) for label in labels)
    return not labels.isdisjoint(keep)


def _to_cea(
    a: VCEA, atoms: int, keep: frozenset[str] | None, tagging: Tagging | None = None
) -> CEA:
    """Single fresh initial state ``q0 = 0`` copying I's outgoing transitions, labels to
    marks (and tags), then keep only states that are reachable from q0 and can reach F."""
    q0 = 0
    tracked = frozenset() if tagging is None else tagging.variables
    raw = [
        Transition(
            t.source,
            t.guard,
            _marking(t.labels, keep),
            t.target,
            frozenset(x for x in t.labels if is_tag(x) or x in tracked),
        )
        for t in a.transitions
    ]
    raw += [
        Transition(q0, t.guard, t.marking, t.target, t.tags) for t in raw if t.source in a.initial
    ]
    reachable = _closure({q0}, {(t.source, t.target) for t in raw})
    productive = _closure(set(a.final), {(t.target, t.source) for t in raw})
    useful = reachable & productive
    kept = tuple(dict.fromkeys(t for t in raw if t.source in useful and t.target in useful))
    return CEA(
        states=frozenset(useful | {q0}),
        transitions=kept,
        initial=q0,
        final=frozenset(a.final & useful),
        atoms=atoms,
    )


def _closure(start: set[int], edges: set[tuple[int, int]]) -> set[int]:
    succ: dict[int, list[int]] = {}
    for p, q in edges:
        succ.setdefault(p, []).append(q)
    seen = set(start)
    todo = list(start)
    while todo:
        for q in succ.get(todo.pop(), ()):
            if q not in seen:
                seen.add(q)
                todo.append(q)
    return seen


def compile_formula(
    phi: pattern.Formula,
    select: tuple[str, ...] | None = None,
    atoms: AtomTable | None = None,
    tagging: Tagging | None = None,
) -> tuple[CEA, AtomTable]:
    """Compile ``π_select(φ)`` into a CEA; returns it with the table of its filter atoms.
    ``tagging``: the tags a correlated query's enumeration reads (``Tagging``)."""
    table = atoms if atoms is not None else AtomTable()
    builder = _Builder(table, tagging)
    vcea = builder.build(phi)
    keep = None if select is None else frozenset(select)
    return _to_cea(vcea, len(table.preds), keep, tagging), table
