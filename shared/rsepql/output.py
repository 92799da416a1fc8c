"""RSEP-QL's output stage: a complex event (one instant per event pattern of the
chain) to result rows — its items' mappings joined (Eq. (7)'s μ2(E1): the same values
on shared variables), projected on SELECT, with ``time`` the last item's timestamp
(MATCH drops the intervals, Eq. (8); the row keeps the end)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cerfleet.cea.graph_match import Solution, compile_graph_match
from cerfleet.cea.predicates import compile_predicate
from cerfleet.rdf.instants import TIME
from cerfleet.rsepql import syntax as s
from cerfleet.rsepql.translate import bep_pred

__all__ = ["Rows"]


def _compatible(a: Solution, b: Solution) -> bool:
    for k, v in a.items():
        w = b.get(k)
        if w is not None and (type(w) is not type(v) or w != v):
            return False
    return True


class Rows:
    """Result rows of one query: ``rows(positions, instants)``."""

    def __init__(self, query: s.Query) -> None:
        self.matches = [
            compile_graph_match(bep_pred(query, name), compile_predicate) for name in query.chain
        ]
        self.select: tuple[str, ...] = query.selected()

    def rows(
        self, positions: Sequence[int], instants: Sequence[Mapping[str, Any]]
    ) -> list[dict[str, Any]]:
        joined: list[Solution] = [{}]
        for match, p in zip(self.matches, positions, strict=True):
            mine = match(instants[p])
            joined = [{**x, **y} for x in joined for y in mine if _compatible(x, y)]
            if not joined:
                return []
        time = instants[positions[-1]][TIME]
        out = []
        for mapping in joined:
            row: dict[str, Any] = {v: mapping.get(v) for v in self.select}
            row["time"] = time
            out.append(row)
        return out
