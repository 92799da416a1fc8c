"""A brute-force evaluator of RSEP-QL's definitions (seed 003), written from the paper
and the research notes, independently of the compiler: window functions
(Definition 3: W^τ with its step β, W^λ, W^id, W^⊔ and nesting), the basic event
pattern (Eq. (4)), FIRST and LAST (Eqs. (5), (6)), unrestricted SEQ (Eq. (7), with
its nested interval window), SEQ^n, SEQ^c, SEQ^r (Eqs. (9)–(11), with the notes'
errata: ∄ in the last conjunct, each competing E2 judged on the items before its own
start as the prose says), MATCH (Eq. (8)), and the consumption policy P^c = P^r
(Definitions 8–10 and Appendix A: the input of evaluation i is the previous input
and the delta minus the justifications of evaluation i−1's results, recomputed here
from the equations' conditions).

Choices the paper leaves open, made as the README states them: ≺ compares ends, then
starts; the evaluation times are every instant (content change) or, when a window has
a STEP, the multiples of each STEP from the first instant up to the first at or after
the last (window close); a triple is consumed as an occurrence (stream, time, triple).

Times are integer seconds; a RANGE window without STEP slides by one second. Terms
are IRI strings or ints. A result is a row (projected mapping) with the end ``t2`` of
its event mapping.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

Term = str | int
Triple = tuple[Term, Term, Term]
Graph = frozenset[Triple]
Item = tuple[Graph, int, str]  # (graph, time, stream)
Mapping = tuple[tuple[str, Term], ...]  # sorted (variable, value) pairs
Window = Callable[[list[Item], int], list[Item]]


@dataclass(frozen=True)
class Win:
    stream: str
    kind: str  # "range" | "landmark" | "identity"
    param: int = 0
    step: int | None = None  # β of a RANGE (None: the time unit, no STEP clause)


@dataclass(frozen=True)
class Bep:
    window: str
    triples: tuple[Triple, ...]  # variables are strings starting with "?"


# An event pattern: a BEP name, (op, left, right) with op "SEQ", "SEQ^c", "SEQ^r" or
# "SEQ^n", or ("FIRST" | "LAST", operand).
Expr = str | tuple[str, "Expr", "Expr"] | tuple[str, "Expr"]


@dataclass
class Query:
    windows: dict[str, Win]
    events: dict[str, Bep]
    expr: Expr
    select: list[str] = field(default_factory=list)
    consuming: bool = False


def window_function(w: Win) -> Window:
    """Definition 3 (the stream is in time order)."""
    if w.kind == "range":
        alpha, beta = w.param, w.step or 1

        def sliding(items: list[Item], t: int) -> list[Item]:
            t_prime = (t // beta) * beta
            return [it for it in items if t_prime - alpha < it[1] <= t_prime]

        return sliding
    if w.kind == "landmark":
        t0 = w.param
        return lambda items, t: [it for it in items if t0 <= it[1] <= t]
    return lambda items, t: list(items)  # W^id(S, t) = S


def interval(lo: int, hi: int) -> Window:
    """W^⊔[(lo, hi)]: the items in the closed interval."""
    return lambda items, t: [it for it in items if lo <= it[1] <= hi]


def nest(outer: Window, inner: Window) -> Window:
    """``outer • inner``: W1 • W2(S, t) = W1(W2(S, t), t)."""
    return lambda items, t: outer(inner(items, t), t)


def _match(triples: tuple[Triple, ...], graph: Graph, mu: dict[str, Term]) -> list[dict[str, Term]]:
    """⟦P⟧_G extending ``mu``: every assignment of the variables with μ(P) ⊆ G."""
    out = [dict(mu)]
    for pattern in triples:
        nxt = []
        for m in out:
            for triple in graph:
                ext = dict(m)
                ok = True
                for p, v in zip(pattern, triple, strict=True):
                    if isinstance(p, str) and p.startswith("?"):
                        if p in ext and (type(ext[p]) is not type(v) or ext[p] != v):
                            ok = False
                            break
                        ext[p] = v
                    elif type(p) is not type(v) or p != v:
                        ok = False
                        break
                if ok:
                    nxt.append(ext)
        out = nxt
    return out


def _freeze(m: dict[str, Term]) -> Mapping:
    return tuple(sorted(m.items()))


Occurrence = tuple[str, int, Triple]  # (stream, time, triple): a consumable input
Event = tuple[Mapping, int, int]  # (μ, t1, t2)


def _prec(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """(t1, t2) ≺ (t3, t4): ends earlier, or ends together and starts earlier."""
    return a[1] < b[1] or (a[1] == b[1] and a[0] < b[0])


def _first(events: set[Event]) -> set[Event]:
    """Eq. (5)."""
    return {e for e in events if not any(_prec((o[1], o[2]), (e[1], e[2])) for o in events)}


def _last(events: set[Event]) -> set[Event]:
    """Eq. (6)."""
    return {e for e in events if not any(_prec((e[1], e[2]), (o[1], o[2])) for o in events)}


def _function(a: dict[str, Term], b: dict[str, Term]) -> bool:
    """μ1 ∪ μ2 is a mapping: they agree on shared variables."""
    return all(k not in b or (type(b[k]) is type(v) and b[k] == v) for k, v in a.items())


@dataclass
class _Eval:
    """⟦·⟧ at one evaluation time ``t`` over the streams arrived by then, with the
    input ``consumed`` so far removed (the policy-aware BEP of Section 4.4)."""

    q: Query
    streams: dict[str, list[Item]]
    t: int
    consumed: set[Occurrence]

    def items(self, name: str, active: Window) -> list[Item]:
        w = self.q.windows[self.q.events[name].window]
        return nest(active, window_function(w))(self.streams.get(w.stream, []), self.t)

    def at(self, expr: Expr, active: Window, sub: dict[str, Term]) -> set[Event]:
        """⟦expr⟧^t_W with the bindings ``sub`` substituted."""
        if isinstance(expr, str):
            out = set()
            for graph, tk, stream in self.items(expr, active):
                graph = frozenset(tr for tr in graph if (stream, tk, tr) not in self.consumed)
                for m in _match(self.q.events[expr].triples, graph, sub):
                    own = {k: v for k, v in m.items() if _mentions(self.q, expr, k)}
                    out.add((_freeze(own), tk, tk))
            return out
        if expr[0] in ("FIRST", "LAST"):
            inner = self.at(expr[1], active, sub)
            return _first(inner) if expr[0] == "FIRST" else _last(inner)
        return {
            (_freeze({**dict(e2[0]), **dict(e1[0])}), e1[1], e2[2])
            for e1, e2, _ in self.pairs(expr, active, sub)
        }

    def pairs(
        self, expr: Expr, active: Window, sub: dict[str, Term]
    ) -> list[tuple[Event, Event, Window]]:
        """The (E1 mapping, E2 mapping, E1's window) each SEQ kind combines."""
        op, left, right = expr  # type: ignore[misc]
        if op == "SEQ^n":  # Eq. (9)
            lefts = _last(self.at(left, active, sub))
            rights = _last(self.at(right, active, sub))
            return [
                (e1, e2, active)
                for e1 in lefts
                for e2 in rights
                if _prec((e1[1], e1[2]), (e2[1], e2[2])) and _function(dict(e1[0]), dict(e2[0]))
            ]

        def before(e2: Event) -> Window:
            return nest(interval(0, e2[1] - 1), active)  # W* of Eq. (7)

        def e1s(e2: Event) -> set[Event]:
            return self.at(left, before(e2), {**sub, **dict(e2[0])})

        rights = self.at(right, active, sub)
        if op == "SEQ":  # Eq. (7)
            return [(e1, e2, before(e2)) for e2 in rights for e1 in e1s(e2)]
        matched = {e2 for e2 in rights if e1s(e2)}
        out = []
        for e2 in matched:
            if op == "SEQ^c":  # Eq. (10): no E2 with a compatible E1 is ≺-earlier
                beaten = any(_prec((o[1], o[2]), (e2[1], e2[2])) for o in matched)
                chosen = _first(e1s(e2))
            else:  # Eq. (11)
                beaten = any(_prec((e2[1], e2[2]), (o[1], o[2])) for o in matched)
                chosen = _last(e1s(e2))
            if not beaten:
                out += [(e1, e2, before(e2)) for e1 in chosen]
        return out

    def just(self, e: Event, expr: Expr, active: Window, sub: dict[str, Term]) -> set[Occurrence]:
        """Appendix A's justification of ``e`` ∈ ⟦expr⟧: the input it matched."""
        mu, t1, t2 = e
        if isinstance(expr, str):
            out = set()
            full = {**sub, **dict(mu)}
            for _graph, tk, stream in self.items(expr, active):
                if tk == t1:
                    for triple in self.q.events[expr].triples:
                        bound = tuple(full[x] if _is_var(x) else x for x in triple)
                        out.add((stream, tk, bound))
            return out
        if expr[0] in ("FIRST", "LAST"):
            return self.just(e, expr[1], active, sub)
        out = set()
        for e1, e2, star in self.pairs(expr, active, sub):
            if (e1[1], e2[2]) == (t1, t2) and _freeze({**dict(e2[0]), **dict(e1[0])}) == mu:
                out |= self.just(e1, expr[1], star, {**sub, **dict(e2[0])})
                out |= self.just(e2, expr[2], active, sub)
        return out


def _is_var(x: Term) -> bool:
    return isinstance(x, str) and x.startswith("?")


def _mentions(q: Query, name: str, var: str) -> bool:
    return any(var in triple for triple in q.events[name].triples)


def evaluation_times(q: Query, times: list[int]) -> list[int]:
    """ET: every instant, or the closes of the STEP windows (see the module's text)."""
    steps = [w.step for w in q.windows.values() if w.step is not None]
    if not steps:
        return times
    out: set[int] = set()
    for beta in steps:
        k = -(-times[0] // beta)
        while (k - 1) * beta < times[-1]:
            out.add(k * beta)
            k += 1
    return sorted(out)


def evaluations(
    q: Query, streams: dict[str, list[tuple[int, Graph]]]
) -> set[tuple[int, int, Mapping]]:
    """The rows reported: (evaluation time, end of the event mapping, projected
    mapping), each at the first evaluation that has it; MATCH evaluated with the
    identity window at each evaluation time, consuming when ``q.consuming``."""
    named = {s: [(g, t, s) for t, g in items] for s, items in streams.items()}
    times = sorted({t for items in streams.values() for t, _ in items})
    identity = window_function(Win("", "identity"))
    rows: dict[tuple[int, Mapping], int] = {}
    consumed: set[Occurrence] = set()
    for t in evaluation_times(q, times) if times else []:
        # Only the items arrived by t exist at t (push-based: the stream so far).
        so_far = {s: [it for it in items if it[1] <= t] for s, items in named.items()}
        ev = _Eval(q, so_far, t, consumed)
        results = ev.at(q.expr, identity, {})
        for mu, _t1, t2 in results:
            full = dict(mu)
            rows.setdefault((t2, tuple((v, full.get("?" + v)) for v in q.select)), t)
        if q.consuming:
            # P^c: I_{i+1} = (I_i ∪ Δ_{i+1}) \ just(MATCH E, I_i, t_i).
            consumed = consumed | set().union(*(ev.just(e, q.expr, identity, {}) for e in results))
    return {(t, t2, row) for (t2, row), t in rows.items()}


def evaluate(q: Query, streams: dict[str, list[tuple[int, Graph]]]) -> set[tuple[int, Mapping]]:
    """The rows reported over all evaluation times: (end of the event mapping,
    projected mapping)."""
    return {(t2, row) for _, t2, row in evaluations(q, streams)}
