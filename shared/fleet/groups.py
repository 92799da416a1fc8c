"""Live queries grouped by (input topics, PARTITION BY attributes), one keyed topic each."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from cerfleet.fleet.keyed import GroupId
from cerfleet.fleet.rdf_queries import RDF_GROUP
from cerfleet.fleet.registry import RDF_LANGUAGES, Registered


@dataclass
class Group:
    id: GroupId
    keyed_topic: str
    queries: dict[str, Registered] = field(default_factory=dict)

    @property
    def rdf(self) -> bool:
        """Whether its queries are SPAseq or RSEP-QL queries (``fleet.rdf_queries``)."""
        return self.id.partition_attrs == (RDF_GROUP,)

    @property
    def type_fields(self) -> frozenset[str]:
        return frozenset(r.spec.type_field for r in self.queries.values())


def group_id_of(entry: Registered) -> GroupId:
    if entry.spec.query_language in RDF_LANGUAGES:
        return GroupId.of(entry.spec.input_topics, (RDF_GROUP,))
    return GroupId.of(entry.spec.input_topics, entry.query.partition_attrs)


def groups_of(queries: Mapping[str, Registered], prefix: str) -> dict[GroupId, Group]:
    """The groups of ``queries``, each with its keyed topic name."""
    groups: dict[GroupId, Group] = {}
    for name, entry in sorted(queries.items()):
        gid = group_id_of(entry)
        group = groups.get(gid)
        if group is None:
            group = groups[gid] = Group(gid, gid.keyed_topic(prefix))
        group.queries[name] = entry
    return groups


def groups_by_topic(groups: Mapping[GroupId, Group]) -> dict[str, list[Group]]:
    """Input topic → the groups reading it."""
    out: dict[str, list[Group]] = {}
    for group in groups.values():
        for topic in group.id.input_topics:
            out.setdefault(topic, []).append(group)
    return out
