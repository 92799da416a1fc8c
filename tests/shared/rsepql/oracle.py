"""A brute-force evaluator of RSEP-QL's definitions (seed 003), written from the paper
and the research notes, independently of the compiler: window functions
(Definition 3: W^τ, W^λ, W^id, W^⊔ and nesting), the basic event pattern (Eq. (4)),
unrestricted SEQ (Eq. (7), with its nested interval window) and MATCH (Eq. (8)),
evaluated at every instant of the streamset (the content-change report policy).

Times are integer seconds; a RANGE window slides by one second (β = 1). Terms are
IRI strings or ints. A result is a row (projected mapping) with the end ``t2`` of its
event mapping; the set of rows over all evaluation times is what a push-based engine
reports.
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


@dataclass(frozen=True)
class Bep:
    window: str
    triples: tuple[Triple, ...]  # variables are strings starting with "?"


# An event pattern: a BEP name, or ("SEQ", left, right).
Expr = str | tuple[str, "Expr", "Expr"]


@dataclass
class Query:
    windows: dict[str, Win]
    events: dict[str, Bep]
    expr: Expr
    select: list[str] = field(default_factory=list)


def window_function(w: Win) -> Window:
    """Definition 3 (the stream is in time order)."""
    if w.kind == "range":
        alpha, beta = w.param, 1

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


def evaluate_at(
    q: Query,
    expr: Expr,
    streams: dict[str, list[Item]],
    active: Window,
    t: int,
    sub: dict[str, Term],
) -> set[tuple[Mapping, int, int]]:
    """⟦expr⟧^t_W with the bindings ``sub`` substituted (μ2(E1) of Eq. (7))."""
    if isinstance(expr, str):
        bep = q.events[expr]
        w = q.windows[bep.window]
        items = nest(active, window_function(w))(streams.get(w.stream, []), t)
        out = set()
        for graph, tk, _ in items:
            for m in _match(bep.triples, graph, sub):
                # μ(P) for the variables of P (those substituted keep μ2's values).
                own = {k: v for k, v in m.items() if _mentions(q, expr, k)}
                out.add((_freeze(own), tk, tk))
        return out
    _, left, right = expr
    out = set()
    for mu2, t3, t4 in evaluate_at(q, right, streams, active, t, sub):
        bound = {**sub, **dict(mu2)}
        earlier = nest(interval(0, t3 - 1), active)
        for mu1, t1, _t2 in evaluate_at(q, left, streams, earlier, t, bound):
            union = {**dict(mu2), **dict(mu1)}
            out.add((_freeze(union), t1, t4))
    return out


def _mentions(q: Query, name: str, var: str) -> bool:
    return any(var in triple for triple in q.events[name].triples)


def evaluate(q: Query, streams: dict[str, list[tuple[int, Graph]]]) -> set[tuple[int, Mapping]]:
    """The rows reported over all evaluation times: (end of the event mapping,
    projected mapping), MATCH evaluated with the identity window at each instant."""
    named = {s: [(g, t, s) for t, g in items] for s, items in streams.items()}
    times = sorted({t for items in streams.values() for t, _ in items})
    identity = window_function(Win("", "identity"))
    rows = set()
    for t in times:
        # Only the items arrived by t exist at t (push-based: the stream so far).
        so_far = {s: [it for it in items if it[1] <= t] for s, items in named.items()}
        for mu, _t1, t2 in evaluate_at(q, q.expr, so_far, identity, t, {}):
            full = dict(mu)
            rows.add((t2, tuple((v, full.get("?" + v)) for v in q.select)))
    return rows
