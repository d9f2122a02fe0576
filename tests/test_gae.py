"""GAE against hand-computed values, including truncation bootstrapping."""
import numpy as np
import pytest

from canter.data.rollout import compute_gae


def reference(rewards, values, next_values, terminated, dones, gamma, lam):
    """Straightforward per-step GAE written from the definition."""
    T = len(rewards)
    adv = np.zeros(T)
    for t in range(T):
        total, weight = 0.0, 1.0
        for k in range(t, T):
            delta = rewards[k] + gamma * next_values[k] * (1 - terminated[k]) - values[k]
            total += weight * delta
            if dones[k]:
                break
            weight *= gamma * lam
        adv[t] = total
    return adv


def test_gae_single_episode_closed_form():
    # three steps, terminated at the end: lambda=1 gives Monte-Carlo return minus value
    r = np.array([[1.0], [1.0], [1.0]], dtype=np.float32)
    v = np.array([[0.5], [0.4], [0.3]], dtype=np.float32)
    term = np.array([[0], [0], [1]], dtype=np.float32)
    adv = compute_gae(r, v, np.array([9.0], dtype=np.float32), term, term, gamma=0.9, gae_lambda=1.0)
    returns = [1 + 0.9 + 0.81, 1 + 0.9, 1.0]
    np.testing.assert_allclose(adv[:, 0], np.array(returns) - v[:, 0], rtol=1e-6)


def test_gae_hand_computed_lambda():
    g, lam = 0.5, 0.5
    r = np.array([[1.0], [2.0]], dtype=np.float32)
    v = np.array([[1.0], [2.0]], dtype=np.float32)
    last = np.array([4.0], dtype=np.float32)
    zeros = np.zeros((2, 1), dtype=np.float32)
    adv = compute_gae(r, v, last, zeros, zeros, g, lam)
    d1 = 2 + 0.5 * 4 - 2  # = 2
    d0 = 1 + 0.5 * 2 - 1  # = 1
    np.testing.assert_allclose(adv[:, 0], [d0 + g * lam * d1, d1])


def test_truncation_bootstraps_from_final_observation_value():
    # NEXT_STEP layout: step 1 is truncated, obs[2] is the episode's final observation (V=10),
    # step 2 is the autoreset step (invalid), step 3 starts the next episode.
    g, lam = 0.9, 0.95
    r = np.array([[1.0], [1.0], [0.0], [1.0]], dtype=np.float32)
    v = np.array([[2.0], [3.0], [10.0], [1.0]], dtype=np.float32)
    term = np.zeros((4, 1), dtype=np.float32)
    dones = np.array([[0], [1], [0], [0]], dtype=np.float32)
    last = np.array([0.5], dtype=np.float32)
    adv = compute_gae(r, v, last, term, dones, g, lam)
    delta1 = 1 + g * 10.0 - 3.0
    delta0 = 1 + g * 3.0 - 2.0
    assert adv[1, 0] == pytest.approx(delta1)
    assert adv[0, 0] == pytest.approx(delta0 + g * lam * delta1)
    assert adv[3, 0] == pytest.approx(1 + g * 0.5 - 1.0)
    # the same step treated as terminated (no bootstrap) must give a different, wrong value
    wrong = compute_gae(r, v, last, dones, dones, g, lam)
    assert wrong[1, 0] == pytest.approx(1 - 3.0)
    assert abs(wrong[1, 0] - adv[1, 0]) > 1.0


@pytest.mark.parametrize("seed", range(5))
def test_gae_matches_reference_on_random_rollouts(seed):
    rng = np.random.default_rng(seed)
    T, N = 17, 3
    r = rng.normal(size=(T, N)).astype(np.float32)
    v = rng.normal(size=(T, N)).astype(np.float32)
    last = rng.normal(size=N).astype(np.float32)
    dones = (rng.random((T, N)) < 0.2).astype(np.float32)
    term = dones * (rng.random((T, N)) < 0.5)
    adv = compute_gae(r, v, last, term, dones, 0.97, 0.9)
    for i in range(N):
        nv = np.concatenate([v[1:, i], last[i:i + 1]])
        ref = reference(r[:, i], v[:, i], nv, term[:, i], dones[:, i], 0.97, 0.9)
        np.testing.assert_allclose(adv[:, i], ref, rtol=1e-5, atol=1e-5)
