"""Fuzzing in CI: the CEQL compiler and the event decoders take any text or bytes and
answer with an event, a query, or one of the product's errors saying where.

A few thousand inputs per run, the mutations drawn by hypothesis (``st.randoms``) so a
failure shrinks and replays; ``python -m tests.fuzz --examples 100000`` is the long run
(see ``tests/fuzz.py`` for the checks themselves).
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cerfleet import pattern
from cerfleet.ceql.printer import to_ceql
from tests import fuzz
from tests.shared.strategies import queries

RANDOMS = st.randoms(use_true_random=False)


def fast(examples: int) -> settings:
    return settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow],
    )


ALL_STRATEGIES = tuple(pattern.Strategy)
ALL_CONSUMES = tuple(pattern.Consume)


@fast(1000)
@given(seed=st.sampled_from(fuzz.CEQL_SEEDS), rng=RANDOMS)
def test_mutated_queries(seed: str, rng: random.Random) -> None:
    fuzz.check_ceql(fuzz.mutate(rng, seed, fuzz.CEQL_TOKENS))


@fast(400)
@given(
    query=queries(strategies=ALL_STRATEGIES, consumes=ALL_CONSUMES, limits=True),
    rng=RANDOMS,
)
def test_mutated_generated_queries(query: pattern.Pattern, rng: random.Random) -> None:
    text = to_ceql(query)
    assert fuzz.check_ceql(text) == "ok"
    fuzz.check_ceql(fuzz.mutate(rng, text, fuzz.CEQL_TOKENS))


@fast(300)
@given(tokens=st.lists(st.sampled_from(fuzz.CEQL_TOKENS), max_size=40))
def test_token_soup(tokens: list[str]) -> None:
    fuzz.check_ceql(" ".join(tokens))


@fast(600)
@given(rng=RANDOMS)
def test_json_lines(rng: random.Random) -> None:
    fuzz.check_jsonl(fuzz.jsonl_input(rng))


@fast(400)
@given(rng=RANDOMS)
def test_csv(rng: random.Random) -> None:
    fuzz.check_csv(fuzz.csv_input(rng))


@fast(600)
@given(rng=RANDOMS)
def test_fleet_records(rng: random.Random) -> None:
    fuzz.check_record(fuzz.record_input(rng))


@fast(300)
@given(data=st.binary(max_size=200))
def test_arbitrary_bytes(data: bytes) -> None:
    fuzz.check_jsonl(data)
    fuzz.check_csv(data)
    fuzz.check_record(data)


def test_the_script_runs_and_reports() -> None:
    assert fuzz.main(["--examples", "50", "--seed", "3"]) == 0


@pytest.mark.parametrize(
    "text",
    [
        "-- a co\ud800mment\nSELECT * FROM S WHERE A ; B",  # UnicodeEncodeError in the hash
        "SELECT * FROM S WHERE A ; B WITHIN " + "10" * 200 + " HOURS",  # OverflowError
        "SELECT * FROM S WHERE A ; B WITHIN " + "9" * 400 + " EVENTS",
    ],
    ids=["lone-surrogate", "huge-time-window", "huge-count-window"],
)
def test_found_by_the_long_run_queries(text: str) -> None:
    assert fuzz.check_ceql(text) == "CEQLError"


def test_found_by_the_long_run_a_5000_digit_integer() -> None:
    """The stdlib fallback refuses integers over 4300 digits with a ValueError."""
    data = b'{"type": "A", "v": ' + b"1" * 5000 + b"}\n" + b'{"type": "B"}'
    assert fuzz.check_jsonl(data) == "mixed"
