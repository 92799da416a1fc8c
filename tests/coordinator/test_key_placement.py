"""Which groups' keys come from more than one input partition (``key_placement``)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from cerfleet.coordinator.fetched import Fetched
from cerfleet.coordinator.key_placement import KeyPlacement, Placements
from cerfleet.coordinator.partition_keys import Extracted, MissingType
from cerfleet.fleet.groups import groups_by_topic, groups_of
from cerfleet.fleet.registry import QuerySpec, Registered

TPS = [("in", 0), ("in", 1), ("other", 0)]
KEYS = st.one_of(st.sampled_from([b'["a"]', b'["b"]', b'["c"]', b'["d"]']), st.none())
BATCHES = st.lists(st.tuples(st.sampled_from(TPS), st.lists(KEYS, max_size=6)), max_size=12)


@settings(max_examples=500, deadline=None)
@given(BATCHES)
def test_a_key_from_two_partitions_is_found_at_the_batch_that_brings_it(
    batches: list[tuple[tuple[str, int], list[Any]]],
) -> None:
    placement = KeyPlacement()
    first: dict[bytes, tuple[str, int]] = {}  # the reference: every key ever seen
    found_at = None
    for n, (tp, keys) in enumerate(batches):
        spread_here = any(first.setdefault(k, tp) != tp for k in keys if k is not None)
        if spread_here and found_at is None:
            found_at = n
        assert (placement.see(tp, keys) is not None) == (found_at == n)
    assert (placement.spread is not None) == (found_at is not None)
    if placement.spread is not None:
        key, one, two = placement.spread
        assert one != two and first[key] == one


@settings(max_examples=300, deadline=None)
@given(BATCHES, st.integers(0, 3))
def test_forgetting_keys_never_makes_a_placed_key_spread(
    batches: list[tuple[tuple[str, int], list[Any]]], limit: int
) -> None:
    """With a bound on the keys remembered, a spread may be missed, never invented."""
    placement = KeyPlacement(limit)
    seen: dict[bytes, set[tuple[str, int]]] = {}  # every partition each key came from
    for tp, keys in batches:
        for k in keys:
            if k is not None:
                seen.setdefault(k, set()).add(tp)
        spread = placement.see(tp, keys)
        if spread is not None:
            key, one, two = spread
            assert two == tp != one and {one, two} <= seen[key]


def test_records_a_group_skips_have_no_place() -> None:
    placement = KeyPlacement()
    assert placement.see(("in", 0), [None, MissingType("type"), b'["a"]']) is None
    assert placement.see(("in", 1), [None, MissingType("type"), b'["b"]']) is None
    assert placement.see(("in", 1), [b'["a"]']) == (b'["a"]', ("in", 0), ("in", 1))
    assert placement.spread == (b'["a"]', ("in", 0), ("in", 1))
    assert placement.see(("in", 2), [b'["a"]']) is None  # said once


def _registered(name: str, ceql: str, topics: tuple[str, ...] = ("in",)) -> Registered:
    spec = QuerySpec(name=name, ceql=ceql, input_topics=topics, output_topic="out", time_field="t")
    return Registered(spec, 0, spec.compile())


def _fetched(tp: tuple[str, int], extractor: Any, keys: list[list[Any]]) -> Fetched:
    n = len(keys[0])
    extracted = Extracted({}, keys, [float(i) for i in range(n)])
    return Fetched(
        tp, [], [None] * n, list(range(n)), [(0, 0)] * n, extractor, extracted, b"0", b""
    )


class _Extractor:
    def __init__(self, groups: list[Any]) -> None:
        self.groups = groups


def test_only_groups_that_rely_on_placement_are_watched_and_a_spread_one_stays_spread() -> None:
    keyed = _registered("k", "SELECT * FROM S WHERE A ; B PARTITION BY [n] WITHIN 5 seconds")
    other = _registered("o", "SELECT * FROM S WHERE A ; B PARTITION BY [m] WITHIN 5 seconds")
    single = _registered("s", "SELECT * FROM S WHERE A ; B WITHIN 5 seconds")
    entries = {e.spec.name: e for e in (keyed, other, single)}
    by_topic = groups_by_topic(groups_of(entries, "k."))
    placements = Placements()
    placements.cover(by_topic)
    groups = by_topic["in"]
    extractor = _Extractor(groups)
    n_key = [[b'["x"]'] if g.queries.keys() == {"k"} else [b'["y"]'] for g in groups]
    assert not placements.see(_fetched(("in", 0), extractor, n_key))
    # The single-key group's one key on every partition is its nature, not a spread.
    single_key = [[b"[]"] if g.queries.keys() == {"s"} else [b'["z"]'] for g in groups]
    assert not placements.see(_fetched(("in", 1), extractor, single_key))
    assert placements.see(_fetched(("in", 1), extractor, n_key))
    spread = {g.keyed_topic for g in groups if g.queries.keys() & {"k", "o"}}
    assert placements.spread == spread
    placements.cover(by_topic)  # a new routing table: still spread, not watched again
    assert placements.spread == spread
    assert not placements.see(_fetched(("in", 2), extractor, n_key))
