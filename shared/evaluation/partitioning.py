"""Letters → partition groups: a batch's rows split by ``PARTITION BY`` key, vectorised."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from cerfleet.cea.vector_predicates import Columns

if TYPE_CHECKING:
    import numpy as np
else:
    from cerfleet.lazy_numpy import np


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


def checked_positions(positions: np.ndarray | Sequence[int], n: int, next_free: int) -> np.ndarray:
    """Labels a caller gave a batch's rows, as an integer array, checked: ``n`` of them,
    strictly increasing, none below ``next_free``."""
    labels = np.asarray(positions)
    if labels.ndim != 1 or len(labels) != n:
        raise ValueError(f"{len(labels)} positions for {n} events")
    if not n:
        return labels.astype(np.int64)
    if labels.dtype.kind not in "iu":
        raise TypeError(f"positions must be integers, got {labels.dtype}")
    if labels[0] < next_free:
        first = int(labels[0])
        raise ValueError(f"position {first} is below the next free position {next_free}")
    if not np.all(labels[1:] > labels[:-1]):
        raise ValueError("positions must be strictly increasing")
    return labels
