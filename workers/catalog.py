"""Which queries run on a keyed topic at a given registry offset (cached view of the registry)."""

from __future__ import annotations

from cerfleet.fleet.groups import group_id_of
from cerfleet.fleet.registry import Registered, RegistryHistory


class Catalog:
    def __init__(self, registry: RegistryHistory, keyed_topic_prefix: str) -> None:
        self.registry = registry
        self.prefix = keyed_topic_prefix
        self._cache: dict[tuple[str, int], dict[str, Registered]] = {}
        self._outputs: dict[str, set[str]] = {}
        self._cached_at = registry.offset

    def keyed_topic_of(self, entry: Registered) -> str:
        return group_id_of(entry).keyed_topic(self.prefix)

    def _refresh(self) -> None:
        if self._cached_at != self.registry.offset:
            # New registry records: answers for offsets at or past the old end may change.
            self._cache.clear()
            self._outputs.clear()
            self._cached_at = self.registry.offset

    def queries_at(self, keyed_topic: str, offset: int) -> dict[str, Registered]:
        """The queries of ``keyed_topic``'s group registered below registry ``offset``."""
        self._refresh()
        key = (keyed_topic, offset)
        found = self._cache.get(key)
        if found is None:
            found = self._cache[key] = {
                name: entry
                for name, entry in self.registry.state_at(offset).items()
                if self.keyed_topic_of(entry) == keyed_topic
            }
        return found

    def removed_before(self, name: str, version: int, offset: int) -> bool:
        return self.registry.removed_before(name, version, offset)

    def entry(self, name: str, version: int) -> Registered | None:
        return self.registry.entry(name, version)

    def output_topics(self, keyed_topic: str) -> set[str]:
        """Every output topic a query of this keyed topic's group has ever had (asked at
        every checkpoint round, so cached until the registry moves)."""
        self._refresh()
        found = self._outputs.get(keyed_topic)
        if found is None:
            found = self._outputs[keyed_topic] = {
                e.spec.output_topic
                for e in self.registry.entries()
                if self.keyed_topic_of(e) == keyed_topic
            }
        return found
