"""SPAseq's shared variables and stateful filters checked by the engine
(``spaseq.correlations``): what is compiled, that it prunes, and that partitioning the
instants by a variable every GPM binds keeps the definitions' results."""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cerfleet import pattern
from cerfleet.cli.rdf_run import results
from cerfleet.pattern.walk import subformulas
from cerfleet.query import CompiledQuery
from cerfleet.rdf.instants import instants
from cerfleet.rdf.trig import read_trig
from cerfleet.spaseq.check import parse
from cerfleet.spaseq.correlations import partition_variable
from cerfleet.spaseq.translate import to_pattern
from tests.shared.spaseq.oracle import Bop, Gpm, Query, Stream, evaluate
from tests.shared.spaseq.test_differential import (
    PREDICATES,
    gpms,
    queries,
    render,
    streams,
    trig,
)

STOCK = """PREFIX pred: <http://example/>
SELECT ?company ?p1 ?p2 ?p3
WITHIN 1 MINUTES
FROM STREAM S1 <http://stockmarket.org/stocks/google>
WHERE {{
  SEQ (A {op} B {op} C)
  DEFINE GPM A ON S1 {{ ?t1 pred:company ?company . ?t1 pred:price ?p1 . }}
  DEFINE GPM B ON S1 {{ ?t2 pred:company ?company . ?t2 pred:price ?p2 . FILTER (?p2 > ?p1) }}
  DEFINE GPM C ON S1 {{ ?t3 pred:company ?company . ?t3 pred:price ?p3 . FILTER (?p3 < ?p2) }}
}}
"""


def _trades(prices: list[tuple[str, int]]) -> str:
    lines = ["@prefix pred: <http://example/> .", "@prefix t: <https://cerfleet.dev/ns#> ."]
    for i, (company, price) in enumerate(prices):
        lines.append(f"<http://g/{i}> t:time {i} .")
        lines.append(
            f"<http://g/{i}> {{ <http://t/{i}> pred:company <http://c/{company}> ; "
            f"pred:price {price} . }}"
        )
    return "\n".join(lines) + "\n"


def _correlations(form: pattern.Pattern) -> list[pattern.Correlation]:
    out: list[pattern.Correlation] = []
    for node in subformulas(form.where):
        if isinstance(node, pattern.Filter):
            todo: list[pattern.FilterExpr] = [node.filter]
            while todo:
                theta = todo.pop()
                if isinstance(theta, pattern.Correlation):
                    out.append(theta)
                elif isinstance(theta, pattern.FilterAnd | pattern.FilterOr):
                    todo += [theta.left, theta.right]
    return out


def test_shared_variables_and_stateful_filters_are_correlations() -> None:
    query = parse(STOCK.format(op=","))
    # ?company of B and of C against A's; ?p2 > ?p1 (B, A); ?p3 < ?p2 (C, B).
    assert len(_correlations(to_pattern(query, correlate=True))) == 4
    assert _correlations(to_pattern(query)) == []
    kleene = parse(STOCK.format(op=",").replace("A , B , C", "A, B+, C"))
    assert _correlations(to_pattern(kleene, correlate=True)) == []  # output stage (README)


def _complex_events(text: str, data: str, correlate: bool) -> int:
    query = parse(text)
    form = to_pattern(query, correlate=correlate)
    evaluator = CompiledQuery.from_pattern(form, text=text, language="spaseq").evaluator()
    merged, _ = instants([("S1", read_trig(data.encode())[0])])
    return sum(len(evaluator.process(event, i)) for i, event in enumerate(merged))


def test_the_engine_prunes_what_the_filters_reject() -> None:
    prices = [("g", p) for p in (5, 7, 6, 9, 3, 4, 8, 2, 6, 7, 5, 9, 1)]
    text, data = STOCK.format(op=":"), _trades(prices)
    # Every ordered triple of events is a candidate of A : B : C; the correlations keep
    # those rising then falling, which is what the rows say.
    assert _complex_events(text, data, correlate=False) == 286  # C(13, 3)
    p = [price for _, price in prices]
    n = len(p)
    expected = sum(
        p[j] > p[i] and p[k] < p[j]
        for i in range(n)
        for j in range(i + 1, n)
        for k in range(j + 1, n)
    )
    assert 0 < expected < 286
    assert _complex_events(text, data, correlate=True) == expected
    named = [("S1", read_trig(data.encode())[0])]
    rows = list(results(text, named, correlate=True))
    assert rows == list(results(text, named, correlate=False, partition=False))


def test_partition_variable() -> None:
    assert partition_variable(parse(STOCK.format(op=":"))) == "company"
    assert partition_variable(parse(STOCK.format(op=";"))) == "company"
    assert partition_variable(parse(STOCK.format(op=","))) is None  # reads the streamset
    kleene = STOCK.format(op=":").replace("A : B : C", "A : B+ : C")
    assert partition_variable(parse(kleene)) is None
    leading = STOCK.format(op=":").replace("A : B : C", "A+ : B : C")
    assert partition_variable(parse(leading)) == "company"


def test_partitioned_by_company_with_two_companies_per_graph() -> None:
    # Graphs holding a trade of each company: every instant goes to both keys.
    lines = ["@prefix pred: <http://example/> .", "@prefix t: <https://cerfleet.dev/ns#> ."]
    for i, (x, y) in enumerate([(5, 2), (7, 8), (6, 7), (9, 3), (3, 4)]):
        lines.append(f"<http://g/{i}> t:time {i} .")
        lines.append(
            f"<http://g/{i}> {{ <http://t/{i}x> pred:company <http://c/x> ; pred:price {x} . "
            f"<http://t/{i}y> pred:company <http://c/y> ; pred:price {y} . }}"
        )
    named = [("S1", read_trig(("\n".join(lines) + "\n").encode())[0])]
    for op in (":", ";"):
        text = STOCK.format(op=op)
        got = list(results(text, named))
        assert got == list(results(text, named, correlate=True))
        assert got == list(results(text, named, correlate=False, partition=False))
        assert {r["company"] for r in got} == {"http://c/x", "http://c/y"}


@st.composite
def keyed_queries(draw: st.DrawFn) -> Query:
    """Queries whose GPMs all bind ?x, with ``;`` and ``:`` only and Kleene+ first at
    most: the instants are partitioned by ?x."""
    n = draw(st.sampled_from([2, 3]))
    found: dict[str, Gpm] = {}
    elements: list[tuple[Bop, bool]] = []
    bound: set[str] = {"?x"}
    for i in range(n):
        shape = draw(st.sampled_from(["ref", "ref", "&", "|"] + (["kleene"] if i == 0 else [])))
        names = [f"G{i}"] if shape in ("ref", "kleene") else [f"G{i}a", f"G{i}b"]
        made = []
        for name in names:
            g = draw(gpms(name, bound))
            first = ("?x", draw(st.sampled_from(PREDICATES)), "?o" + name)
            g = dataclasses.replace(g, triples=(first, *g.triples))
            found[name] = g
            made.append(g)
            bound |= g.variables()
        if len(made) == 1:
            elements.append((Bop("ref", made[0].name), shape == "kleene"))
        else:
            left, right = Bop("ref", made[0].name), Bop("ref", made[1].name)
            elements.append((Bop(shape, left=left, right=right), False))
    ops = [draw(st.sampled_from([";", ":"])) for _ in range(n - 1)]
    window = draw(st.sampled_from([None, 4, 6]))
    select = sorted(v[1:] for v in bound)
    return Query(found, elements, ops, select, window, ["S1", "S2"])


def _rows(q: Query, data: dict[str, Stream], correlate: bool) -> list[tuple[Any, ...]]:
    named = [(name, read_trig(trig(data[name]).encode())[0]) for name in q.streams]
    return [
        (r["time"], tuple((v, r[v]) for v in q.select))
        for r in results(render(q), named, correlate=correlate)
    ]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(keyed_queries(), streams(), st.booleans())
def test_partitioned_equals_definitions(q: Query, data: dict[str, Stream], correlate: bool) -> None:
    assert partition_variable(parse(render(q))) is not None
    got = _rows(q, data, correlate)
    assert len(got) == len(set(got)), "a row printed twice"
    assert set(got) == evaluate(q, data), render(q)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(queries(), streams())
def test_correlated_equals_definitions(q: Query, data: dict[str, Stream]) -> None:
    """The differential suite's queries with the engine's correlations on."""
    got = _rows(q, data, correlate=True)
    assert len(got) == len(set(got)), "a row printed twice"
    assert set(got) == evaluate(q, data), render(q)
