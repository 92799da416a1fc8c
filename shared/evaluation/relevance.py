"""The columnar fast path's skipping: a batch of events as numpy columns, evaluated with the
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

This module is step 2: which letters matter to the states held, and where the next
such event is. Step 1 is ``letters``, step 3 ``cerfleet.evaluation.query_evaluator``.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import TYPE_CHECKING

from cerfleet.evaluation.determinization import NONE, DetCEA, TaggedStep

if TYPE_CHECKING:
    import numpy as np
else:
    from cerfleet.lazy_numpy import np


class Relevance:
    """For one batch: which of its letters would change a given automaton state."""

    def __init__(self, dcea: DetCEA, letters: list[int]) -> None:
        self.dcea = dcea
        self.letters = letters
        self._det: dict[int, frozenset[int]] = {}
        # Per MAX class (``maximal.MaxEvaluator.relevant`` fills it).
        self.of_max_class: dict[int, frozenset[int]] = {}
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

    def of_state(self, q: int) -> frozenset[int]:
        """Letters that move det state ``q`` anywhere but back to itself by ∘ alone; all
        of them when ``q`` is final (back in it, the event ends a complex event)."""
        found = self._det.get(q)
        if found is None:
            if self.dcea.is_final[q]:
                found = self._det[q] = frozenset(self.letters)
                return found
            step = self.dcea.step
            found = frozenset(v for v in self.letters if step(q, v) != (NONE, q))
            if self.dcea.tagged:
                # A tagged ∘ event is kept for the correlations (evaluation.correlated):
                # it changes the state even when it loops back to it.
                plain: TaggedStep = ((q, False, frozenset()),)
                found |= {v for v in self.letters if self.dcea.step_tagged(q, v) != plain}
            self._det[q] = found
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
    # Up to this many events the letters are searched as a Python list: numpy's isin and
    # unique cost tens of microseconds to set up, more than a pass over a few dozen
    # (a paced worker's batches: 60 events, 46 µs for isin against 5 by the list).
    _LISTED = 256

    def __init__(self, letters: np.ndarray, skip: np.ndarray) -> None:
        self._listed: list[int] | None = None
        if len(letters) <= self._LISTED:
            listed = self._listed = [
                -1 if s else v for v, s in zip(letters.tolist(), skip.tolist(), strict=True)
            ]
            self.letters: list[int] = sorted(set(listed) - {-1})
        else:
            self._letters = np.where(skip, -1, letters)
            self.letters = [v for v in np.unique(self._letters).tolist() if v != -1]
        self._positions: dict[int, list[int]] | None = None
        self._of_set: dict[frozenset[int], list[int]] = {}

    def first_from(self, i: int, relevant: frozenset[int]) -> int | None:
        found = self._of_set.get(relevant)
        if found is None:
            if len(self._of_set) >= self._MAX_SETS:
                return self._walk(i, relevant)
            listed = self._listed
            if listed is not None:
                found = [k for k, v in enumerate(listed) if v in relevant]
            else:
                found = np.flatnonzero(np.isin(self._letters, list(relevant))).tolist()
            self._of_set[relevant] = found
        k = bisect_left(found, i)
        return found[k] if k < len(found) else None

    def _walk(self, i: int, relevant: frozenset[int]) -> int | None:
        if self._positions is None and self._listed is not None:
            self._positions = {}
            for k, v in enumerate(self._listed):
                self._positions.setdefault(v, []).append(k)
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
