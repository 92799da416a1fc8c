"""The columnar fast path: a batch of events as numpy columns, evaluated with the
same algorithms but touching in Python only the events that can change something.

1. Bit vectors for the whole batch: the type column is mapped to type indexes
   and every filter atom is evaluated as one numpy pass (``vector_predicates``).
2. An event changes nothing when, for every state the evaluator holds, its
   letter leads back to that same state by the ∘-move alone and starts no run:
   no node is created, nothing is output, only the clocks move. A final state
   is never left so: reached again, it outputs again (under a projection a
   complex event may end on an unmarked event). For each state,
   the batch's letters that *would* change it are computed once from the cached
   transitions (``Relevance``); the next event to process is the first one
   whose letter is relevant to one of the states held now, found with one
   moving pointer per distinct letter.
3. Those events go through the substream evaluator one by one, each rebuilt as
   a dict of Python values (it may be stored in a tECS node).

The output is identical to feeding the rows one at a time; the differential
tests run both paths.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from shared.cea.vector_predicates import Columns, RowView, VectorPredicate
from shared.evaluation.determinization import NONE

if TYPE_CHECKING:
    from shared.evaluation.determinization import DetCEA
    from shared.evaluation.maximal import MaxCEA
    from shared.query import CompiledQuery


class BatchLetters:
    """Computes the letters of columnar batches for one det-CEA."""

    def __init__(self, dcea: DetCEA, atoms: list[VectorPredicate]) -> None:
        self.dcea = dcea
        self.atoms = atoms

    def letters(self, cols: Columns, n: int) -> np.ndarray:
        """The letter (type index + radix × atom bits) of each of the ``n`` events."""
        dcea = self.dcea
        radix = dcea.radix
        other = radix - 1
        type_col = cols.get(dcea.type_field)
        if type_col is None or n == 0:
            return np.full(n, other, dtype=np.int64)
        # One equality pass per type the query names (few) instead of sorting strings.
        types = np.full(n, other, dtype=np.int64)
        for name, ti in dcea.type_index.items():
            types[type_col == name] = ti
        bits = np.zeros(n, dtype=np.int64)
        computed: dict[int, np.ndarray] = {}
        for ti, atom_ids in enumerate(dcea.atoms_by_type):
            if not atom_ids:
                continue
            of_type = types == ti
            if not of_type.any():
                continue
            tbits = np.zeros(n, dtype=np.int64)
            for k, atom in enumerate(atom_ids):
                if atom not in computed:
                    computed[atom] = self.atoms[atom](cols, n)
                tbits |= computed[atom].astype(np.int64) << k
            bits |= np.where(of_type, tbits, 0)
        return types + radix * bits


class Relevance:
    """For one batch: which of its letters would change a given automaton state."""

    def __init__(self, dcea: DetCEA, letters: list[int]) -> None:
        self.dcea = dcea
        self.letters = letters
        self._det: dict[int, frozenset[int]] = {}
        self._max: dict[int, frozenset[int]] = {}
        # One evaluator kind per query, so det-state and class tuples never mix here.
        self.held: dict[tuple[int, ...], frozenset[int]] = {}
        step = dcea.step
        initial = dcea.initial
        self.start = frozenset(v for v in letters if step(initial, v) != (NONE, NONE))

    def of_states(self, held: tuple[int, ...]) -> frozenset[int]:
        """Letters that would change any of the det states ``held`` or start a run."""
        found = self.held.get(held)
        if found is None:
            found = self.held[held] = self.start.union(*(self.of_state(q) for q in held))
        return found

    def of_classes(self, max_cea: MaxCEA, held: tuple[int, ...]) -> frozenset[int]:
        """Letters that would change any of the MAX classes ``held``."""
        found = self.held.get(held)
        if found is None:
            found = self.held[held] = frozenset().union(*(self.of_class(max_cea, c) for c in held))
        return found

    def of_state(self, q: int) -> frozenset[int]:
        """Letters that move det state ``q`` anywhere but back to itself by ∘ alone; all
        of them when ``q`` is final (back in it, the event ends a complex event)."""
        found = self._det.get(q)
        if found is None:
            if self.dcea.is_final[q]:
                found = self._det[q] = frozenset(self.letters)
                return found
            step = self.dcea.step
            found = self._det[q] = frozenset(v for v in self.letters if step(q, v) != (NONE, q))
        return found

    def of_class(self, max_cea: MaxCEA, c: int) -> frozenset[int]:
        """The same for a class of the MAX construction (accepting: all letters)."""
        found = self._max.get(c)
        if found is None:
            if max_cea.accepting[c]:
                found = self._max[c] = frozenset(self.letters)
                return found
            step = max_cea.step
            found = self._max[c] = frozenset(
                v for v in self.letters if step(c, v) != (NONE, c, NONE)
            )
        return found


class NextRelevant:
    """Finds the first event at or after ``i`` whose letter is in a given set.

    The positions of each distinct set asked for are gathered once per batch (one
    vector pass) and then searched by bisection; evaluators hold few distinct
    state combinations, so few sets are asked for. Past ``_MAX_SETS`` sets, the
    per-letter position lists are walked instead, so a batch never costs more
    than a bounded number of vector passes.
    """

    _MAX_SETS = 64

    def __init__(self, letters: np.ndarray, skip: np.ndarray) -> None:
        self._letters = np.where(skip, -1, letters)
        self.letters: list[int] = [v for v in np.unique(self._letters).tolist() if v != -1]
        self._positions: dict[int, list[int]] | None = None
        self._of_set: dict[frozenset[int], list[int]] = {}

    def first_from(self, i: int, relevant: frozenset[int]) -> int | None:
        found = self._of_set.get(relevant)
        if found is None:
            if len(self._of_set) >= self._MAX_SETS:
                return self._walk(i, relevant)
            mask = np.isin(self._letters, list(relevant))
            found = self._of_set[relevant] = np.flatnonzero(mask).tolist()
        k = bisect_left(found, i)
        return found[k] if k < len(found) else None

    def _walk(self, i: int, relevant: frozenset[int]) -> int | None:
        if self._positions is None:
            order = np.argsort(self._letters, kind="stable")
            sorted_letters = self._letters[order]
            distinct, starts = np.unique(sorted_letters, return_index=True)
            bounds = [*starts.tolist(), len(sorted_letters)]
            self._positions = {
                v: order[bounds[k] : bounds[k + 1]].tolist()
                for k, v in enumerate(distinct.tolist())
            }
        best: int | None = None
        for v in relevant:
            pos = self._positions.get(v, [])
            k = bisect_left(pos, i)
            if k < len(pos) and (best is None or pos[k] < best):
                best = pos[k]
        return best


def clock_column(query: CompiledQuery, cols: Columns, n: int) -> np.ndarray:
    """The window clock of every event as floats, NaN where an event has none."""
    window = query.ast.within
    assert window is not None and query.clock is not None
    name = window.attr if window.attr is not None else query.time_field
    col = cols.get(name)
    if col is None:
        return np.full(n, np.nan)
    if col.dtype.kind in "iuf":
        return col.astype(np.float64)
    clock = query.clock
    rows = RowView(cols)
    return np.array([np.nan if (v := clock(rows.at(i))) is None else v for i in range(n)], float)


def partition_groups(
    attrs: tuple[str, ...], cols: Columns, n: int
) -> list[tuple[tuple[Any, ...], np.ndarray]] | None:
    """The batch's rows grouped by PARTITION BY key, in order of first appearance, each
    with its row indexes in order; rows with a missing (NaN) key attribute are in no
    group. ``[((), all rows)]`` without PARTITION BY; None when a key column is neither
    numbers nor strings (the caller then goes row by row)."""
    if not attrs:
        return [((), np.arange(n))]
    valid = np.ones(n, dtype=bool)
    code = np.zeros(n, dtype=np.int64)
    values: list[list[Any]] = []
    for attr in attrs:
        col = cols.get(attr)
        if col is None:
            return []
        if col.dtype.kind not in "iufU":
            return None
        if col.dtype.kind == "f":
            valid &= ~np.isnan(col)
        uniques, inverse = np.unique(col, return_inverse=True)
        code = code * len(uniques) + inverse.reshape(-1)
        values.append(uniques.tolist())
    rows = np.flatnonzero(valid)
    if not len(rows):
        return []
    keys, first, group = np.unique(code[rows], return_index=True, return_inverse=True)
    order = np.argsort(group.reshape(-1), kind="stable")
    bounds = np.searchsorted(group.reshape(-1)[order], np.arange(len(keys) + 1))
    radices = [len(v) for v in values]
    out = []
    for g in np.argsort(first, kind="stable").tolist():  # first appearance in the batch
        c = int(keys[g])
        key: list[Any] = []
        for radix, uniques in zip(reversed(radices), reversed(values), strict=True):
            c, k = divmod(c, radix)
            key.append(uniques[k])
        out.append((tuple(reversed(key)), rows[order[bounds[g] : bounds[g + 1]]]))
    return out


def column_length(cols: Mapping[str, np.ndarray]) -> int:
    lengths = {len(c) for c in cols.values()}
    if len(lengths) > 1:
        raise ValueError(f"columns of different lengths: {sorted(lengths)}")
    return lengths.pop() if lengths else 0
