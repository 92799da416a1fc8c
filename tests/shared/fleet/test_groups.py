"""Query groups: one per (input topics, PARTITION BY attributes), one keyed topic each."""

from __future__ import annotations

from cerfleet.fleet.groups import group_id_of, groups_by_topic, groups_of
from cerfleet.fleet.keyed import GroupId
from cerfleet.fleet.registry import QuerySpec, Registered

PREFIX = "cerfleet.keyed."


def entry(
    name: str,
    inputs: tuple[str, ...],
    partition: str = "",
    type_field: str = "type",
    version: int = 0,
) -> Registered:
    ceql = "SELECT * FROM S WHERE A ; B" + (f" PARTITION BY [{partition}]" if partition else "")
    spec = QuerySpec(
        name=name, ceql=ceql, input_topics=inputs, output_topic="out", type_field=type_field
    )
    return Registered(spec, version, spec.compile())


QUERIES = {
    "a": entry("a", ("stock",), "name"),
    "b": entry("b", ("stock",), "name", type_field="kind"),
    "c": entry("c", ("stock",)),
    "d": entry("d", ("stock", "news"), "name"),
    "e": entry("e", ("news", "stock", "news"), "name"),  # same inputs as d, in another order
    "f": entry("f", ("stock",), "name, market"),
    "g": entry("g", ("stock",), "market, name"),  # same attributes as f, in another order
}


def test_group_id_of_a_query() -> None:
    assert group_id_of(QUERIES["a"]) == GroupId(("stock",), ("name",))
    assert group_id_of(QUERIES["c"]) == GroupId(("stock",), ())
    assert group_id_of(QUERIES["d"]) == group_id_of(QUERIES["e"])
    assert group_id_of(QUERIES["f"]) == GroupId(("stock",), ("market", "name"))


def test_groups_of() -> None:
    groups = groups_of(QUERIES, PREFIX)
    members = sorted(sorted(g.queries) for g in groups.values())
    assert members == [["a", "b"], ["c"], ["d", "e"], ["f", "g"]]
    for gid, group in groups.items():
        assert group.id == gid
        assert group.keyed_topic == gid.keyed_topic(PREFIX)
        assert all(group_id_of(e) == gid for e in group.queries.values())
        assert all(group.queries[n] is QUERIES[n] for n in group.queries)
    assert len({g.keyed_topic for g in groups.values()}) == 4
    ab = groups[GroupId(("stock",), ("name",))]
    assert ab.type_fields == {"type", "kind"}
    assert groups[GroupId(("stock",), ())].type_fields == {"type"}


def test_groups_of_nothing() -> None:
    assert groups_of({}, PREFIX) == {}
    assert groups_by_topic({}) == {}


def test_groups_by_topic() -> None:
    groups = groups_of(QUERIES, PREFIX)
    by_topic = groups_by_topic(groups)
    assert set(by_topic) == {"stock", "news"}
    assert len(by_topic["stock"]) == 4
    (news,) = by_topic["news"]
    assert sorted(news.queries) == ["d", "e"]
    assert news in by_topic["stock"]


def test_the_prefix_names_the_keyed_topics() -> None:
    for group in groups_of(QUERIES, "other.").values():
        assert group.keyed_topic.startswith("other.")
