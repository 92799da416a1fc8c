"""The per-query time budget (``cerfleet.workers.budget``) in ``PartitionState``: a query
over budget is suspended from the offset after the batch, the others are untouched, a
recorded suspension holds through a crash, an unrecorded one binds nothing, and a new
version or a removal ends it.

Evaluation time is made deterministic: the partition reads a fake clock, which the
slow query's evaluator advances by one second per record it is given (the fast query
takes no time). The expected answers come from the embedded engine over the whole
stream, cut at the offset the test itself derives from the batches."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from cerfleet.evaluation.query_evaluator import QueryEvaluator
from cerfleet.fleet.registry import RegistryHistory
from cerfleet.query import compile_query
from cerfleet.workers.budget import Suspension, Suspensions
from cerfleet.workers.catalog import Catalog
from cerfleet.workers.checkpoint import Checkpoint
from cerfleet.workers.partition import PartitionState, Record
from tests.workers.test_partition import INPUT, PREFIX, register, split

SLOW = "SELECT * FROM S WHERE A ; B WITHIN 5 EVENTS"
FAST = "SELECT * FROM S WHERE B ; A WITHIN 3 EVENTS"
NEW = "SELECT * FROM S WHERE A ; A WITHIN 2 EVENTS"
BUDGET = 4.5  # the slow query is over it on a batch giving it 5 records or more

Row = tuple[str, int, int, tuple[int, ...]]  # query, version, seq, positions


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Queries:
    """A registry of SLOW and FAST (and later versions), whose SLOW evaluators advance
    ``clock`` by ``cost`` seconds per record."""

    def __init__(self, cost: float = 1.0) -> None:
        self.clock = Clock()
        self.cost = cost
        self.history = RegistryHistory()
        register(self.history, 0, "fast", FAST)
        self.register(1, "slow", SLOW)
        self.catalog = Catalog(self.history, PREFIX)
        (self.topic,) = {self.catalog.keyed_topic_of(e) for e in self.history.current.values()}

    def register(self, offset: int, name: str, ceql: str | None) -> None:
        register(self.history, offset, name, ceql)
        entry = self.history.current.get(name)
        if entry is None or name != "slow":
            return
        query = entry.query
        make, restore = query.evaluator, query.restore

        def slowed(ev: QueryEvaluator) -> QueryEvaluator:
            columnar = ev.process_columns

            def process_columns(columns: Any, **kw: Any) -> Any:
                self.clock.now += self.cost * len(kw["positions"])
                return columnar(columns, **kw)

            ev.process_columns = process_columns  # type: ignore[method-assign]
            return ev

        query.evaluator = lambda: slowed(make())  # type: ignore[method-assign]
        query.restore = lambda data: slowed(restore(data))  # type: ignore[method-assign]

    def state(self, budget: float = BUDGET, ckpt: Checkpoint | None = None, **kw: Any) -> Any:
        published: dict[tuple[str, int], int] = kw.get("published", {})
        s = PartitionState.restore(self.catalog, self.topic, 0, ckpt, published)
        s.time_budget = budget
        s.clock = self.clock
        return s


def records(kinds: str, registry: int = 2, first: int = 0) -> list[Record]:
    return [
        Record(first + i, orjson.dumps({"type": k}), (INPUT, 0, first + i), registry)
        for i, k in enumerate(kinds)
    ]


def run(state: PartitionState, batches: Sequence[Sequence[Record]]) -> list[Row]:
    out: list[Row] = []
    for batch in batches:
        outputs, dead = state.process(batch)
        assert dead == []
        out += [(o.run.name, o.run.entry.version, o.seq, o.ce.positions) for o in outputs]
    return out


def expected(ceql: str, recs: Sequence[Record], below: int | None = None) -> list[tuple[int, ...]]:
    """The embedded engine's complex events over ``recs``, those ending below ``below``."""
    events = [orjson.loads(r.value or b"") for r in recs]
    found = compile_query(ceql).evaluator().process_batch(events, [r.offset for r in recs])
    return [ce.positions for ce in found if below is None or ce.end < below]


def first_over(batches: Sequence[Sequence[Record]]) -> int | None:
    """The offset SLOW is suspended from: after the first batch of 5 records or more."""
    for batch in batches:
        if len(batch) * 1.0 > BUDGET:
            return batch[-1].offset + 1
    return None


def of(rows: list[Row], name: str) -> list[tuple[int, ...]]:
    return [r[3] for r in rows if r[0] == name]


kinds_st = st.text("AAB", min_size=1, max_size=40)
cuts_st = st.lists(st.integers(1, 39), max_size=8)


@settings(max_examples=80, deadline=None, database=None)
@given(kinds=kinds_st, cuts=cuts_st)
def test_the_slow_query_stops_at_the_batch_over_budget_the_fast_one_never(
    kinds: str, cuts: list[int]
) -> None:
    queries = Queries()
    recs = records(kinds)
    batches = split(recs, cuts)
    state = queries.state()
    out = run(state, batches)
    stop = first_over(batches)
    assert of(out, "fast") == expected(FAST, recs)
    assert of(out, "slow") == expected(SLOW, recs, stop)
    if stop is None:
        assert state.suspensions.by_name == {}
    else:
        (s,) = state.suspensions.by_name.values()
        assert (s.version, s.offset, s.budget, s.recorded) == (1, stop, BUDGET, False)
        assert s.seconds >= 5 and s.records >= 5
        assert state.suspended() == {}  # not reported before a checkpoint records it
    # Numbering is unbroken: the n-th output of each query is numbered n.
    for name in ("fast", "slow"):
        assert [r[2] for r in out if r[0] == name] == list(range(len(of(out, name))))


def test_no_budget_or_within_it_nothing_is_suspended() -> None:
    recs = records("AB" * 20)
    for budget in (0.0, 41.0):
        queries = Queries()
        state = queries.state(budget)
        out = run(state, [recs])
        assert of(out, "slow") == expected(SLOW, recs) and of(out, "slow")
        assert state.suspensions.by_name == {}


@settings(max_examples=80, deadline=None, database=None)
@given(
    kinds=kinds_st,
    cuts=cuts_st,
    recuts=cuts_st,
    crash=st.integers(0, 40),
    later=st.booleans(),
    replay_cost=st.sampled_from([0.0, 1.0, 100.0]),
)
def test_a_recorded_suspension_holds_from_the_same_offset_after_a_crash(
    kinds: str,
    cuts: list[int],
    recuts: list[int],
    crash: int,
    later: bool,
    replay_cost: float,
) -> None:
    """The worker checkpoints right after a suspension; the successor restores that
    checkpoint (or a later one), replays the rest batched differently, on a machine
    faster or slower than its predecessor's, and publishes exactly what one run with
    that suspension would have."""
    queries = Queries()
    recs = records(kinds)
    batches = split(recs, cuts)
    stop = first_over(batches)
    if stop is None:
        return
    state = queries.state()
    published: list[Row] = []
    ckpt: Checkpoint | None = None
    for batch in batches:
        published += run(state, [batch])
        if ckpt is None and state.suspensions.unrecorded():
            ckpt = Checkpoint.decode(state.checkpoint().encode())  # the forced round
            state.suspensions.mark_recorded("test")
        elif ckpt is not None and later:
            ckpt = Checkpoint.decode(state.checkpoint().encode())  # a periodic round
        if batch[-1].offset >= crash and ckpt is not None:
            break
    assert ckpt is not None
    assert ckpt.suspended["slow"].offset == stop
    seqs: dict[tuple[str, int], int] = {}
    for name, version, seq, _ in published:
        seqs[(name, version)] = max(seq, seqs.get((name, version), -1))
    queries.cost = replay_cost
    successor = queries.state(ckpt=ckpt, published=seqs)
    rest = [r for r in recs if r.offset >= ckpt.next_offset]
    published += run(successor, split(rest, recuts))
    assert of(published, "fast") == expected(FAST, recs)
    assert of(published, "slow") == expected(SLOW, recs, stop)
    assert {n: s.offset for n, s in successor.suspended().items()} == {"slow": stop}


@settings(max_examples=80, deadline=None, database=None)
@given(kinds=kinds_st, cuts=cuts_st, recuts=cuts_st, restart=st.integers(0, 40))
def test_an_unrecorded_suspension_binds_nothing(
    kinds: str, cuts: list[int], recuts: list[int], restart: int
) -> None:
    """A crash before the suspension's checkpoint: the successor replays from an older
    checkpoint (taken after the records below ``restart``) on a machine where every
    batch is over budget. It decides anew, never while it recomputes what its
    predecessor published, so the output topic holds the output of one run."""
    queries = Queries()
    recs = records(kinds)
    batches = split(recs, cuts)
    state = queries.state()
    published: list[Row] = []
    ckpt: Checkpoint | None = None
    for batch in batches:
        if state.suspensions.unrecorded():
            break  # the crash: the suspension was never written
        if batch[0].offset >= restart and ckpt is None:
            ckpt = Checkpoint.decode(state.checkpoint().encode())
        published += run(state, [batch])
    assert ckpt is None or ckpt.suspended == {}
    seqs: dict[tuple[str, int], int] = {}
    for name, version, seq, _ in published:
        seqs[(name, version)] = max(seq, seqs.get((name, version), -1))
    queries.cost = 100.0  # every batch of the successor is over budget
    successor = queries.state(ckpt=ckpt, published=seqs)
    rest = [r for r in recs if ckpt is None or r.offset >= ckpt.next_offset]
    replayed = run(successor, split(rest, recuts))
    suspended = successor.suspensions.by_name.get("slow")
    stop = None if suspended is None else suspended.offset
    everything = published + replayed
    assert of(everything, "fast") == expected(FAST, recs)
    assert of(everything, "slow") == expected(SLOW, recs, stop)
    # What the predecessor published lies below the successor's decision.
    assert all(stop is None or p[-1] < stop for p in of(published, "slow"))


def _suspended_fleet() -> tuple[Queries, PartitionState, list[Record]]:
    queries = Queries()
    recs = records("ABABABAB")
    state = queries.state()
    run(state, [recs])
    state.suspensions.mark_recorded("test")
    assert {n: s.offset for n, s in state.suspended().items()} == {"slow": 8}
    return queries, state, recs


def test_a_new_version_runs_from_its_own_state() -> None:
    queries, state, recs = _suspended_fleet()
    assert of(run(state, [records("AB", first=8)]), "slow") == []  # still suspended
    queries.register(2, "slow", NEW)  # the new version, at registry offset 2
    queries.cost = 0.0
    more = records("AABAAA", registry=3, first=10)
    out = run(state, [more])
    assert [(r[1], r[2], r[3]) for r in out if r[0] == "slow"] == [
        (2, seq, p) for seq, p in enumerate(expected(NEW, more))
    ]
    whole = expected(FAST, [*recs, *records("AB", first=8), *more])
    assert of(out, "fast") == [p for p in whole if p[-1] >= 10]
    assert state.suspended() == {}
    assert Checkpoint.decode(state.checkpoint().encode()).suspended == {}


def test_removal_ends_the_suspension() -> None:
    queries, state, _ = _suspended_fleet()
    queries.register(2, "slow", None)
    run(state, [records("AB", registry=3, first=8)])
    assert "slow" not in state.runs and state.suspended() == {}
    assert Checkpoint.decode(state.checkpoint().encode()).suspended == {}


def test_the_suspended_query_keeps_its_state_in_checkpoints() -> None:
    _, state, _ = _suspended_fleet()
    ckpt = Checkpoint.decode(state.checkpoint().encode())
    assert "slow" in ckpt.queries and ckpt.queries["slow"].emitted == len(
        expected(SLOW, records("ABABABAB"))
    )
    s = ckpt.suspended["slow"]
    assert s == Suspension(1, 8, s.seconds, 8, BUDGET, recorded=True)
    # A checkpoint written before suspensions existed reads as none.
    header = {**orjson.loads(Checkpoint("t", 0, 5).encode()[9:])}
    del header["suspended"]
    head = orjson.dumps(header)
    old = b"CFCK1" + len(head).to_bytes(4, "big") + head
    assert Checkpoint.decode(old).suspended == {}


def test_judging() -> None:
    s = Suspensions()
    assert s.judge("q", 1, 2.0, 10, 0.0, 50, False) is None  # no budget
    assert s.judge("q", 1, 2.0, 10, 2.0, 50, False) is None  # not over it
    assert s.judge("q", 1, 2.5, 10, 2.0, 50, True) is None  # replaying
    got = s.judge("q", 1, 2.5, 10, 2.0, 50, False)
    assert got == Suspension(1, 50, 2.5, 10, 2.0)
    assert s.judge("q", 1, 9.0, 10, 2.0, 60, False) is None  # already suspended
    assert s.rows("q", 1, [0, 1, 2], [49, 50, 51]) == [0]
    assert s.rows("q", 2, [0, 1, 2], [49, 50, 51]) == [0, 1, 2]  # another version
    assert s.live({"q": 2}) == {} and s.live({"q": 1}) == {"q": got}
    assert s.unrecorded()
    s.mark_recorded("here")
    assert not s.unrecorded() and s.by_name["q"].recorded
    assert "10 records took 2.500 s, over the budget of 2 s" in got.reason()
    # A new version over budget is judged afresh.
    assert s.judge("q", 2, 3.0, 4, 2.0, 70, False) == Suspension(2, 70, 3.0, 4, 2.0)
