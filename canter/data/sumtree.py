"""Segment trees over a fixed number of leaves, updated and searched a whole batch at a time.

:class:`SumTree` gives proportional sampling (prefix-sum search) and :class:`MinTree` the
smallest priority (for importance-weight normalisation). Both keep every parent equal to the
exact combination of its two children, so repeated updates never accumulate rounding drift.
"""
from __future__ import annotations

import numpy as np


class SegmentTree:
    """A complete binary tree in one array: node ``i`` has children ``2i`` and ``2i + 1``, the
    root is node 1 and leaf ``j`` is node ``size + j`` (``size`` is ``capacity`` rounded up to
    a power of two; the padding leaves hold the neutral element)."""

    neutral: float = 0.0

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self.capacity = capacity
        self.size = 1 << max(0, int(capacity - 1).bit_length())
        self.tree = np.full(2 * self.size, self.neutral, dtype=np.float64)

    def combine(self, left: np.ndarray, right: np.ndarray) -> np.ndarray:
        """The parent value of two children."""
        raise NotImplementedError

    @property
    def leaves(self) -> np.ndarray:
        """The ``capacity`` leaf values (a view)."""
        return self.tree[self.size:self.size + self.capacity]

    def update(self, indices: np.ndarray, values: np.ndarray | float) -> None:
        """Set leaves ``indices`` to ``values`` and recompute their ancestors (duplicates: last wins)."""
        indices = np.asarray(indices, dtype=np.int64)
        if indices.size == 0:
            return
        nodes = indices + self.size
        self.tree[nodes] = values
        parents = np.unique(nodes >> 1)
        while parents[0] >= 1:
            self.tree[parents] = self.combine(self.tree[2 * parents], self.tree[2 * parents + 1])
            if parents[0] == 1:
                break
            parents = np.unique(parents >> 1)

    def set_all(self, values: np.ndarray) -> None:
        """Replace every leaf (length ``capacity``) and rebuild the tree bottom-up."""
        self.tree[:] = self.neutral
        self.tree[self.size:self.size + self.capacity] = values
        level = self.size
        while level > 1:
            parents = np.arange(level // 2, level)
            self.tree[parents] = self.combine(self.tree[2 * parents], self.tree[2 * parents + 1])
            level //= 2

    @property
    def root(self) -> float:
        """The combination of all leaves (node 1; with one leaf, node 1 is that leaf)."""
        return float(self.tree[1])


class SumTree(SegmentTree):
    """Sums of priorities; :meth:`find` maps prefix sums to leaves."""

    neutral = 0.0

    def combine(self, left: np.ndarray, right: np.ndarray) -> np.ndarray:  # noqa: D102
        return left + right

    @property
    def total(self) -> float:
        """Sum of all leaves."""
        return self.root

    def find(self, prefix: np.ndarray) -> np.ndarray:
        """For each value ``v`` in ``[0, total)``, the leaf ``j`` with
        ``sum(leaves[:j]) <= v < sum(leaves[:j + 1])`` (zero leaves are never returned, except
        through floating-point rounding at the very top of the range; callers check)."""
        values = np.asarray(prefix, dtype=np.float64).copy()
        node = np.ones(values.shape, dtype=np.int64)
        for _ in range(self.size.bit_length() - 1):  # tree depth
            left = 2 * node
            left_sum = self.tree[left]
            right = values >= left_sum
            values -= np.where(right, left_sum, 0.0)
            node = left + right
        return node - self.size


class MinTree(SegmentTree):
    """Minimum of the leaves (``inf`` marks an empty leaf)."""

    neutral = float("inf")

    def combine(self, left: np.ndarray, right: np.ndarray) -> np.ndarray:  # noqa: D102
        return np.minimum(left, right)

    @property
    def min(self) -> float:
        """Smallest leaf (``inf`` when all are empty)."""
        return self.root
