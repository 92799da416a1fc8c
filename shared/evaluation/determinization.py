"""On-the-fly I/O-determinisation of a CEA (CORE §4.4, Foundations Prop. 1).

Deterministic states are subsets of the CEA's states, interned as small ints;
``δ(S, v)`` for a bit vector ``v`` yields the •-successor and the ∘-successor
(each -1 when empty), computed in time linear in |A| on a cache miss and then
looked up by ``(S, v)`` in O(1). I/O-determinism is what makes the tECS
duplicate-free: a complex event has exactly one run in the determinised automaton.

The bit vector of an event packs its event type (an index among the query's
types, or "other") with the truth values of the filter atoms that can matter
for that type, so that only those atoms are evaluated.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cerfleet.cea.automaton import CEA
from cerfleet.cea.predicates import Predicate

NONE = -1  # no successor

# (type index or -1, atom mask, negated, marking, target, exclusions): one transition.
_Entry = tuple[int, int, bool, bool, int, tuple[tuple[int, int], ...], frozenset[str]]


class DetCEA:
    """The I/O-determinised CEA, built lazily and cached.

    Paper names: ``δ(S, t, •)`` / ``δ(S, t, ∘)`` are ``step(S, letter)``;
    ``F_d = {S | S ∩ F ≠ ∅}`` is ``is_final``.
    """

    def __init__(self, cea: CEA, predicates: Sequence[Predicate], type_field: str) -> None:
        self.cea = cea
        self.type_field = type_field
        types = sorted(cea.event_types())
        self.type_index: dict[str, int] = {t: i for i, t in enumerate(types)}
        self._other = len(types)
        self._radix = len(types) + 1
        # Atoms that can matter for an event of each type: those on its transitions.
        relevant: list[list[int]] = [[] for _ in range(self._radix)]
        for t in cea.transitions:
            # A type-free guard with atoms (``pattern.AnyEvent``) reads them for every type.
            etype = t.guard.etype
            for ti in range(self._radix) if etype is None else [self.type_index[etype]]:
                bucket = relevant[ti]
                bucket.extend(a for a in sorted(t.guard.atoms) if a not in bucket)
            for r, atoms in t.guard.exclude:
                bucket = relevant[self.type_index[r]]
                bucket.extend(a for a in sorted(atoms) if a not in bucket)
        self.atoms_by_type: list[list[int]] = relevant
        self._atoms_by_type: list[tuple[Predicate, ...]] = [
            tuple(predicates[a] for a in atoms) for atoms in relevant
        ]
        local = [{a: i for i, a in enumerate(atoms)} for atoms in relevant]
        # Per CEA state: (type index or -1 for TRUE, required atom mask, negated, marking,
        # target, excluded (type index, atom mask) pairs, tags).
        self._out: dict[int, list[_Entry]] = {q: [] for q in cea.states}
        for t in cea.transitions:
            guard = t.guard
            exclude = tuple(
                (self.type_index[r], sum(1 << local[self.type_index[r]][a] for a in atoms))
                for r, atoms in sorted(guard.exclude, key=repr)
            )
            if guard.etype is None and guard.atoms:
                # Type-free with atoms (``pattern.AnyEvent``): one entry per type, each
                # reading the atoms as that type's letters hold them.
                assert not guard.negated, "no front-end negates a type-free guard"
                for ti in range(self._radix):
                    mask = sum(1 << local[ti][a] for a in guard.atoms)
                    entry = (ti, mask, False, t.marking, t.target, exclude, t.tags)
                    self._out[t.source].append(entry)
                continue
            if guard.etype is None:
                entry = (-1, 0, guard.negated, t.marking, t.target, exclude, t.tags)
            else:
                ti = self.type_index[guard.etype]
                mask = sum(1 << local[ti][a] for a in guard.atoms)
                entry = (ti, mask, guard.negated, t.marking, t.target, exclude, t.tags)
            self._out[t.source].append(entry)
        # Whether outputs carry tags (a correlated query): see ``step_tagged``.
        self.tagged = any(t.tags for t in cea.transitions)
        self.states: list[frozenset[int]] = []
        self.is_final: list[bool] = []
        self._ids: dict[frozenset[int], int] = {}
        self._delta: list[dict[int, tuple[int, int]]] = []
        self._tagged: list[dict[int, TaggedStep]] = []
        self.initial = self.intern(frozenset({cea.initial}))

    def intern(self, subset: frozenset[int]) -> int:
        """The id of a deterministic state (a subset of the CEA's states)."""
        sid = self._ids.get(subset)
        if sid is None:
            sid = len(self.states)
            self._ids[subset] = sid
            self.states.append(subset)
            self.is_final.append(not subset.isdisjoint(self.cea.final))
            self._delta.append({})
            self._tagged.append({})
        return sid

    def letter(self, event: Mapping[str, Any]) -> int:
        """The event's bit vector: its type index plus the truth of its relevant atoms."""
        ti = self.type_index.get(event.get(self.type_field), self._other)  # type: ignore[arg-type]
        bits = 0
        for k, pred in enumerate(self._atoms_by_type[ti]):
            if pred(event):
                bits |= 1 << k
        return ti + bits * self._radix

    @property
    def radix(self) -> int:
        """Letters are ``type index + radix * atom bits``."""
        return self._radix

    def step(self, sid: int, letter: int) -> tuple[int, int]:
        """``(δ(S, v, •), δ(S, v, ∘))``, each NONE when no transition applies."""
        cached = self._delta[sid].get(letter)
        if cached is None:
            cached = self._compute(sid, letter)
            self._delta[sid][letter] = cached
        return cached

    def _compute(self, sid: int, letter: int) -> tuple[int, int]:
        bits, ti = divmod(letter, self._radix)
        marked: set[int] = set()
        unmarked: set[int] = set()
        for q in self.states[sid]:
            for etype, mask, negated, marking, target, exclude, _tags in self._out[q]:
                if ((etype == -1 or etype == ti) and bits & mask == mask) == negated:
                    continue
                if any(xt == ti and bits & xm == xm for xt, xm in exclude):
                    continue  # the event is one the guard excludes (``φ1 AND φ2``)
                (marked if marking else unmarked).add(target)
        return (
            self.intern(frozenset(marked)) if marked else NONE,
            self.intern(frozenset(unmarked)) if unmarked else NONE,
        )

    def step_tagged(self, sid: int, letter: int) -> TaggedStep:
        """``δ(S, v, (m, tags))`` for every mark and tag set some transition reads: the
        I/O-determinisation of a correlated query's CEA, whose outputs are (mark, tags)
        (``cea.correlation``); ``(target, marking, tags)`` triples, the untagged ∘
        one (if any) last."""
        cached = self._tagged[sid].get(letter)
        if cached is None:
            bits, ti = divmod(letter, self._radix)
            groups: dict[tuple[bool, frozenset[str]], set[int]] = {}
            for q in self.states[sid]:
                for etype, mask, negated, marking, target, exclude, tags in self._out[q]:
                    if ((etype == -1 or etype == ti) and bits & mask == mask) == negated:
                        continue
                    if any(xt == ti and bits & xm == xm for xt, xm in exclude):
                        continue
                    groups.setdefault((marking, tags), set()).add(target)
            cached = tuple(
                (self.intern(frozenset(targets)), marking, tags)
                # The plain ∘ group last: Algorithm 1 hands it the state's list itself.
                for (marking, tags), targets in sorted(
                    groups.items(), key=lambda g: (not g[0][0] and not g[0][1], sorted(g[0][1]))
                )
            )
            self._tagged[sid][letter] = cached
        return cached


TaggedStep = tuple[tuple[int, bool, frozenset[str]], ...]
