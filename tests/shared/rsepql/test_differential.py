"""RSEP-QL end to end against the brute-force evaluator of the definitions
(``oracle``), on random small graph streams, windows and event patterns: unrestricted
SEQ chains through the automata (text → parser → pattern form → automaton → output
stage, and with STEP windows ``rsepql.closes``), and SEQ^c/SEQ^r/SEQ^n, FIRST/LAST
and ``MATCH CONSUMING`` through ``rsepql.evaluation`` — also on sparse streams
where closes pass with nothing new. All compare (evaluation time, end, row): when
each row is reported, not only which.

1,000 cases each by default; ``CERFLEET_RSEPQL_EXAMPLES`` sets another count."""

from __future__ import annotations

import os
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cerfleet.cli.rdf_run import rsepql_evaluations
from cerfleet.rdf.trig import read_trig
from tests.shared.rsepql.oracle import Bep, Expr, Graph, Query, Win, evaluations

EXAMPLES = int(os.environ.get("CERFLEET_RSEPQL_EXAMPLES", "1000"))

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
def streams(draw: st.DrawFn, longer: bool = False, span: int = 9) -> dict[str, Stream]:
    # Selection among matches needs several of them to choose from: longer streams.
    out = {}
    for name in STREAMS:
        most, span = (9, max(span, 12)) if longer else (7, span)
        times = sorted(draw(st.sets(st.integers(0, span), min_size=2, max_size=most)))
        out[name] = [(t, draw(graphs())) for t in times]
    return out


@st.composite
def windows(draw: st.DrawFn, steps: bool) -> Win:
    stream = draw(st.sampled_from(STREAMS))
    kind = draw(st.sampled_from(["range", "range", "landmark", "identity"]))
    param = draw(st.integers(1, 8)) if kind == "range" else draw(st.integers(0, 5))
    step = None
    if steps and kind == "range":
        step = draw(st.sampled_from([None, None, 1, 2, 3, 4]))
    return Win(stream, kind, param if kind != "identity" else 0, step)


@st.composite
def beps(draw: st.DrawFn, windows: list[str], dense: bool = False) -> Bep:
    # dense: one triple pattern with fewer constants, so that there are matches to
    # select among.
    triples = []
    for _ in range(1 if dense else draw(st.sampled_from([1, 1, 1, 2]))):
        s = draw(st.sampled_from(["?x", "?x", "?y", "?y", SUBJECTS[0]]))
        p = draw(st.sampled_from(PREDICATES))
        objects = ["?z", "?y", "?o", "?o"] if dense else ["?z", "?y", "?o", "?o", 1, E + "b"]
        triples.append((s, p, draw(st.sampled_from(objects))))
    return Bep(draw(st.sampled_from(windows)), tuple(triples))


OPS = ["SEQ", "SEQ"]
POLICY_OPS = ["SEQ", "SEQ^c", "SEQ^r", "SEQ^n"]


def _nest(draw: st.DrawFn, names: list[str], ops: list[str], picks: bool) -> Expr:
    out: Expr
    if len(names) == 1:
        out = names[0]
    else:
        cut = draw(st.integers(1, len(names) - 1))
        op = draw(st.sampled_from(ops))
        out = (op, _nest(draw, names[:cut], ops, picks), _nest(draw, names[cut:], ops, picks))
    if picks and draw(st.integers(0, 4)) == 0:
        out = (draw(st.sampled_from(["FIRST", "LAST"])), out)
    return out


@st.composite
def quiet(draw: st.DrawFn) -> Query:
    """Windows that change only when an item arrives, and a STEP window (its closes
    are the evaluation times) that no event uses: closes where nothing arrived, at
    which consumption alone changes what an evaluation selects."""
    q = draw(queries(policies=True, sliding=False))
    clock = Win(draw(st.sampled_from(STREAMS)), "range", 1, draw(st.integers(2, 4)))
    return Query({**q.windows, "clock": clock}, q.events, q.expr, q.select, q.consuming)


@st.composite
def queries(draw: st.DrawFn, policies: bool = False, sliding: bool = True) -> Query:
    if sliding:
        ws = {f"w{i}": draw(windows(steps=True)) for i in range(draw(st.integers(1, 3)))}
    else:
        kinds = st.sampled_from(["landmark", "identity"])
        ws = {
            f"w{i}": Win(draw(st.sampled_from(STREAMS)), draw(kinds), draw(st.integers(0, 3)))
            for i in range(draw(st.integers(1, 2)))
        }
    n = draw(st.sampled_from([1, 2, 2, 2, 3, 3]))
    events = {f"E{i}": draw(beps(sorted(ws), policies)) for i in range(n)}
    expr = _nest(draw, sorted(events), POLICY_OPS if policies else OPS, policies)
    bound = sorted({t[1:] for b in events.values() for tr in b.triples for t in tr if _is_var(t)})
    consuming = policies and draw(st.booleans())
    return Query(ws, events, expr, bound, consuming)


def _is_var(t: Any) -> bool:
    return isinstance(t, str) and t.startswith("?")


def _term(t: str | int) -> str:
    if isinstance(t, int):
        return str(t)
    return t if t.startswith("?") else f"<{t}>"


def _expr(e: Expr) -> str:
    if isinstance(e, str):
        return e
    if len(e) == 2:
        return f"{e[0]}({_expr(e[1])})"
    return f"({_expr(e[1])} {e[0]} {_expr(e[2])})"  # type: ignore[misc]


def render(q: Query) -> str:
    lines = [f"SELECT {' '.join('?' + v for v in q.select) or '*'}"]
    for name, w in q.windows.items():
        step = f" STEP {w.step}" if w.step is not None else ""
        win = {"range": f" WIN [RANGE {w.param}{step}]", "landmark": f" WIN [LND {w.param}]"}
        lines.append(f"FROM NAMED <{E}{w.stream}>{win.get(w.kind, '')} AS <{E}{name}>")
    for name, b in q.events.items():
        body = " ".join(f"{_term(s)} {_term(p)} {_term(o)} ." for s, p, o in b.triples)
        lines.append(f"EVENT ON <{E}{b.window}> {{ {body} }} AS {name}")
    consume = "CONSUMING " if q.consuming else ""
    lines.append(f"WHERE {{ MATCH {consume}{{ {_expr(q.expr)} }} }}")
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


def engine(q: Query, data: dict[str, Stream]) -> list[tuple[int, int, tuple[tuple[str, Any], ...]]]:
    used = {w.stream for w in q.windows.values()}
    named = [(name, read_trig(trig(data[name]).encode())[0]) for name in STREAMS if name in used]
    return [
        (at // 1000, row["time"], tuple((v, row[v]) for v in q.select))
        for at, row in rsepql_evaluations(render(q), named)
    ]


def _check(q: Query, data: dict[str, Stream]) -> None:
    got = engine(q, data)
    assert len(got) == len(set(got)), "a row reported twice"
    assert [at for at, _, _ in got] == sorted(at for at, _, _ in got), "out of order"
    used = {w.stream for w in q.windows.values()}
    assert set(got) == evaluations(q, {s: data[s] for s in used}), render(q)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(queries(), streams())
def test_engine_equals_definitions(q: Query, data: dict[str, Stream]) -> None:
    _check(q, data)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(queries(policies=True), streams(longer=True))
def test_policies_equal_definitions(q: Query, data: dict[str, Stream]) -> None:
    _check(q, data)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(quiet(), streams(longer=True, span=24))
def test_policies_between_quiet_closes(q: Query, data: dict[str, Stream]) -> None:
    _check(q, data)
