"""RSEP-QL end to end (text → parser → pattern form → automaton → output stage)
against the brute-force evaluator of the definitions (``oracle``), on random small
graph streams, windows and SEQ expressions."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cerfleet.cli.rdf_run import rsepql_results
from cerfleet.rdf.trig import read_trig
from tests.shared.rsepql.oracle import Bep, Expr, Graph, Query, Win, evaluate

E = "http://e/"
SUBJECTS = [E + "a", E + "b"]
PREDICATES = [E + "p", E + "q"]
OBJECTS: list[str | int] = [E + "a", E + "b", 1, 2]
STREAMS = ["S1", "S2"]
Stream = list[tuple[int, Graph]]


@st.composite
def graphs(draw: st.DrawFn) -> Graph:
    n = draw(st.integers(2, 5))
    return frozenset(
        (
            draw(st.sampled_from(SUBJECTS)),
            draw(st.sampled_from(PREDICATES)),
            draw(st.sampled_from(OBJECTS)),
        )
        for _ in range(n)
    )


@st.composite
def streams(draw: st.DrawFn) -> dict[str, Stream]:
    out = {}
    for name in STREAMS:
        times = sorted(draw(st.sets(st.integers(0, 9), min_size=2, max_size=7)))
        out[name] = [(t, draw(graphs())) for t in times]
    return out


@st.composite
def windows(draw: st.DrawFn) -> Win:
    stream = draw(st.sampled_from(STREAMS))
    kind = draw(st.sampled_from(["range", "range", "landmark", "identity"]))
    param = draw(st.integers(1, 8)) if kind == "range" else draw(st.integers(0, 5))
    return Win(stream, kind, param if kind != "identity" else 0)


@st.composite
def beps(draw: st.DrawFn, windows: list[str]) -> Bep:
    triples = []
    for _ in range(draw(st.sampled_from([1, 1, 1, 2]))):
        s = draw(st.sampled_from(["?x", "?x", "?y", "?y", SUBJECTS[0]]))
        p = draw(st.sampled_from(PREDICATES))
        o = draw(st.sampled_from(["?z", "?y", "?o", "?o", 1, E + "b"]))
        triples.append((s, p, o))
    return Bep(draw(st.sampled_from(windows)), tuple(triples))


def _nest(draw: st.DrawFn, names: list[str]) -> Expr:
    if len(names) == 1:
        return names[0]
    cut = draw(st.integers(1, len(names) - 1))
    return ("SEQ", _nest(draw, names[:cut]), _nest(draw, names[cut:]))


@st.composite
def queries(draw: st.DrawFn) -> Query:
    ws = {f"w{i}": draw(windows()) for i in range(draw(st.integers(1, 3)))}
    n = draw(st.sampled_from([1, 2, 2, 2, 3, 3]))
    events = {f"E{i}": draw(beps(sorted(ws))) for i in range(n)}
    expr = _nest(draw, sorted(events))
    bound = sorted({t[1:] for b in events.values() for tr in b.triples for t in tr if _is_var(t)})
    return Query(ws, events, expr, bound)


def _is_var(t: Any) -> bool:
    return isinstance(t, str) and t.startswith("?")


def _term(t: str | int) -> str:
    if isinstance(t, int):
        return str(t)
    return t if t.startswith("?") else f"<{t}>"


def _expr(e: Expr) -> str:
    if isinstance(e, str):
        return e
    return f"({_expr(e[1])} SEQ {_expr(e[2])})"


def render(q: Query) -> str:
    lines = [f"SELECT {' '.join('?' + v for v in q.select) or '*'}"]
    for name, w in q.windows.items():
        win = {"range": f" WIN [RANGE {w.param}]", "landmark": f" WIN [LND {w.param}]"}
        lines.append(f"FROM NAMED <{E}{w.stream}>{win.get(w.kind, '')} AS <{E}{name}>")
    for name, b in q.events.items():
        body = " ".join(f"{_term(s)} {_term(p)} {_term(o)} ." for s, p, o in b.triples)
        lines.append(f"EVENT ON <{E}{b.window}> {{ {body} }} AS {name}")
    lines.append(f"WHERE {{ MATCH {{ {_expr(q.expr)} }} }}")
    return "\n".join(lines)


def trig(stream: Stream) -> str:
    out = ["@prefix t: <https://cerfleet.dev/ns#> ."]
    for k, (time, graph) in enumerate(stream):
        out.append(f"<http://e/g{k}> t:time {time} .")
        body = " ".join(
            f"{_term(s)} {_term(p)} {_term(o)} ." for s, p, o in sorted(graph, key=repr)
        )
        out.append(f"<http://e/g{k}> {{ {body} }}")
    return "\n".join(out)


def engine(q: Query, data: dict[str, Stream]) -> list[tuple[int, tuple[tuple[str, Any], ...]]]:
    used = {w.stream for w in q.windows.values()}
    named = [(name, read_trig(trig(data[name]).encode())[0]) for name in STREAMS if name in used]
    return [
        (row["time"], tuple((v, row[v]) for v in q.select))
        for row in rsepql_results(render(q), named)
    ]


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(queries(), streams())
def test_engine_equals_definitions(q: Query, data: dict[str, Stream]) -> None:
    got = engine(q, data)
    assert len(got) == len(set(got)), "a row printed twice"
    used = {w.stream for w in q.windows.values()}
    assert set(got) == evaluate(q, {s: data[s] for s in used}), render(q)
