"""The ``cerfleet-origin`` header of a complex-event record, read back: which keyed
partition, query and query version made it, and its ``seq`` (written by
``cerfleet.workers.outputs``).

A replay numbers the same outputs the same way, so two records of one origin are one
complex event published twice. Without transactions, a worker that stood still past
its session timeout can publish a few outputs again after its successor has
(README, "Rebalances never stall"); ``Repeats`` lets a reader drop them.
"""

from __future__ import annotations

from collections.abc import Sequence

from cerfleet.fleet.keyed import ORIGIN_HEADER, header

__all__ = ["Repeats", "parse_origin"]

# Output partition, keyed topic, keyed partition, query, query version.
Origin = tuple[int, str, int, str, int]


def parse_origin(value: bytes) -> tuple[str, int, str, int, int]:
    """``keyed_topic:partition:query:version:seq`` as its five fields (ValueError if not)."""
    topic, partition, query, version, seq = value.decode().split(":")
    return topic, int(partition), query, int(version), int(seq)


class Repeats:
    """The outputs read so far. ``repeat(partition, headers)`` is True for a record of
    output partition ``partition`` whose origin and ``seq`` were read there before;
    records without an origin header, or with one that does not parse, are never repeats.

    In one output partition, an origin's first copies come in the order of their seqs,
    one apart, from wherever the reader starts (retention may have removed the first);
    a repeat comes later with a seq already passed. So each origin is kept as one number,
    the highest seq read with none missing since the first read (a lower seq counts as a
    repeat), and only seqs read past a gap, which a worker does not make, in a set:
    memory grows with the origins, not with the records."""

    __slots__ = ("_above", "_floor", "dropped")

    def __init__(self) -> None:
        self._floor: dict[Origin, int] = {}
        self._above: dict[Origin, set[int]] = {}
        self.dropped = 0

    def repeat(self, partition: int, headers: Sequence[tuple[str, bytes | None]] | None) -> bool:
        value = header(headers, ORIGIN_HEADER)
        if value is None:
            return False
        try:
            topic, keyed_partition, query, version, seq = parse_origin(value)
        except ValueError:
            return False  # not one of ours: shown, never dropped
        origin = (partition, topic, keyed_partition, query, version)
        floor = self._floor.get(origin)
        if floor is None:
            self._floor[origin] = seq
            return False
        above = self._above.get(origin)
        if seq <= floor or (above is not None and seq in above):
            self.dropped += 1
            return True
        if seq == floor + 1:
            floor = seq
            while above and floor + 1 in above:
                floor += 1
                above.remove(floor)
            self._floor[origin] = floor
        else:
            self._above.setdefault(origin, set()).add(seq)
        return False

    def held(self) -> int:
        """How many seqs are kept one by one (read past a gap in their origin's seqs)."""
        return sum(map(len, self._above.values()))
