"""Kept JSON bytes cost their own size, and say what orjson says."""

from __future__ import annotations

import tracemalloc

import orjson
from hypothesis import given
from hypothesis import strategies as st

from cerfleet.fleet.keyed import one_string_key, scalar_key
from cerfleet.kept_json import dumps_kept

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=10,
)


@given(JSON)
def test_the_text_is_orjsons(value: object) -> None:
    assert dumps_kept(value) == orjson.dumps(value)
    assert dumps_kept(value, option=orjson.OPT_SORT_KEYS) == orjson.dumps(
        value, option=orjson.OPT_SORT_KEYS
    )


def _bytes_held(make: object) -> float:
    tracemalloc.start()
    try:
        held = [make(f"user-{i}") for i in range(2000)]  # type: ignore[operator]
        size = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert len(held) == 2000
    return size / len(held)


def test_a_kept_key_costs_about_its_length() -> None:
    # 20-odd bytes of text, a bytes header and the list's slot: well under 200 bytes,
    # where orjson's own result holds its write buffer (4 KiB in 3.12 and later).
    assert _bytes_held(lambda s: dumps_kept([s])) < 200


def test_the_coordinators_key_cache_holds_small_keys() -> None:
    one_string_key.cache_clear()
    assert _bytes_held(one_string_key) < 400  # the cache's own entry included
    assert one_string_key("user-1") == b'["user-1"]'


def test_the_coordinators_cache_of_int_and_several_values_holds_small_keys() -> None:
    scalar_key.cache_clear()
    assert _bytes_held(lambda s: scalar_key((int(s[5:]) + 10**12,))) < 400
    scalar_key.cache_clear()
    assert _bytes_held(lambda s: scalar_key((s, 7))) < 400
    assert scalar_key(("user-1", 7)) == b'["user-1",7]'
