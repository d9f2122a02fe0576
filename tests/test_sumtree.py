"""Sum/min trees and proportional prioritized sampling, checked against brute force."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from canter.data import MinTree, PrioritizedReplayBuffer, SumTree

priorities = st.lists(st.floats(0.0, 100.0, allow_nan=False), min_size=1, max_size=40)


def brute_find(leaves: np.ndarray, value: float) -> int:
    """The leaf j with cumsum[j-1] <= value < cumsum[j], by linear scan."""
    acc = 0.0
    for j, p in enumerate(leaves):
        if acc <= value < acc + p:
            return j
        acc += p
    raise AssertionError("value out of range")


@settings(max_examples=60, deadline=None)
@given(values=priorities, updates=st.lists(st.tuples(st.integers(0, 39), st.floats(0.0, 10.0)), max_size=20),
       fractions=st.lists(st.floats(0.0, 1.0, exclude_max=True), min_size=1, max_size=20))
def test_sum_tree_matches_brute_force(values, updates, fractions):
    n = len(values)
    tree, mins = SumTree(n), MinTree(n)
    leaves = np.array(values, dtype=np.float64)
    tree.update(np.arange(n), leaves)
    mins.update(np.arange(n), np.where(leaves > 0, leaves, np.inf))
    for i, v in updates:  # single updates and repeated ones
        i %= n
        leaves[i] = v
        tree.update(np.array([i]), v)
        mins.update(np.array([i]), v if v > 0 else np.inf)
    assert tree.total == pytest.approx(leaves.sum(), rel=1e-12, abs=1e-12)
    positive = leaves[leaves > 0]
    assert mins.min == (positive.min() if positive.size else np.inf)
    np.testing.assert_array_equal(tree.leaves, leaves)
    if leaves.sum() > 0:
        # values within rounding of a slice boundary may fall on either side; test the others
        bounds = np.concatenate([[0.0], np.cumsum(leaves)])
        values = [v for v in np.array(fractions) * leaves.sum() if np.abs(bounds - v).min() > 1e-9 * leaves.sum()]
        found = tree.find(np.array(values))
        expected = [brute_find(leaves, v) for v in values]
        np.testing.assert_array_equal(found, expected)
        assert (leaves[found] > 0).all()  # empty leaves are never found


@settings(max_examples=30, deadline=None)
@given(values=priorities)
def test_batched_update_and_rebuild_agree(values):
    n = len(values)
    a, b = SumTree(n), SumTree(n)
    a.update(np.arange(n), values)
    b.set_all(np.array(values))
    np.testing.assert_allclose(a.tree, b.tree)


def _filled_per(n: int, alpha: float, seed: int = 0) -> PrioritizedReplayBuffer:
    buf = PrioritizedReplayBuffer(n, (1,), (), alpha=alpha, beta0=0.4, seed=seed)
    obs = np.zeros((1, 1), np.float32)
    for _ in range(n):
        buf.add(obs, np.zeros(1), np.zeros(1, np.float32), obs + 1, np.zeros(1, bool))
        obs = obs + 1
    return buf


@settings(max_examples=30, deadline=None)
@given(td=st.lists(st.floats(0.0, 5.0), min_size=2, max_size=30), alpha=st.sampled_from([0.0, 0.6, 1.0]),
       beta=st.floats(0.0, 1.0), seed=st.integers(0, 1000))
def test_prioritized_sampling_and_weights_match_brute_force(td, alpha, beta, seed):
    n = len(td)
    buf = _filled_per(n, alpha, seed)
    buf.update_priorities(np.arange(n), np.array(td))
    buf.beta = beta
    p = (np.abs(td) + buf.eps) ** alpha
    probs = p / p.sum()
    # the same stratified prefixes, searched by brute force
    rng = np.random.default_rng(0)
    rng.bit_generator.state = buf.rng.bit_generator.state
    batch = buf.sample(16)
    prefix = (np.arange(16) + rng.random(16)) * (p.sum() / 16)
    expected = np.array([brute_find(p, min(v, np.nextafter(p.sum(), 0))) for v in prefix])
    bounds = np.concatenate([[0.0], np.cumsum(p)])
    clear = np.array([np.abs(bounds - v).min() > 1e-9 * p.sum() for v in prefix])  # not within rounding of a boundary
    got = batch.indices.numpy()
    np.testing.assert_array_equal(got[clear], expected[clear])
    # importance weights: (N P(i))^-beta normalised by the largest weight in the whole buffer
    w = (n * probs) ** (-beta)
    np.testing.assert_allclose(batch.weights.numpy(), (w / w.max())[got], rtol=1e-5)


def test_sampling_frequencies_follow_priorities():
    buf = _filled_per(4, alpha=1.0)
    buf.update_priorities(np.arange(4), np.array([1.0, 2.0, 3.0, 4.0]) - buf.eps)
    counts = np.bincount(np.concatenate([buf.sample(100).indices.numpy() for _ in range(200)]), minlength=4)
    np.testing.assert_allclose(counts / counts.sum(), [0.1, 0.2, 0.3, 0.4], atol=0.01)


def test_new_transitions_get_the_largest_priority_and_overwritten_ones_lose_theirs():
    buf = PrioritizedReplayBuffer(3, (1,), (), alpha=1.0)
    obs = np.zeros((1, 1), np.float32)
    for _ in range(3):
        buf.add(obs, np.zeros(1), np.zeros(1, np.float32), obs + 1, np.zeros(1, bool))
        obs = obs + 1
    buf.update_priorities(np.array([0, 1]), np.array([7.0, 0.5]))
    buf.add(obs, np.zeros(1), np.zeros(1, np.float32), obs + 1, np.zeros(1, bool))  # wraps: slot 3 -> head 0
    leaves = buf.sums.leaves
    assert leaves[0] == 0  # the overwritten oldest transition is gone from the tree
    assert leaves[3] == pytest.approx(7.0 + buf.eps)  # newest: max priority seen so far
    assert buf.mins.min == pytest.approx(0.5 + buf.eps)
    buf.update_priorities(np.array([0]), np.array([100.0]))  # stale index: ignored
    assert buf.sums.leaves[0] == 0


def test_an_index_drawn_twice_keeps_its_last_priority_and_the_max_counts_both():
    buf = _filled_per(4, alpha=0.5)
    buf.update_priorities(np.array([2, 1, 2]), np.array([9.0, 1.0, 4.0]))  # as Tianshou's update_weight
    assert buf.sums.leaves[2] == pytest.approx((4.0 + buf.eps) ** 0.5)
    assert buf.sums.total == pytest.approx(buf.sums.leaves.sum())
    assert buf.max_priority == pytest.approx(9.0 + buf.eps)  # what the next new transition gets

def test_beta_anneals_to_one():
    buf = _filled_per(4, alpha=0.6)
    buf.set_progress(0, 100)
    assert buf.beta == pytest.approx(0.4)
    buf.set_progress(50, 100)
    assert buf.beta == pytest.approx(0.7)
    buf.set_progress(200, 100)
    assert buf.beta == 1.0
