"""A brute-force evaluator of SPAseq (seed 004, Definitions 7–16, with the choices the
README states), written from the definitions and sharing no code with the compiler.

Streams are ``{name: [(time, frozenset of (s, p, o))]}``; IRIs are strings, literals
ints. A query is the plain data below. ``evaluate`` computes the sets of
``(time, mappings)`` pairs of the definitions, window by window, and returns the rows.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

Triple = tuple[str | int, str | int, str | int]
Stream = list[tuple[int, frozenset[Triple]]]
Mapping_ = dict[str, str | int]


@dataclass(frozen=True)
class Gpm:
    name: str
    stream: str
    triples: tuple[tuple[str | int, str | int, str | int], ...]  # "?x" is a variable
    local: tuple[tuple[str, str, int], ...] = ()  # ?var op constant
    stateful: tuple[tuple[str, str, str], ...] = ()  # ?var op ?earlier
    optional: tuple[tuple[Triple, ...], ...] = ()  # OPTIONAL { ... } groups, in order
    absent: tuple[tuple[Triple, ...], ...] = ()  # FILTER NOT EXISTS { ... } groups

    def variables(self) -> set[str]:
        return {t for tr in self.triples for t in tr if isinstance(t, str) and t[0] == "?"}

    def optional_variables(self) -> set[str]:
        return {
            t for g in self.optional for tr in g for t in tr if isinstance(t, str) and t[0] == "?"
        }


@dataclass(frozen=True)
class Bop:
    """A GPM name, or ("&"|"|", left, right)."""

    op: str  # "ref", "&", "|"
    name: str = ""
    left: Bop | None = None
    right: Bop | None = None


@dataclass
class Query:
    gpms: dict[str, Gpm]
    elements: list[tuple[Bop, bool]]  # (bop, kleene)
    ops: list[str]
    select: list[str]
    window: int | None = None  # seconds
    streams: list[str] = field(default_factory=list)


def _holds(a: object, op: str, b: object) -> bool:
    if not (isinstance(a, int) and isinstance(b, int)):
        return False
    return a > b if op == ">" else a < b


def _bgp(triples: tuple[Triple, ...], graph: frozenset[Triple]) -> list[Mapping_]:
    out: list[Mapping_] = []
    for choice in itertools.product(sorted(graph, key=repr), repeat=len(triples)):
        mu: Mapping_ = {}
        ok = True
        for pat, fact in zip(triples, choice, strict=True):
            for term, value in zip(pat, fact, strict=True):
                if isinstance(term, str) and term.startswith("?"):
                    if term in mu and mu[term] != value:
                        ok = False
                    mu[term] = value
                elif term != value or type(term) is not type(value):
                    ok = False
        if ok and mu not in out:
            out.append(mu)
    return out


def _compatible(a: Mapping_, b: Mapping_) -> bool:
    return all(b[k] == v and type(b[k]) is type(v) for k, v in a.items() if k in b)


class _Eval:
    def __init__(self, query: Query, streams: dict[str, Stream], lo: int, hi: int | None) -> None:
        self.q = query
        self.events = {
            u: [(t, g) for t, g in streams.get(u, []) if lo <= t and (hi is None or t <= hi)]
            for u in query.streams
        }
        self.times = sorted({t for evs in self.events.values() for t, _ in evs})

    def gpm(self, g: Gpm) -> list[tuple[int, list[tuple[Mapping_, Gpm]]]]:
        """Def. 7: (τ, ⟦P⟧_G) per event with a solution (local FILTERs applied)."""
        out = []
        for t, graph in self.events[g.stream]:
            found = _bgp(g.triples, graph)
            for group in g.optional:  # Def. 5's left outer join with ⟦group⟧_G
                right = _bgp(group, graph)
                joined = [{**x, **y} for x in found for y in right if _compatible(x, y)]
                alone = [x for x in found if not any(_compatible(x, y) for y in right)]
                found = joined + [x for x in alone if x not in joined]
            for group in g.absent:  # no solution of the group compatible with μ
                right = _bgp(group, graph)
                found = [x for x in found if not any(_compatible(x, y) for y in right)]
            sols = [m for m in found if all(_holds(m.get(v), op, c) for v, op, c in g.local)]
            if sols:
                out.append((t, [(m, g) for m in sols]))
        return out

    def bop(self, b: Bop) -> list[tuple[int, list[tuple[Mapping_, tuple[Gpm, ...]]]]]:
        if b.op == "ref":
            return [(t, [(m, (g,)) for m, g in sols]) for t, sols in self.gpm(self.q.gpms[b.name])]
        assert b.left is not None and b.right is not None
        left, right = self.bop(b.left), self.bop(b.right)
        if b.op == "|":  # Def. 9
            return left + right
        out = []
        for (t1, xs), (t2, ys) in itertools.product(left, right):  # Def. 8
            if t1 == t2:
                joined = [
                    ({**x, **y}, gx + gy) for x, gx in xs for y, gy in ys if _compatible(x, y)
                ]
                if joined:
                    out.append((t1, joined))
        return out

    @staticmethod
    def join(xs: list[Mapping_], ys: list[tuple[Mapping_, tuple[Gpm, ...]]]) -> list[Mapping_]:
        """X ⋈ Y, stateful FILTERs read on the joined mapping."""
        out = []
        for x in xs:
            for y, gs in ys:
                if _compatible(x, y):
                    m = {**x, **y}
                    holds = all(
                        _holds(m.get(v), op, m.get(w)) for g in gs for v, op, w in g.stateful
                    )
                    if holds and m not in out:
                        out.append(m)
        return out

    def between(self, a: int, b: int) -> bool:
        return any(a < t < b for t in self.times)

    def step(self, op: str, t0: int, xs: list[Mapping_], psi: list, t: int) -> bool:
        """The side condition of Defs. 10–12 for (t0, X) then Ψ at t."""
        if t <= t0:
            return False
        if op == ",":
            return not self.between(t0, t)
        if op == ";":
            return not any(t0 < t2 < t and self.join(xs, zs) for t2, zs in psi)
        return True

    def run(self) -> set[tuple[int, tuple[tuple[str, object], ...]]]:
        pairs: list[tuple[int, list[Mapping_]]] = [(-(10**9), [{}])]
        for i, (b, kleene) in enumerate(self.q.elements):
            psi = self.bop(b)
            op = self.q.ops[i - 1] if i else ":"
            new: list[tuple[int, list[Mapping_]]] = []
            for t0, xs in pairs:
                if not kleene:
                    for t, ys in psi:
                        if (i == 0 or self.step(op, t0, xs, psi, t)) and (z := self.join(xs, ys)):
                            new.append((t, z))
                    continue
                # Kleene+: chains t1 < ... < tk, the first after (t0, X) by op, then
                # ; between iterations when it leads (Def. 13), else , (Def. 14).
                inner = ";" if i == 0 else ","
                chains = [[(t, ys)] for t, ys in psi if i == 0 or self.step(op, t0, xs, psi, t)]
                while chains:
                    grown = []
                    for chain in chains:
                        kept = [
                            m
                            for x in xs
                            if all(self.join([x], ys) for _, ys in chain[:-1])
                            for m in self.join([x], chain[-1][1])
                        ]
                        if kept:
                            new.append((chain[-1][0], kept))
                        tk = chain[-1][0]
                        for t, ys in psi:
                            if self.step(inner, tk, xs if i else [{}], psi, t):
                                grown.append([*chain, (t, ys)])
                    chains = grown
            pairs = new
        rows = set()
        for t, ms in pairs:
            for m in ms:
                rows.add((t, tuple((v, m.get("?" + v)) for v in self.q.select)))
        return rows


def evaluate(
    query: Query, streams: dict[str, Stream]
) -> set[tuple[int, tuple[tuple[str, object], ...]]]:
    """Def. 16: the union over tumbling windows [kω, (k+1)ω] (from time 0, closed)."""
    if query.window is None:
        return _Eval(query, streams, -(10**9), None).run()
    times = [t for evs in streams.values() for t, _ in evs]
    if not times:
        return set()
    out = set()
    w = query.window
    for k in range(min(times) // w - 1, max(times) // w + 1):
        out |= _Eval(query, streams, k * w, (k + 1) * w).run()
    return out
