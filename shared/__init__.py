"""cerfleet: complex event recognition with CORE's guarantees (query → pattern form →
CEA → tECS).

Compile a query once, then feed events to evaluators::

    from cerfleet import compile_query
    query = compile_query(open("q.ceql").read())
    evaluator = query.evaluator()
    for event in events:
        for complex_event in evaluator.process(event):
            print(complex_event.to_dict())
    state = evaluator.snapshot()            # bytes
    evaluator = query.restore(state)        # continues exactly where it stopped

The engine imports neither Kafka nor Spark. ``cerfleet.fleet`` holds what the fleet's
services share; the services are ``cerfleet.coordinator`` and ``cerfleet.workers`` (its
Spark jobs under ``cerfleet.workers.backfill``).
"""

from cerfleet.complex_event import ComplexEvent
from cerfleet.errors import CEQLError, CerfleetError, EventError, SnapshotError
from cerfleet.evaluation.query_evaluator import QueryEvaluator
from cerfleet.pattern import Pattern
from cerfleet.query import CompiledQuery, compile_query

__all__ = [
    "CEQLError",
    "CerfleetError",
    "CompiledQuery",
    "ComplexEvent",
    "EventError",
    "Pattern",
    "QueryEvaluator",
    "SnapshotError",
    "compile_query",
]
