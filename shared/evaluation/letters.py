"""Columns → letters: the letter of every event of a columnar batch at once.

A letter is the event's type index plus ``radix`` × the bits of the filter atoms
its type's transitions read (``DetCEA.letter`` for one event): the type column is
mapped to type indexes and every filter atom is evaluated as one numpy pass
(``cea.vector_predicates``). The stages after it (``relevance``, ``partitioning``,
the evaluators) only compare letters.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cerfleet.cea.vector_predicates import Columns, VectorPredicate
from cerfleet.evaluation.determinization import DetCEA

if TYPE_CHECKING:
    import numpy as np
else:
    from cerfleet.lazy_numpy import np


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
        if n == 0:
            return np.full(n, other, dtype=np.int64)
        # One equality pass per type the query names (few) instead of sorting strings.
        types = np.full(n, other, dtype=np.int64)
        if type_col is not None:
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
