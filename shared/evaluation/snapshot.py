"""Snapshot and restore a stream evaluator (``QueryEvaluator``): union-lists, the tECS
nodes reachable from them, positions and window clocks, as bytes.

The format is zlib-compressed JSON (never pickle: checkpoints travel through
Kafka topics and must not execute code when read). Deterministic states are
written as their sets of CEA states, not as process-local ids, so a snapshot
restores into any process that compiled the same query; the query's
fingerprint guards against restoring into another query.

Nodes are written children first, each as ``[kind, pos, max, tmax, left, right,
event]`` with child and event references as indexes (-1: none, -2: the cut-off
``DEAD`` node), so shared sub-DAGs stay shared after a restore.
"""

from __future__ import annotations

import json
import math
import zlib
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from cerfleet.errors import SnapshotError
from cerfleet.evaluation.declared_lateness import DeclaredLateness
from cerfleet.evaluation.evicted import EvictedClocks
from cerfleet.evaluation.horizon import Horizon
from cerfleet.evaluation.lag import Lags
from cerfleet.evaluation.substream import SubstreamEvaluator
from cerfleet.evaluation.tecs import DEAD, Node, TaggedNode


class _Query(Protocol):
    @property
    def fingerprint(self) -> str: ...

    def substream_evaluator(self) -> SubstreamEvaluator: ...


class EvaluatorState(Protocol):
    """What a snapshot holds of a stream evaluator (the one below it in the pipeline
    it restores into is created by the caller)."""

    position: int
    epoch: int
    late: int
    unpartitioned: int
    substreams: dict[tuple[Any, ...], SubstreamEvaluator]
    lags: Lags | None
    evicted: EvictedClocks
    declared: DeclaredLateness | None
    horizon: Horizon | None

    @property
    def query(self) -> _Query: ...


FORMAT = 1
_NONE = -1
_DEAD = -2


def _num(x: float) -> float | None:
    return None if math.isinf(x) else x


def _unnum(x: float | None, default: float) -> float:
    return default if x is None else x


class _Writer:
    def __init__(self) -> None:
        self.ids: dict[int, int] = {}
        self.rows: list[list[Any]] = []
        self.event_ids: dict[int, int] = {}
        self.events: list[Mapping[str, Any]] = []

    def node(self, root: Node) -> int:
        """Index of ``root``, writing it and its unwritten descendants children first."""
        stack: list[tuple[Node, bool]] = [(root, False)]
        while stack:
            n, expanded = stack.pop()
            if n is DEAD or id(n) in self.ids:
                continue
            if not expanded:
                stack.append((n, True))
                for child in (n.left, n.right):
                    if child is not None and child is not DEAD and id(child) not in self.ids:
                        stack.append((child, False))
                continue
            self.ids[id(n)] = len(self.rows)
            row: list[Any] = [
                n.kind,
                n.pos,
                n.max,
                n.tmax,
                self._ref(n.left),
                self._ref(n.right),
                self._event(n.event),
            ]
            if isinstance(n, TaggedNode):  # a correlated query's node: its mark and tags
                row += [n.marked, sorted(n.tags)]
            self.rows.append(row)
        return self.ids[id(root)]

    def _ref(self, child: Node | None) -> int:
        if child is None:
            return _NONE
        if child is DEAD:
            return _DEAD
        return self.ids[id(child)]

    def _event(self, event: Mapping[str, Any] | None) -> int:
        if event is None:
            return _NONE
        eid = self.event_ids.get(id(event))
        if eid is None:
            eid = self.event_ids[id(event)] = len(self.events)
            self.events.append(event)
        return eid


def dump(ev: EvaluatorState) -> bytes:
    return dump_counted(ev)[0]


def dump_counted(
    ev: EvaluatorState, encode_event: Callable[[Mapping[str, Any]], Any] = dict
) -> tuple[bytes, int]:
    """The snapshot and the number of tECS nodes it holds (those reachable from the
    union-lists: the live part of the data structure). ``encode_event``: an event as
    JSON (events that are not JSON themselves, as RDF instants, are written as a
    reference their caller resolves on restore)."""
    writer = _Writer()
    subs = [
        {
            "key": list(key),
            "epoch": sub.epoch,
            "clock": sub.clock,
            "last_clock": _num(sub.last_clock),
            "tau": _num(sub.tau),
            "state": sub.export(writer.node),
        }
        for key, sub in ev.substreams.items()
    ]
    doc = {
        "format": FORMAT,
        "query": ev.query.fingerprint,
        "position": ev.position,
        "epoch": ev.epoch,
        "late": ev.late,
        "unpartitioned": ev.unpartitioned,
        "events": [encode_event(e) for e in writer.events],
        "nodes": writer.rows,
        "substreams": subs,
        "lags": [] if ev.lags is None else ev.lags.export(),
        "evicted": [[list(key), clock] for key, clock in ev.evicted.items()],
        "declared": [] if ev.declared is None else ev.declared.export(),
        "newest": None if ev.horizon is None else _num(ev.horizon.newest),
    }
    data = zlib.compress(json.dumps(doc, separators=(",", ":")).encode(), 1)
    return data, len(writer.rows)


def opened(data: bytes, fmt: int | str, fingerprint: str, what: str) -> dict[str, Any]:
    """The document of a snapshot ``data`` (zlib-compressed JSON) of format ``fmt``
    taken for the query ``fingerprint``; ``SnapshotError`` naming ``what`` if not."""
    try:
        doc = json.loads(zlib.decompress(data))
    except (zlib.error, ValueError) as exc:
        raise SnapshotError(f"not a {what}: {exc}") from exc
    if not isinstance(doc, dict) or doc.get("format") != fmt:
        raise SnapshotError(f"unsupported {what} format")
    if doc.get("query") != fingerprint:
        raise SnapshotError("snapshot was taken for a different query")
    return doc


def load_into(
    ev: EvaluatorState,
    data: bytes,
    decode_event: Callable[[Any], Mapping[str, Any]] | None = None,
) -> None:
    """Restore ``data`` into ``ev``, a fresh evaluator of the query it was taken from
    (``decode_event`` reverses the ``encode_event`` it was dumped with)."""
    query = ev.query
    doc = opened(data, FORMAT, query.fingerprint, "cerfleet snapshot")
    events: list[Mapping[str, Any]] = doc["events"]
    if decode_event is not None:
        events = [decode_event(e) for e in events]
    nodes: list[Node] = []
    for kind, pos, max_start, tmax, left, right, event, *tagged in doc["nodes"]:
        node = Node(
            kind,
            pos,
            max_start,
            tmax,
            _child(nodes, left),
            _child(nodes, right),
            None if event == _NONE else events[event],
        )
        if tagged:
            marked, tags = tagged
            assert node.left is not None and node.event is not None
            node = TaggedNode(pos, node.left, node.event, marked, frozenset(tags))
            node.max, node.tmax = max_start, tmax
        nodes.append(node)
    ev.position = doc["position"]
    ev.epoch = doc["epoch"]
    ev.late = doc["late"]
    ev.unpartitioned = doc["unpartitioned"]
    if ev.lags is not None:
        ev.lags.load(doc.get("lags", []))
    for s in doc["substreams"]:
        sub = query.substream_evaluator()
        sub.clock = s["clock"]
        sub.last_clock = _unnum(s["last_clock"], float("-inf"))
        sub.tau = _unnum(s["tau"], float("-inf"))
        sub.load(s["state"], nodes.__getitem__)
        sub.rebuild_reclaimer()
        key = tuple(s["key"])
        ev.substreams[key] = sub
        sub.epoch = s["epoch"]
    # Absent from snapshots taken before idle keys were evicted.
    ev.evicted = EvictedClocks((tuple(key), clock) for key, clock in doc.get("evicted", []))
    if ev.declared is not None:
        ev.declared.load(doc.get("declared", []))
    if ev.horizon is not None:
        # Absent (None) from snapshots taken before the horizon.
        ev.horizon.restored(ev, _unnum(doc.get("newest"), float("-inf")))


def _child(nodes: list[Node], ref: int) -> Node | None:
    if ref == _NONE:
        return None
    if ref == _DEAD:
        return DEAD
    return nodes[ref]
