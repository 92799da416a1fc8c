"""The evicted keys' clocks against a plain dict that forgets nothing.

``EvictedClocks`` may keep a clock below the floor a while longer, never forget one at
or above it, and must answer every key it holds with the clock last given for it.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from cerfleet.evaluation.evicted import GENERATIONS, EvictedClocks

KEYS = st.one_of(
    st.tuples(st.sampled_from(["a", "b", "c", 1, 2.0, True])),
    st.tuples(st.sampled_from(["a", 1]), st.sampled_from(["a", "b", 0])),
)
STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("set"), KEYS, st.integers(0, 40)),
        st.tuples(st.just("pop"), KEYS, st.just(0)),
        st.tuples(st.just("expire"), st.just(()), st.integers(0, 6)),
    ),
    max_size=60,
)


@settings(max_examples=400, deadline=None, database=None)
@given(steps=STEPS, lateness=st.integers(0, 12))
def test_the_store_answers_as_a_dict_above_the_floor(
    steps: list[tuple[str, Any, int]], lateness: int
) -> None:
    store = EvictedClocks()
    model: dict[Any, float] = {}
    newest = floor = float("-inf")
    for op, key, value in steps:
        if op == "set":
            # As the evaluator stores them: a clock no later than the newest one seen.
            newest = max(newest, value)
            store[key] = value
            model[key] = value
        elif op == "pop":
            got, want = store.pop_clock(key), model.pop(key, None)
            assert got == want or (got is None and want is not None and want < floor)
        else:
            floor = max(floor, newest - lateness - value)
            store.expire(floor, lateness)
        for k, clock in model.items():
            assert store.get(k) in ({clock, None} if clock < floor else {clock})
        assert all(model[k] == clock for k, clock in store.items())


def test_a_one_value_key_is_stored_bare_and_read_as_a_tuple() -> None:
    store = EvictedClocks([(("u1",), 5), (("u1", 2), 6)])
    assert dict(store) == {("u1",): 5, ("u1", 2): 6}
    assert store.get(("u2",), -1) == -1
    store[(1,)] = 3  # 1, 1.0 and True are one key, as in a dict of tuples
    assert store.get((1.0,)) == store[(True,)] == 3 and len(store) == 3


def test_generations_stay_few_and_old_clocks_go_on_a_long_stream() -> None:
    store = EvictedClocks()
    lateness = 1_000
    for t in range(20_000):
        # One key per clock, as one-event keys do, stored in no clock order between two
        # expiries (as a columnar batch evicts its keys).
        t = t - t % 50 + (t * 7) % 50
        store[(f"u{t}",)] = t
        if t % 50 == 0:
            store.expire(t - lateness, lateness)
    store.expire(19_999 - lateness, lateness)
    # Everything the floor has not passed, and at most a generation's span more.
    assert 1_000 <= len(store) <= 1_000 + lateness // GENERATIONS + 50
    assert len(store._generations) <= 2 * GENERATIONS + 1
    assert store.get(("u0",)) is None and store.get(("u19999",)) == 19_999
