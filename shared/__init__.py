"""cerfleet's engine: CEQL → CEA → tECS, with CORE's guarantees.

Compile a query once, then feed events to evaluators::

    from shared import compile_query
    query = compile_query(open("q.ceql").read())
    evaluator = query.evaluator()
    for event in events:
        for complex_event in evaluator.process(event):
            print(complex_event.to_dict())
    state = evaluator.snapshot()            # bytes
    evaluator = query.restore(state)        # continues exactly where it stopped

This package imports neither Kafka nor Spark; the fleet and the backfill build on it.
"""

from shared.complex_event import ComplexEvent
from shared.errors import CEQLError, CerfleetError, EventError, SnapshotError
from shared.evaluation.query_evaluator import QueryEvaluator
from shared.query import CompiledQuery, compile_query

__all__ = [
    "CEQLError",
    "CerfleetError",
    "CompiledQuery",
    "ComplexEvent",
    "EventError",
    "QueryEvaluator",
    "SnapshotError",
    "compile_query",
]
