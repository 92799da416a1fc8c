"""Whether the events of one PARTITION BY key come from one input partition.

The time merge lets the others' records run up to a query's lateness horizon past an
input partition read to its end (``time_merge``, ``partition_keys.tolerated_skew``).
That keeps each key's events in time order only when a key's events all come from one
input partition, as Kafka's record keys place them when the producer keys records by
the PARTITION BY values. Records produced without keys, or keyed by something else,
spread every key over the partitions: a partition fetched late then brings events
behind their key's clock, taken out of order or dropped as late (a replay at 20k ev/s,
PARTITION BY a desk over every input partition, dropped 19,663 to 23,846 of 300,000
events as late). Such a group is ordered strictly across its input partitions.

A key is remembered with the partition it came from until ``limit`` keys are, then
they are all forgotten: memory stays bounded, and a spread key is found once it comes
from two partitions while remembered. With records spread, nearly every key is, so
that happens within the first records; with keyed records, never.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from cerfleet.coordinator.fetched import Fetched
from cerfleet.coordinator.partition_keys import Routing, tolerated_skew
from cerfleet.fleet.groups import Group

__all__ = ["KEYS_REMEMBERED", "KeyPlacement", "Placements", "Spread"]

log = logging.getLogger(__name__)

KEYS_REMEMBERED = 100_000  # per group: 100,000 keys of 20 bytes held 10 MiB (tracemalloc)
# The first key found in two input partitions, and the two.
Spread = tuple[bytes, tuple[str, int], tuple[str, int]]


class KeyPlacement:
    """The input partition each key of one group came from, until one came from two."""

    __slots__ = ("_owner", "limit", "spread")

    def __init__(self, limit: int = KEYS_REMEMBERED) -> None:
        self.limit = limit
        self._owner: dict[bytes, tuple[str, int]] = {}
        self.spread: Spread | None = None

    def see(self, tp: tuple[str, int], keys: Sequence[Routing]) -> Spread | None:
        """Take the keys of records read from ``tp``; the key that came from another
        input partition, if this found one (once: later calls say None)."""
        if self.spread is not None:
            return None
        owner = self._owner
        for key in set(keys):
            if type(key) is not bytes:
                continue  # a record the group skips (no key, or no type)
            first = owner.setdefault(key, tp)
            if first != tp:
                self.spread = (key, first, tp)
                owner.clear()  # no longer needed
                return self.spread
        if len(owner) > self.limit:
            owner.clear()
        return None


class Placements:
    """The key placement of each group whose queries' tolerated skew relies on it."""

    def __init__(self, limit: int = KEYS_REMEMBERED) -> None:
        self.limit = limit
        self._watched: dict[str, KeyPlacement] = {}  # per keyed topic
        # Keyed topics of the groups found spread: kept over routing tables, as a
        # group's keyed topic is the same for the same queries' group.
        self.spread: set[str] = set()

    def cover(self, by_topic: Mapping[str, Sequence[Group]]) -> None:
        """Watch the groups of a new routing table (``groups_by_topic``) that rely on it."""
        relying = {
            g.keyed_topic
            for groups in by_topic.values()
            for g in groups
            if tolerated_skew([g]) != tolerated_skew([g], {g.keyed_topic})
        }
        watched = self._watched
        for topic in [t for t in watched if t not in relying]:
            del watched[topic]
        for topic in relying - self.spread - watched.keys():
            watched[topic] = KeyPlacement(self.limit)

    def see(self, fetched: Fetched) -> bool:
        """Take the routing of ``fetched``; whether it found a group spread."""
        watched = self._watched
        if not watched:
            return False
        found = False
        for g, group in enumerate(fetched.extractor.groups):
            placement = watched.get(group.keyed_topic)
            spread = (
                None if placement is None else placement.see(fetched.tp, fetched.extracted.keys[g])
            )
            if spread is None:
                continue
            found = True
            del watched[group.keyed_topic]
            self.spread.add(group.keyed_topic)
            key, (t1, p1), (t2, p2) = spread
            log.warning(
                "queries %s: the PARTITION BY key %s came from %s[%d] and from %s[%d]; "
                "their input partitions are now merged in strict time order (records keyed "
                "by the PARTITION BY values keep each key in one partition, and the merge "
                "then lets partitions run up to the lateness horizon apart)",
                ", ".join(sorted(group.queries)),
                key.decode(errors="replace"),
                t1,
                p1,
                t2,
                p2,
            )
        return found
