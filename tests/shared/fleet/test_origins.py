"""``Repeats``: in an output partition read in order, a record is a repeat exactly when it
is a later copy of an output already read; records that carry no origin are never
repeats."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from cerfleet.fleet.keyed import ORIGIN_HEADER
from cerfleet.fleet.origins import Repeats, parse_origin

Origin = tuple[str, int, str, int]
ORIGINS: list[Origin] = [("cerfleet.keyed.name.1", 0, "q", 1), ("cerfleet.keyed.name.1", 3, "q", 1)]
ORIGINS.append(("cerfleet.keyed.name.1", 0, "q", 2))  # a new version numbers from 0 again


def headers(origin: Origin, seq: int) -> list[tuple[str, bytes | None]]:
    return [("other", b"x"), (ORIGIN_HEADER, ":".join(map(str, (*origin, seq))).encode())]


@given(
    st.randoms(use_true_random=False),
    st.lists(st.tuples(st.integers(0, 1), st.integers(0, 5), st.integers(0, 60)), max_size=6),
    st.floats(0, 0.5),
)
def test_a_record_is_a_repeat_exactly_when_it_is_a_later_copy(
    rnd: random.Random, streams: list[tuple[int, int, int]], repeat_rate: float
) -> None:
    """Streams of (output partition, origin), each from a first seq (as after retention)
    in order, interleaved at random, with later copies of outputs already sent among them
    (a zombie's in flight, or the same output twice in a row)."""
    queues: dict[tuple[int, Origin], list[int]] = {}
    for i, (partition, first, n) in enumerate(streams):
        queues.setdefault((partition, ORIGINS[i % len(ORIGINS)]), list(range(first, first + n)))
    sent: dict[tuple[int, Origin], list[int]] = {k: [] for k in queues}
    repeats, kept, copies = Repeats(), [], 0
    while any(queues.values()):
        key = rnd.choice([k for k, q in queues.items() if q])
        partition, origin = key
        if sent[key] and rnd.random() < repeat_rate:
            seq, is_copy = rnd.choice(sent[key]), True
        else:
            seq, is_copy = queues[key].pop(0), False
            sent[key].append(seq)
        assert repeats.repeat(partition, headers(origin, seq)) == is_copy, (key, seq)
        copies += is_copy
        if not is_copy:
            kept.append((key, seq))
    assert sorted(kept) == sorted((k, s) for k, seqs in sent.items() for s in seqs)
    assert repeats.dropped == copies
    assert repeats.held() == 0


def test_seqs_past_a_gap_are_kept_one_by_one_until_it_closes() -> None:
    # Not what a worker writes, but never a wrong answer: 0, 2, 2, 1, 1, 3, 3.
    repeats, origin = Repeats(), ORIGINS[0]
    answers = [repeats.repeat(0, headers(origin, s)) for s in (0, 2, 2)]
    assert answers == [False, False, True] and repeats.held() == 1
    answers = [repeats.repeat(0, headers(origin, s)) for s in (1, 1, 3, 3)]
    assert answers == [False, True, False, True] and repeats.held() == 0
    assert repeats.dropped == 3


def test_one_origin_in_two_output_partitions_is_two_origins() -> None:
    repeats, origin = Repeats(), ORIGINS[0]
    assert not repeats.repeat(0, headers(origin, 5))
    assert not repeats.repeat(1, headers(origin, 5))
    assert repeats.repeat(1, headers(origin, 5))


def test_records_without_an_origin_are_never_repeats() -> None:
    repeats = Repeats()
    for _ in range(2):
        assert not repeats.repeat(0, None)
        assert not repeats.repeat(0, [])
        assert not repeats.repeat(0, [("other", b"x")])
        assert not repeats.repeat(0, [(ORIGIN_HEADER, None)])
        assert not repeats.repeat(0, [(ORIGIN_HEADER, b"not an origin")])
        assert not repeats.repeat(0, [(ORIGIN_HEADER, b"t:x:q:1:0")])
    assert repeats.dropped == 0


def test_parse_origin_reads_the_five_fields() -> None:
    tag = b"cerfleet.keyed.name.1:3:q:2:17"
    assert parse_origin(tag) == ("cerfleet.keyed.name.1", 3, "q", 2, 17)
