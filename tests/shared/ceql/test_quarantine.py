"""CORE's ``CREATE QUARANTINE`` policies: parsed, mapped onto the lateness bound
(``BOUNDED_TIME``) or arrival order (``DIRECT``), refused where cerfleet cannot honour
them exactly (``FIXED_TIME``, a policy over part of the query's streams), with line
and column."""

from __future__ import annotations

import dataclasses
import io
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

from cerfleet import pattern
from cerfleet.ceql.parser import parse, parse_and_check
from cerfleet.ceql.printer import to_ceql
from cerfleet.cli.main import main
from cerfleet.errors import CEQLError
from cerfleet.query import compile_query
from cerfleet.streams import steps
from tests.shared.strategies import TIME_FIELD, queries, streams

STREAMS = """CREATE STREAM S { EVENT A { x: int }, EVENT B { x: int } }
CREATE STREAM T { EVENT C { x: int } }
"""

# The suite runs a few hundred examples per property; the proof run sets
# CERFLEET_PROOF_EXAMPLES=2500.
EXAMPLES = int(os.environ.get("CERFLEET_PROOF_EXAMPLES", "300"))


def _query(quarantine: str, from_: str = "S") -> str:
    return f"{STREAMS}{quarantine}\nSELECT * FROM {from_} WHERE A ; B"


@pytest.mark.parametrize(
    ("quarantine", "from_", "kind", "lateness"),
    [
        ("CREATE QUARANTINE { BOUNDED_TIME 10 seconds { S } }", "S", "BOUNDED_TIME", 10_000),
        # Parts add up (CORE's visitor keeps only the last one).
        ("create quarantine { bounded_time 1 minute 30 seconds {S} }", "S", "BOUNDED_TIME", 90e3),
        ("CREATE QUARANTINE { BOUNDED_TIME 0 SECONDS { S } }", "S", "BOUNDED_TIME", 0),
        ("CREATE QUARANTINE {\nDIRECT {S}\n}", "S", "DIRECT", None),
        # The policy for exactly the query's set applies; the others are for other queries.
        (
            "CREATE QUARANTINE { DIRECT { T } BOUNDED_TIME 2 SECONDS { S, T } }",
            "S, T",
            "BOUNDED_TIME",
            2000,
        ),
        ("CREATE QUARANTINE { BOUNDED_TIME 2 SECONDS { T } }", "S", None, None),
        ("CREATE QUARANTINE { }", "S", None, None),
    ],
)
def test_the_policy_for_the_query_s_streams_sets_its_lateness(
    quarantine: str, from_: str, kind: str | None, lateness: float | None
) -> None:
    query = parse_and_check(_query(quarantine, from_))
    policy = query.quarantine
    assert (policy.kind.value if policy else None) == kind
    assert query.max_lateness == lateness
    assert parse(to_ceql(query)) == query


def test_policy_names_are_keywords_only_inside_the_block() -> None:
    text = """CREATE STREAM Quarantine { EVENT DIRECT { bounded_time: int } }
CREATE QUARANTINE { BOUNDED_TIME 1 SECONDS { Quarantine } }
SELECT * FROM Quarantine WHERE DIRECT FILTER DIRECT[bounded_time > 1]"""
    assert parse_and_check(text).max_lateness == 1000


@pytest.mark.parametrize(
    ("quarantine", "from_", "message", "column"),
    [
        ("CREATE QUARANTINE { FIXED_TIME 2 seconds { S } }", "S", "wall-clock", 21),
        ("CREATE QUARANTINE { BOUNDED_TIME { S } }", "S", "needs a span", 21),
        ("CREATE QUARANTINE { BOUNDED_TIME 1 SECONDS { S } }", "S, T", "exactly its set", 21),
        ("CREATE QUARANTINE { DIRECT { S, T } }", "S", "exactly its set", 21),
        ("CREATE QUARANTINE { DIRECT { U } }", "S", "unknown stream 'U'", 30),
        ("CREATE QUARANTINE { DIRECT { S } DIRECT { S } }", "S", "same streams", 34),
    ],
)
def test_what_cannot_be_honoured_exactly_is_refused_where_it_is_written(
    quarantine: str, from_: str, message: str, column: int
) -> None:
    with pytest.raises(CEQLError) as err:
        parse_and_check(_query(quarantine, from_))
    assert message in str(err.value)
    assert (err.value.line, err.value.column) == (3, column)


def test_an_unclosed_block_names_what_was_expected() -> None:
    with pytest.raises(CEQLError) as err:
        parse(_query("CREATE QUARANTINE { BOUNDED_TIME 1 SECONDS { S }"))
    assert err.value.line == 4 and "BOUNDED_TIME" in str(err.value)


def _output(text: str, stream: Sequence[dict[str, Any]], max_lateness: float | None) -> Any:
    compiled = compile_query(text, time_field=TIME_FIELD)
    evaluator = compiled.evaluator()
    source = io.BytesIO(b"".join(json.dumps(e).encode() + b"\n" for e in stream))
    found = []
    for step in steps(compiled, evaluator, source, max_lateness=max_lateness):
        found += [(ce.start, ce.end, tuple(ce.positions), ce.key) for ce in step.complex_events]
    return found, evaluator.late


@settings(max_examples=EXAMPLES, deadline=None, database=None)
@given(data=st.data(), query=queries())
def test_bounded_time_input_shuffled_within_it_gives_the_time_ordered_output(
    data: st.DataObject, query: pattern.Pattern
) -> None:
    bound = data.draw(st.integers(0, 4), label="bound")
    ordered = [dict(e, **{TIME_FIELD: i}) for i, e in enumerate(data.draw(streams(max_size=9)))]
    delays = [data.draw(st.integers(0, bound)) for _ in ordered]
    order = sorted(range(len(ordered)), key=lambda i: i + delays[i])
    shuffled = [ordered[i] for i in order]
    policy = pattern.Quarantine(pattern.QuarantineKind.BOUNDED_TIME, ("S",), bound)
    text = to_ceql(dataclasses.replace(query, quarantines=(policy,)))
    note(text)
    declared = compile_query(text, time_field=TIME_FIELD).pattern.max_lateness
    assert declared == bound
    assert _output(text, shuffled, declared) == _output(to_ceql(query), ordered, None)


def test_cerfleet_run_reorders_by_the_declared_policy_and_refuses_a_contradiction(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    query = tmp_path / "q.ceql"
    query.write_text(_query("CREATE QUARANTINE { BOUNDED_TIME 1 SECONDS { S } }"))
    events = tmp_path / "e.jsonl"
    events.write_text(
        "".join(
            json.dumps(e) + "\n"
            for e in (
                {"type": "B", "x": 1, "timestamp": 900},
                {"type": "A", "x": 1, "timestamp": 100},  # 800 ms late: within 1 s
            )
        )
    )
    assert main(["run", "--quiet", str(query), str(events)]) == 0
    out = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [ce["positions"] for ce in out] == [[0, 1]]
    assert main(["run", "--quiet", "--max-lateness", "1s", str(query), str(events)]) == 0
    capsys.readouterr()
    assert main(["run", "--quiet", "--max-lateness", "2s", str(query), str(events)]) == 2
    assert "contradicts the query's BOUNDED_TIME quarantine" in capsys.readouterr().err
