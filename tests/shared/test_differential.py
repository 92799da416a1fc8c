"""Differential testing: the engine against the brute-force oracle.

Random queries (printed to CEQL text and compiled like any user query) run over
random small streams; the engine's complex events must be exactly the oracle's,
each emitted once, by the ``process`` call of its ``end`` event. A second test
checks that snapshotting and restoring mid-stream changes nothing.

``CERFLEET_DIFF_EXAMPLES`` sets the number of examples per test (default 2500).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from hypothesis import given, note, settings
from hypothesis import strategies as st

from shared.ceql import ast
from shared.ceql.printer import to_ceql
from shared.complex_event import ComplexEvent
from shared.query import compile_query
from tests.shared.oracle import OracleResult, oracle_eval
from tests.shared.strategies import TIME_FIELD, queries, streams

MAX_EXAMPLES = int(os.environ.get("CERFLEET_DIFF_EXAMPLES", "2500"))

Stream = list[dict[str, Any]]


def describe(query: ast.Query, stream: Sequence[Mapping[str, Any]]) -> str:
    """The failing input in a form that can be pasted into ``cerfleet run``."""
    lines = ["query:", to_ceql(query), f"stream ({len(stream)} events, JSON lines):"]
    lines += [json.dumps(event) for event in stream]
    return "\n".join(lines)


def _triples(results: Iterable[OracleResult]) -> str:
    return "\n".join(f"  {r}" for r in sorted(results, key=repr)) or "  (none)"


def _as_result(ce: ComplexEvent) -> OracleResult:
    return (ce.start, ce.end, tuple(ce.positions), ce.key)


@settings(max_examples=MAX_EXAMPLES, deadline=None, database=None)
@given(query=queries(), stream=streams())
def test_engine_matches_oracle(query: ast.Query, stream: Stream) -> None:
    context = describe(query, stream)
    note(context)  # shown for crashes too, not just failed assertions
    expected = oracle_eval(query, stream, time_field=TIME_FIELD)

    evaluator = compile_query(to_ceql(query), time_field=TIME_FIELD).evaluator()
    emitted: list[OracleResult] = []
    for index, event in enumerate(stream):
        # A copy, so an engine that mutated its input could not hide it from the checks.
        for ce in evaluator.process(dict(event)):
            result = _as_result(ce)
            assert ce.end == index, (
                f"{context}\n{result} was emitted while processing event {index}"
            )
            assert tuple(ce.events) == tuple(stream[p] for p in ce.positions), (
                f"{context}\n{result} carries the wrong events: {ce.events}"
            )
            emitted.append(result)

    duplicates = {r for r in emitted if emitted.count(r) > 1}
    assert not duplicates, f"{context}\nemitted more than once:\n{_triples(duplicates)}"
    got = set(emitted)
    assert got == expected, (
        f"{context}\n"
        f"missing (oracle only):\n{_triples(expected - got)}\n"
        f"extra (engine only):\n{_triples(got - expected)}"
    )


def _outputs(complex_events: Iterable[ComplexEvent]) -> list[str]:
    """One process() call's output, order-insensitive but duplicate-sensitive."""
    return sorted(json.dumps(ce.to_dict(), sort_keys=True) for ce in complex_events)


@settings(max_examples=MAX_EXAMPLES, deadline=None, database=None)
@given(query=queries(), stream=streams(), every=st.integers(min_value=1, max_value=3))
def test_snapshot_restore_mid_stream(query: ast.Query, stream: Stream, every: int) -> None:
    """Restoring after every ``every``-th event gives the outputs of an uninterrupted run."""
    context = describe(query, stream) + f"\nrestored after every {every} event(s)"
    note(context)
    text = to_ceql(query)
    compiled = compile_query(text, time_field=TIME_FIELD)

    straight = compiled.evaluator()
    expected = [_outputs(straight.process(dict(event))) for event in stream]

    # Restore alternately into the same compiled query and into a fresh compilation
    # of the same text, as a restarted process would.
    recompiled = compile_query(text, time_field=TIME_FIELD)
    evaluator = compiled.evaluator()
    got = []
    for index, event in enumerate(stream):
        got.append(_outputs(evaluator.process(dict(event))))
        if (index + 1) % every == 0:
            target = recompiled if (index + 1) // every % 2 else compiled
            evaluator = target.restore(evaluator.snapshot())
    for index, (want, have) in enumerate(zip(expected, got, strict=True)):
        assert have == want, (
            f"{context}\nevent {index}: uninterrupted run emitted\n  {want}\n"
            f"restored run emitted\n  {have}"
        )
