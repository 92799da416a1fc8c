"""An endless stream under a window keeps memory flat: expired tECS nodes are reclaimed."""

from __future__ import annotations

import gc
import random
import resource
from collections.abc import Iterator
from typing import Any

import pytest

from cerfleet import compile_query
from cerfleet.evaluation.query_evaluator import QueryEvaluator
from cerfleet.evaluation.tecs import DEAD, Node


def _stream(n: int, seed: int = 7) -> Iterator[dict[str, Any]]:
    rng = random.Random(seed)
    types = ("A", "B", "C", "D")
    for i in range(n):
        yield {"type": rng.choice(types), "v": rng.randrange(10), "ts": i * 3}


def _reachable_nodes(ev: QueryEvaluator) -> int:
    seen: set[int] = set()
    stack: list[Node] = [
        n for sub in ev.substreams.values() for ul in sub.active.values() for n in ul
    ]
    while stack:
        n = stack.pop()
        if n is DEAD or id(n) in seen:
            continue
        seen.add(id(n))
        stack.extend(c for c in (n.left, n.right) if c is not None)
    return len(seen)


def _max_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@pytest.mark.slow
@pytest.mark.parametrize(
    "query",
    [
        # Exponentially many partial matches per window; LIMIT keeps enumeration cheap.
        "SELECT * FROM S WHERE A ; (B OR C)+ ; D FILTER A[v < 5] AND D[v = 0] "
        "WITHIN 60 EVENTS LIMIT 3",
        "SELECT * FROM S WHERE (A ; B+ ; C) AS x FILTER x[v > 1] AND C[v = 9] "
        "WITHIN 150 [ts] LIMIT 3",
    ],
)
def test_memory_is_flat_on_a_two_million_event_stream(query: str) -> None:
    compiled = compile_query(query)
    ev = compiled.evaluator()
    checkpoints = {200_000: 0.0, 1_000_000: 0.0, 2_000_000: 0.0}
    nodes: dict[int, int] = {}
    outputs = 0
    for i, event in enumerate(_stream(2_000_000), start=1):
        outputs += len(ev.process(event))
        if i in checkpoints:
            gc.collect()
            checkpoints[i] = _max_rss_mib()
            nodes[i] = _reachable_nodes(ev)
    assert outputs > 1_000  # the query really matches: memory is exercised
    # Reachable structure depends on the window, not on the stream length.
    assert nodes[2_000_000] < 3 * max(nodes[200_000], 1_000)
    # Peak RSS after 10x more events grows by less than a few MiB (allocator noise).
    assert checkpoints[2_000_000] - checkpoints[200_000] < 16, checkpoints


def test_a_substream_gets_a_reclamation_queue_with_its_first_union_node() -> None:
    # Most keys of a many-key PARTITION BY never make a union node: no queue for them.
    q = compile_query(
        "SELECT * FROM S WHERE BUY as a ; SELL as b PARTITION BY [user] WITHIN 100 MILLISECONDS",
        time_field="t",
    )
    ev = q.evaluator()
    ev.process({"type": "BUY", "user": "a", "t": 0})
    assert ev.substreams[("a",)].reclaimer is None
    ev.process({"type": "BUY", "user": "a", "t": 1})
    assert ev.substreams[("a",)].reclaimer is None  # two runs, still no union node
    assert q.restore(ev.snapshot()).substreams[("a",)].reclaimer is None
    ev.process({"type": "BUY", "user": "a", "t": 2})  # a third: a union node joins them
    reclaimer = ev.substreams[("a",)].reclaimer
    assert reclaimer is not None and reclaimer.made
    restored = q.restore(ev.snapshot())
    assert restored.substreams[("a",)].reclaimer is not None
    sell = {"type": "SELL", "user": "a", "t": 3}
    assert sorted(ce.start for ce in restored.process(sell)) == [0, 1, 2]
