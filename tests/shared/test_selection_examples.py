"""Selection strategies and consumption policies on hand-checked examples.

Each example is a CEQL query and a stream with its expected complex events,
checked against both the oracle and the engine. The first group is the running
example of the Foundations of CEP paper (its Figure 1 stream and formulas φ1,
φ2, φ3, φ6) with the table of outputs per strategy; the others pin down the
choices the paper leaves open: the window applies after the strategy,
competitors are compared on their positions only, and how consumption restarts
the evaluation.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from cerfleet.ceql.parser import parse_and_check
from cerfleet.query import compile_query
from tests.shared.oracle import OracleResult, oracle_eval

Stream = list[dict[str, Any]]
Expected = set[OracleResult]


def ev(type_: str, **attrs: Any) -> dict[str, Any]:
    return {"type": type_, **attrs}


def run_oracle(text: str, stream: Stream) -> set[OracleResult]:
    return oracle_eval(parse_and_check(text), stream)


def run_engine(text: str, stream: Stream) -> set[OracleResult]:
    evaluator = compile_query(text).evaluator()
    out: list[OracleResult] = []
    for index, event in enumerate(stream):
        for ce in evaluator.process(dict(event)):
            assert ce.end == index, f"{ce} emitted while processing event {index}"
            out.append((ce.start, ce.end, tuple(ce.positions), ce.key))
    assert len(out) == len(set(out)), f"duplicate outputs: {sorted(out)}"
    return set(out)


RUNNERS = {"oracle": run_oracle, "engine": run_engine}


@pytest.fixture(params=sorted(RUNNERS))
def run(request: pytest.FixtureRequest) -> Any:
    return RUNNERS[request.param]


def ces(*events: tuple[int, int, Iterable[int]], key: Any = None) -> Expected:
    """``(start, end, positions)`` triples with one partition key."""
    return {(s, e, tuple(sorted(ps)), key) for s, e, ps in events}


def sets(*position_sets: Iterable[int]) -> Expected:
    """Complex events given by their positions only (start = min, end = max)."""
    out: Expected = set()
    for positions in position_sets:
        ps = tuple(sorted(positions))
        out.add((ps[0], ps[-1], ps, None))
    return out


# ------------------------------------------------- Foundations paper, §1.4 / Fig. 1

# index:  0   1   2   3   4   5   6   7   8
# type:   H   T   H   H   T   T   T   H   H
# id:     2   0   0   1   1   0   1   1   0
# value: 25  45  20  25  40  42  25  70  18   (tmp for T, hum for H)
PAPER_STREAM: Stream = [
    ev("H", id=2, hum=25),
    ev("T", id=0, tmp=45),
    ev("H", id=0, hum=20),
    ev("H", id=1, hum=25),
    ev("T", id=1, tmp=40),
    ev("T", id=0, tmp=42),
    ev("T", id=1, tmp=25),
    ev("H", id=1, hum=70),
    ev("H", id=0, hum=18),
]

_PHI12_FILTER = "FILTER x[tmp > 40] AND y[hum <= 25] AND x[id = 0] AND y[id = 0]"
PHI1 = f"(T AS x ; H AS y) {_PHI12_FILTER}"
PHI2 = f"((T AS x ; H AS y) OR (H AS y ; T AS x)) {_PHI12_FILTER}"
PHI3 = (
    "(H AS x ; (T AS y FILTER y[id = 1])+ ; H AS z) "
    "FILTER x[hum < 30] AND z[hum > 60] AND x[id = 1] AND z[id = 1]"
)
# The paper's φ6 is `T AS x ; ((T AS y FILTER x.temp ≥ 40) OR (H AS y FILTER
# x.temp < 40))`; CEQL wants a filtered variable bound inside the filtered
# formula, so the condition on x is moved out, which is equivalent.
PHI6 = "((T AS x ; T AS y) FILTER x[tmp >= 40]) OR ((T AS x ; H AS y) FILTER x[tmp < 40])"

PAPER_TABLE: dict[str, dict[str, list[set[int]]]] = {
    "phi1": {
        "ALL": [{1, 2}, {1, 8}, {5, 8}],
        "STRICT": [{1, 2}],
        "NEXT": [{1, 2}, {1, 8}],
        "LAST": [{1, 2}, {5, 8}],
        "MAX": [{1, 2}, {1, 8}, {5, 8}],
    },
    "phi2": {
        "ALL": [{1, 2}, {1, 8}, {5, 8}, {2, 5}],
        "STRICT": [{1, 2}],
        "NEXT": [{1, 2}, {2, 5}, {1, 8}],
        "LAST": [{1, 2}, {2, 5}, {5, 8}],
        "MAX": [{1, 2}, {1, 8}, {5, 8}, {2, 5}],
    },
    "phi3": {
        "ALL": [{3, 6, 7}, {3, 4, 7}, {3, 4, 6, 7}],
        "STRICT": [],
        "NEXT": [{3, 4, 6, 7}],
        "LAST": [{3, 4, 6, 7}],
        "MAX": [{3, 4, 6, 7}],
    },
    "phi6": {
        "ALL": [{1, 4}, {1, 5}, {1, 6}, {4, 5}, {4, 6}, {5, 6}, {6, 7}, {6, 8}],
        "STRICT": [{4, 5}, {5, 6}, {6, 7}],
        "NEXT": [{1, 4}, {1, 5}, {1, 6}, {6, 7}, {6, 8}],
        "LAST": [{1, 4}, {4, 5}, {5, 6}, {6, 7}, {6, 8}],
        "MAX": [{1, 4}, {1, 5}, {1, 6}, {4, 5}, {4, 6}, {5, 6}, {6, 7}, {6, 8}],
    },
}
PAPER_FORMULAS = {"phi1": PHI1, "phi2": PHI2, "phi3": PHI3, "phi6": PHI6}


@pytest.mark.parametrize("strategy", ["ALL", "STRICT", "NEXT", "LAST", "MAX"])
@pytest.mark.parametrize("name", sorted(PAPER_FORMULAS))
def test_foundations_table(run: Any, name: str, strategy: str) -> None:
    text = f"SELECT {strategy} * FROM S WHERE {PAPER_FORMULAS[name]}"
    assert run(text, PAPER_STREAM) == sets(*PAPER_TABLE[name][strategy])


def test_foundations_table_without_strategy_keyword_is_all(run: Any) -> None:
    for name, formula in PAPER_FORMULAS.items():
        assert run(f"SELECT * FROM S WHERE {formula}", PAPER_STREAM) == sets(
            *PAPER_TABLE[name]["ALL"]
        ), name


# ------------------------------------------------------ strategy, window, projection

A_A_B: Stream = [ev("A"), ev("A"), ev("B")]


def test_window_applies_after_the_strategy(run: Any) -> None:
    # NEXT picks {0, 2} among {0, 2} and {1, 2}; it is 2 events long, so the window
    # drops it, and {1, 2} is not selected in its place.
    assert run("SELECT NEXT * FROM S WHERE A ; B WITHIN 1 EVENTS", A_A_B) == set()
    assert run("SELECT LAST * FROM S WHERE A ; B WITHIN 1 EVENTS", A_A_B) == sets({1, 2})
    assert run("SELECT * FROM S WHERE A ; B WITHIN 1 EVENTS", A_A_B) == sets({1, 2})
    assert run("SELECT NEXT * FROM S WHERE A ; B WITHIN 2 EVENTS", A_A_B) == sets({0, 2})


def test_same_positions_different_starts_are_all_kept(run: Any) -> None:
    # Projected to b, both matches have positions {2}: they tie, and both are kept.
    expected = ces((0, 2, {2}), (1, 2, {2}))
    for strategy in ("NEXT", "LAST", "MAX", "STRICT"):
        assert run(f"SELECT {strategy} b FROM S WHERE A ; B AS b", A_A_B) == expected, strategy


def test_strategies_compare_projected_positions(run: Any) -> None:
    stream = [ev("A"), ev("C"), ev("A"), ev("B")]
    # Unprojected: {0, 3} and {2, 3}; NEXT keeps {0, 3}, LAST {2, 3}, and STRICT
    # {2, 3} only ({0, 3} skips the C at 1 and the A at 2).
    assert run("SELECT STRICT * FROM S WHERE A ; B", stream) == sets({2, 3})
    assert run("SELECT NEXT * FROM S WHERE A ; B", stream) == sets({0, 3})
    assert run("SELECT LAST * FROM S WHERE A ; B", stream) == sets({2, 3})
    # Projected on the A: {0} and {2} are both contiguous; NEXT/LAST compare {0}, {2}.
    assert run("SELECT STRICT u FROM S WHERE A AS u ; B", stream) == ces((0, 3, {0}), (2, 3, {2}))
    assert run("SELECT NEXT u FROM S WHERE A AS u ; B", stream) == ces((0, 3, {0}))
    assert run("SELECT LAST u FROM S WHERE A AS u ; B", stream) == ces((2, 3, {2}))
    assert run("SELECT MAX u FROM S WHERE A AS u ; B", stream) == ces((0, 3, {0}), (2, 3, {2}))


def test_max_keeps_every_maximal_set(run: Any) -> None:
    stream = [ev("A"), ev("A"), ev("B")]
    # A+ ; B at 2: {0,2} {1,2} {0,1,2}; only {0,1,2} is maximal.
    assert run("SELECT MAX * FROM S WHERE A+ ; B", stream) == sets({0, 1, 2})
    # Two incomparable maximal sets: MAX keeps both, NEXT and LAST one each.
    stream = [ev("A"), ev("C"), ev("B")]
    assert run("SELECT MAX * FROM S WHERE (A ; B) OR (C ; B)", stream) == sets({0, 2}, {1, 2})
    assert run("SELECT NEXT * FROM S WHERE (A ; B) OR (C ; B)", stream) == sets({0, 2})
    assert run("SELECT LAST * FROM S WHERE (A ; B) OR (C ; B)", stream) == sets({1, 2})


def test_strict_counts_positions_of_the_partition(run: Any) -> None:
    stream = [ev("A", k=0), ev("C", k=1), ev("B", k=0), ev("B", k=1)]
    # Globally 0 and 2 are not adjacent; in partition k=0 they are.
    assert run("SELECT STRICT * FROM S WHERE A ; B", stream) == set()
    assert run("SELECT STRICT * FROM S WHERE A ; B PARTITION BY [k]", stream) == ces(
        (0, 2, {0, 2}), key=(0,)
    )


def test_strict_with_empty_projection(run: Any) -> None:
    # B alone binds no u: the complex event is empty, which counts as contiguous.
    stream = [ev("A"), ev("C"), ev("B")]
    assert run("SELECT STRICT u FROM S WHERE (A AS u) OR B", stream) == ces(
        (0, 0, {0}), (2, 2, set())
    )


# ------------------------------------------------------------------- consumption


def test_consume_by_any_restarts_after_an_output(run: Any) -> None:
    a_a_b_b = [ev("A"), ev("A"), ev("B"), ev("B")]
    assert run("SELECT * FROM S WHERE A ; B", a_a_b_b) == sets({0, 2}, {1, 2}, {0, 3}, {1, 3})
    # Both outputs at 2 are emitted; then only events from 3 on count, and the B
    # at 3 has no A after the restart.
    assert run("SELECT * FROM S WHERE A ; B CONSUME BY ANY", a_a_b_b) == sets({0, 2}, {1, 2})
    a_b_a_b = [ev("A"), ev("B"), ev("A"), ev("B")]
    assert run("SELECT * FROM S WHERE A ; B CONSUME BY ANY", a_b_a_b) == sets({0, 1}, {2, 3})
    assert run("SELECT * FROM S WHERE A ; B CONSUME BY NONE", a_b_a_b) == sets(
        {0, 1}, {0, 3}, {2, 3}
    )


def test_consumption_changes_the_competitors(run: Any) -> None:
    a_b_a_b = [ev("A"), ev("B"), ev("A"), ev("B")]
    # Without consumption NEXT prefers {0, 3} to {2, 3} at 3; after the output at 1
    # the A at 0 is gone, so {2, 3} is the only competitor left.
    assert run("SELECT NEXT * FROM S WHERE A ; B", a_b_a_b) == sets({0, 1}, {0, 3})
    assert run("SELECT NEXT * FROM S WHERE A ; B CONSUME BY ANY", a_b_a_b) == sets({0, 1}, {2, 3})


def test_only_actual_outputs_consume(run: Any) -> None:
    stream = [ev("A"), ev("A"), ev("B"), ev("A"), ev("B")]
    # NEXT selects {0, 2} then {0, 4}; the window drops both, so nothing is output
    # and nothing is consumed.
    text = "SELECT NEXT * FROM S WHERE A ; B WITHIN 1 EVENTS CONSUME BY ANY"
    assert run(text, stream) == set()
    # With ALL, {1, 2} is output at 2; then only {3, 4} remains possible.
    text = "SELECT * FROM S WHERE A ; B WITHIN 1 EVENTS CONSUME BY ANY"
    assert run(text, stream) == sets({1, 2}, {3, 4})
    text = "SELECT * FROM S WHERE A ; B WITHIN 1 EVENTS"
    assert run(text, stream) == sets({1, 2}, {3, 4})
    text = "SELECT * FROM S WHERE A ; B WITHIN 2 EVENTS CONSUME BY ANY"
    assert run(text, stream) == sets({0, 2}, {1, 2}, {3, 4})


PARTITIONED: Stream = [
    ev("A", k=0),  # 0
    ev("A", k=1),  # 1
    ev("B", k=0),  # 2
    ev("B", k=1),  # 3
    ev("A", k=0),  # 4
    ev("B", k=0),  # 5
    ev("B", k=1),  # 6
]


def test_partitioned_without_consumption(run: Any) -> None:
    text = "SELECT * FROM S WHERE A ; B PARTITION BY [k]"
    assert run(text, PARTITIONED) == ces(
        (0, 2, {0, 2}), (0, 5, {0, 5}), (4, 5, {4, 5}), key=(0,)
    ) | ces((1, 3, {1, 3}), (1, 6, {1, 6}), key=(1,))


def test_consume_by_partition_restarts_only_the_outputting_partition(run: Any) -> None:
    # k=0 outputs {0, 2} and restarts at 3, then {4, 5}; k=1 outputs {1, 3}
    # (its A at 1 is untouched by k=0's output at 2) and restarts at 4.
    text = "SELECT * FROM S WHERE A ; B PARTITION BY [k] CONSUME BY PARTITION"
    assert run(text, PARTITIONED) == ces((0, 2, {0, 2}), (4, 5, {4, 5}), key=(0,)) | ces(
        (1, 3, {1, 3}), key=(1,)
    )


def test_consume_by_any_restarts_every_partition(run: Any) -> None:
    # k=0's output at 2 restarts every partition at 3: k=1 loses its A at 1.
    text = "SELECT * FROM S WHERE A ; B PARTITION BY [k] CONSUME BY ANY"
    assert run(text, PARTITIONED) == ces((0, 2, {0, 2}), (4, 5, {4, 5}), key=(0,))


def test_consume_by_partition_without_partition_by_is_any(run: Any) -> None:
    stream = [ev("A"), ev("A"), ev("B"), ev("B"), ev("A"), ev("B")]
    expected = sets({0, 2}, {1, 2}, {4, 5})
    assert run("SELECT * FROM S WHERE A ; B CONSUME BY PARTITION", stream) == expected
    assert run("SELECT * FROM S WHERE A ; B CONSUME BY ANY", stream) == expected


def test_window_after_a_restart(run: Any) -> None:
    # A window bounds differences of positions, which a restart does not change:
    # {2, 4} is 2 positions long whether or not events 0 and 1 are consumed.
    stream = [ev("A"), ev("B"), ev("A"), ev("C"), ev("B")]
    text = "SELECT * FROM S WHERE A ; B WITHIN 2 EVENTS CONSUME BY ANY"
    assert run(text, stream) == sets({0, 1}, {2, 4})
    text = "SELECT * FROM S WHERE A ; B WITHIN 1 EVENTS CONSUME BY ANY"
    assert run(text, stream) == sets({0, 1})


def test_consumption_with_strict_and_last(run: Any) -> None:
    stream = [ev("A"), ev("B"), ev("B"), ev("A"), ev("A"), ev("B")]
    # STRICT A ; B: {0, 1} at 1 (restart at 2), then {4, 5} at 5.
    assert run("SELECT STRICT * FROM S WHERE A ; B CONSUME BY ANY", stream) == sets({0, 1}, {4, 5})
    # LAST without consumption: {0, 1}, {0, 2}, {4, 5}; with it the B at 2 has no A.
    assert run("SELECT LAST * FROM S WHERE A ; B", stream) == sets({0, 1}, {0, 2}, {4, 5})
    assert run("SELECT LAST * FROM S WHERE A ; B CONSUME BY ANY", stream) == sets({0, 1}, {4, 5})
