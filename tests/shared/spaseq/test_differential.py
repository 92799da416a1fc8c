"""SPAseq end to end (TriG text → parser → pattern form → automaton → output stage)
against the brute-force evaluator of the definitions (``oracle``), on random small
graph streams and queries."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cerfleet.cli.rdf_run import results
from cerfleet.rdf.trig import read_trig
from tests.shared.spaseq.oracle import Bop, Gpm, Query, Stream, evaluate

E = "http://e/"
SUBJECTS = [E + "a", E + "b"]
PREDICATES = [E + "p", E + "q"]
OBJECTS: list[str | int] = [E + "a", 1, 2, 3]
STREAMS = ["S1", "S2"]


@st.composite
def graphs(draw: st.DrawFn) -> frozenset[tuple[str | int, str | int, str | int]]:
    n = draw(st.integers(1, 4))
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
        times = sorted(draw(st.sets(st.integers(0, 9), min_size=2, max_size=6)))
        out[name] = [(t, draw(graphs())) for t in times]
    return out


@st.composite
def gpms(draw: st.DrawFn, name: str, earlier: set[str]) -> Gpm:
    # Mostly variables (constants everywhere make matches rare); subjects join on ?x or
    # ?y, objects on ?z; ?o<name> is the GPM's own number, for filters.
    own_o = "?o" + name
    n = draw(st.sampled_from([1, 1, 1, 2]))
    triples = []
    for _ in range(n):
        s = draw(st.sampled_from(["?x", "?x", "?y", SUBJECTS[0]]))
        p = draw(st.sampled_from(PREDICATES))
        o = draw(st.sampled_from([own_o, own_o, "?z", 1, 2]))
        triples.append((s, p, o))
    gpm = Gpm(name, draw(st.sampled_from(STREAMS)), tuple(triples))
    numbers = sorted(v for v in gpm.variables() if v[1] in "oz")
    local: tuple[tuple[str, str, int], ...] = ()
    stateful: tuple[tuple[str, str, str], ...] = ()
    if numbers and draw(st.integers(0, 3)) == 0:
        local = ((draw(st.sampled_from(numbers)), draw(st.sampled_from("<>")), 2),)
    others = sorted(v for v in earlier - gpm.variables() if v[1] == "o")
    if numbers and others and draw(st.booleans()):
        stateful = (
            (
                draw(st.sampled_from(numbers)),
                draw(st.sampled_from("<>")),
                draw(st.sampled_from(others)),
            ),
        )
    optional: tuple[tuple[tuple[str | int, str | int, str | int], ...], ...] = ()
    if draw(st.integers(0, 3)) == 0:
        # OPTIONAL binds its own ?w<name>, or the shared ?z (then compatibility counts).
        s = draw(st.sampled_from(["?x", "?y"]))
        o = draw(st.sampled_from(["?w" + name, "?z"]))
        optional = (((s, draw(st.sampled_from(PREDICATES)), o),),)
    absent: tuple[tuple[tuple[str | int, str | int, str | int], ...], ...] = ()
    if draw(st.integers(0, 4)) == 0:
        s = draw(st.sampled_from(["?x", "?y", "?v"]))
        o = draw(st.sampled_from([own_o, "?v", 1, 2]))
        absent = (((s, draw(st.sampled_from(PREDICATES)), o),),)
    return Gpm(name, gpm.stream, gpm.triples, local, stateful, optional, absent)


@st.composite
def queries(draw: st.DrawFn) -> Query:
    n = draw(st.sampled_from([2, 2, 3, 1]))
    found: dict[str, Gpm] = {}
    elements: list[tuple[Bop, bool]] = []
    bound: set[str] = set()
    for i in range(n):
        shape = draw(st.sampled_from(["ref", "ref", "ref", "kleene", "kleene", "&", "|"]))
        if shape in ("ref", "kleene"):
            g = draw(gpms(f"G{i}", bound))
            found[g.name] = g
            elements.append((Bop("ref", g.name), shape == "kleene"))
            mine = g.variables() | g.optional_variables()
        else:
            a = draw(gpms(f"G{i}a", bound))
            b = draw(gpms(f"G{i}b", bound))
            found[a.name], found[b.name] = a, b
            elements.append((Bop(shape, left=Bop("ref", a.name), right=Bop("ref", b.name)), False))
            mine = a.variables() | b.variables() | a.optional_variables() | b.optional_variables()
        bound |= mine
    ops = [draw(st.sampled_from([",", ";", ":"])) for _ in range(n - 1)]
    window = draw(st.sampled_from([None, None, 4, 6]))
    select = sorted(v[1:] for v in bound)
    return Query(found, elements, ops, select, window, list(STREAMS))


def _term(t: str | int) -> str:
    if isinstance(t, int):
        return str(t)
    return t if t.startswith("?") else f"<{t}>"


def _bop(b: Bop) -> str:
    if b.op == "ref":
        return b.name
    assert b.left is not None and b.right is not None
    return f"({_bop(b.left)} {b.op} {_bop(b.right)})"


def render(q: Query) -> str:
    seq = ""
    for i, (b, kleene) in enumerate(q.elements):
        if i:
            seq += f" {q.ops[i - 1]} "
        seq += _bop(b) + ("+" if kleene else "")
    lines = [f"SELECT {' '.join('?' + v for v in q.select) or '*'}"]
    if q.window is not None:
        lines.append(f"WITHIN {q.window} SECONDS")
    lines += [f"FROM STREAM {s} <http://e/{s}>" for s in q.streams]
    lines.append(f"WHERE {{ SEQ({seq})")
    for g in q.gpms.values():
        body = " ".join(f"{_term(s)} {_term(p)} {_term(o)} ." for s, p, o in g.triples)
        filters = [f"FILTER({v} {op} {c})" for v, op, c in g.local]
        filters += [f"FILTER({v} {op} {w})" for v, op, w in g.stateful]
        for group in g.optional:
            inner = " ".join(f"{_term(s)} {_term(p)} {_term(o)} ." for s, p, o in group)
            filters.append(f"OPTIONAL {{ {inner} }}")
        for group in g.absent:
            inner = " ".join(f"{_term(s)} {_term(p)} {_term(o)} ." for s, p, o in group)
            filters.append(f"FILTER NOT EXISTS {{ {inner} }}")
        lines.append(f"  DEFINE GPM {g.name} ON {g.stream} {{ {body} {' '.join(filters)} }}")
    lines.append("}")
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
    named = [(name, read_trig(trig(data[name]).encode())[0]) for name in q.streams]
    return [
        (row["time"], tuple((v, row[v]) for v in q.select)) for row in results(render(q), named)
    ]


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(queries(), streams())
def test_engine_equals_definitions(q: Query, data: dict[str, Stream]) -> None:
    got = engine(q, data)
    assert len(got) == len(set(got)), "a row printed twice"
    assert set(got) == evaluate(q, data), render(q)
