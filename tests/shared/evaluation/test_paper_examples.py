"""The papers' worked examples, end to end through the public API."""

from __future__ import annotations

from typing import Any

from cerfleet import compile_query

# CORE Fig. 3: the stream the Fig. 1 query Q1 runs on (the figure spells INTC as INTL).
FIG3 = [
    {"type": "SELL", "name": "MSFT", "price": 101},
    {"type": "SELL", "name": "MSFT", "price": 102},
    {"type": "SELL", "name": "INTL", "price": 80},
    {"type": "BUY", "name": "INTL", "price": 80},
    {"type": "SELL", "name": "AMZN", "price": 1900},
    {"type": "SELL", "name": "INTL", "price": 81},
    {"type": "SELL", "name": "AMZN", "price": 1920},
]

Q1 = """
SELECT * FROM Stock
WHERE SELL as msft; SELL as intel; SELL as amzn
FILTER msft[name="MSFT"] AND msft[price > 100]
   AND intel[name="INTL"]
   AND amzn[name="AMZN"] AND amzn[price < 2000]
"""


def _run(query: str, stream: list[dict[str, Any]]) -> list[tuple[int, int, int, tuple[int, ...]]]:
    ev = compile_query(query).evaluator()
    out = []
    for j, event in enumerate(stream):
        out += [(j, ce.start, ce.end, ce.positions) for ce in ev.process(event)]
    return out


def test_fig3_runs_and_all_complex_events_in_algorithm2_order() -> None:
    # §3.8 of the research notes: the tECS trace gives this exact enumeration order.
    assert _run(Q1, FIG3) == [
        (4, 1, 4, (1, 2, 4)),
        (4, 0, 4, (0, 2, 4)),
        (6, 1, 6, (1, 2, 6)),
        (6, 0, 6, (0, 2, 6)),
        (6, 1, 6, (1, 5, 6)),
        (6, 0, 6, (0, 5, 6)),
    ]


def test_fig3_window_prunes_old_starts() -> None:
    out = _run(Q1 + " WITHIN 5 EVENTS", FIG3)
    assert [(s, p) for j, s, _, p in out if j == 6] == [(1, (1, 2, 6)), (1, (1, 5, 6))]
    assert [(s, p) for j, s, _, p in out if j == 4] == [(1, (1, 2, 4)), (0, (0, 2, 4))]


def test_projection_keeps_the_interval() -> None:
    out = _run("SELECT intel FROM S WHERE " + Q1.split("WHERE", 1)[1], FIG3)
    assert sorted((s, e, p) for _, s, e, p in out) == [
        (0, 4, (2,)),
        (0, 6, (2,)),
        (0, 6, (5,)),
        (1, 4, (2,)),
        (1, 6, (2,)),
        (1, 6, (5,)),
    ]


# Foundations of CEP, Fig. 1 stream: tmp for T events, hum for H events.
_TYPES = "HTHHTTTHH"
_IDS = [2, 0, 0, 1, 1, 0, 1, 1, 0]
_VALUES = [25, 45, 20, 25, 40, 42, 25, 70, 18]
FOUNDATIONS = [
    {"type": t, "id": i, ("tmp" if t == "T" else "hum"): v}
    for t, i, v in zip(_TYPES, _IDS, _VALUES, strict=True)
]


def _sets(query: str) -> set[tuple[int, ...]]:
    return {p for _, _, _, p in _run(query, FOUNDATIONS)}


def test_foundations_phi1_phi2_phi3_phi6() -> None:
    phi1 = "(T AS x ; H AS y) FILTER x[tmp > 40] AND y[hum <= 25] AND x[id = 0] AND y[id = 0]"
    assert _sets(f"SELECT * FROM S WHERE {phi1}") == {(1, 2), (1, 8), (5, 8)}
    phi2 = (
        "((T AS x ; H AS y) OR (H AS y ; T AS x)) "
        "FILTER x[tmp > 40] AND y[hum <= 25] AND x[id = 0] AND y[id = 0]"
    )
    assert _sets(f"SELECT * FROM S WHERE {phi2}") == {(1, 2), (1, 8), (5, 8), (2, 5)}
    phi3 = (
        "(H AS x ; (T AS y FILTER y[id = 1])+ ; H AS z) "
        "FILTER x[hum < 30] AND z[hum > 60] AND x[id = 1] AND z[id = 1]"
    )
    assert _sets(f"SELECT * FROM S WHERE {phi3}") == {(3, 6, 7), (3, 4, 7), (3, 4, 6, 7)}
    # φ6 is not in LP form in the paper; CEQL needs x bound where it is filtered.
    phi6 = "((T AS x ; T AS y) FILTER x[tmp >= 40]) OR ((T AS x ; H AS y) FILTER x[tmp < 40])"
    assert _sets(f"SELECT * FROM S WHERE {phi6}") == {
        (1, 4),
        (1, 5),
        (1, 6),
        (4, 5),
        (4, 6),
        (5, 6),
        (6, 7),
        (6, 8),
    }


def test_kleene_plus_is_not_contiguous() -> None:
    stream = [{"type": t} for t in "ABAB"]
    out = {p for _, _, _, p in _run("SELECT * FROM S WHERE A+ ; B", stream)}
    assert out == {(0, 1), (0, 3), (2, 3), (0, 2, 3)}
