"""A2C's speed paths compute exactly what the plain ones do: hand-derived gradients vs autograd,
and FlatRMSprop's saved state (its steps are checked against torch.optim.RMSprop in test_fast_paths.py)."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from canter.algorithms.a2c import A2C, A2CConfig
from canter.data.batch import RolloutBatch
from canter.optim import FlatRMSprop

DISCRETE = (gym.spaces.Box(-1, 1, (4,)), gym.spaces.Discrete(3))
CONTINUOUS = (gym.spaces.Box(-1, 1, (3,)), gym.spaces.Box(-2, 2, (2,)))
MULTI_DISCRETE = (gym.spaces.Box(-1, 1, (4,)), gym.spaces.MultiDiscrete([3, 2, 4]))


def _batch(algo: A2C, n: int, seed: int) -> RolloutBatch:
    g = torch.Generator().manual_seed(seed)
    obs = torch.randn(n, algo.observation_space.shape[0], generator=g)
    with torch.no_grad():
        out = algo.act(obs)
    return RolloutBatch(obs, out.actions, out.log_probs, out.values, torch.randn(n, generator=g),
                        torch.randn(n, generator=g))


@pytest.mark.parametrize("spaces", [DISCRETE, CONTINUOUS, MULTI_DISCRETE], ids=["discrete", "continuous", "multidiscrete"])
@pytest.mark.parametrize("activation", ["tanh", "relu"])
@pytest.mark.parametrize("ent", [0.0, 0.01])
@pytest.mark.parametrize("critic", [None, [24]], ids=["stacked", "critic_net_arch"])  # the latter: two MLPs
def test_manual_a2c_gradients_match_autograd(spaces, activation, ent, critic):
    algo = A2C(*spaces, A2CConfig(activation=activation, ent_coef=ent, net_arch=[16, 16], critic_net_arch=critic),
               seed=3)
    assert algo.uses_manual_backward
    obs, act, _, _, adv, ret = _batch(algo, 40, seed=4)
    row_auto = algo._grads_autograd(obs, act, adv, ret)
    g_auto = algo.optimizer.grad.clone()
    algo.optimizer.zero_grad()
    with torch.no_grad():
        row_manual = algo._grads_manual(obs, act, adv, ret)
    g_manual = algo.optimizer.grad.clone()
    assert g_auto.abs().sum() > 0
    torch.testing.assert_close(g_manual, g_auto, rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(row_manual, row_auto, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("optimizer", ["rmsprop", "adam"])
@pytest.mark.parametrize("normalize_advantage", [False, True])
def test_manual_and_autograd_a2c_learn_the_same(optimizer, normalize_advantage):
    def run(manual: bool) -> tuple[list[torch.Tensor], dict[str, float]]:
        torch.manual_seed(0)  # model initialisation
        cfg = A2CConfig(manual_backward=manual, optimizer=optimizer, normalize_advantage=normalize_advantage,
                        max_grad_norm=0.05)  # small enough that the clip acts
        algo = A2C(*DISCRETE, cfg, seed=0)
        stats = [algo.learn(_batch(algo, 40, seed=s)) for s in range(3)]
        return [p.detach().clone() for p in algo.model.parameters()], stats[-1]

    (pa, sa), (pb, sb) = run(True), run(False)
    for a, b in zip(pa, pb):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)
    assert sa.keys() == sb.keys() and sa["grad_norm"] > 0.05
    for k in sa:
        assert sa[k] == pytest.approx(sb[k], rel=1e-4, abs=1e-6), k


def test_flat_rmsprop_state_round_trip():  # its steps equal torch's: tests/test_fast_paths.py
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    flat = FlatRMSprop(net.parameters(), lr=7e-3, alpha=0.99, eps=1e-5)
    for _ in range(2):
        flat.zero_grad()
        net(torch.randn(16, 4)).pow(2).sum().backward()
        flat.step()
    other = FlatRMSprop(torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Linear(8, 2)).parameters(), lr=0.5)
    other.load_state_dict(flat.state_dict())
    torch.testing.assert_close(other.square_avg, flat.square_avg)
    assert other.param_groups[0]["lr"] == 7e-3 and other.param_groups[0]["eps"] == 1e-5
    assert float(other.step_count) == 2.0


@pytest.mark.parametrize("spaces", [DISCRETE, CONTINUOUS], ids=["discrete", "continuous"])
@pytest.mark.parametrize("activation", ["tanh", "relu"])
@pytest.mark.parametrize("critic", [None, [24, 8]], ids=["stacked", "critic_net_arch"])  # the latter: two MLPs
def test_numpy_acting_equals_torch_acting(spaces, activation, critic):
    """ActorCriticAlgorithm.act_numpy (the Agent's shortcut) samples what act samples, from the same
    random draws, with the same log-probabilities and values, and leaves the generator where act does."""
    cfg = A2CConfig(activation=activation, net_arch=[16, 16], log_std_init=-0.3, critic_net_arch=critic)
    a, b = (A2C(*spaces, cfg, seed=7) for _ in range(2))
    b.model.load_state_dict(a.model.state_dict())
    obs = np.random.default_rng(0).standard_normal((32, spaces[0].shape[0])).astype(np.float32)
    for deterministic in (True, False, False):
        with torch.inference_mode():
            expected = a.act(torch.from_numpy(obs), deterministic)
        got = b.act_numpy(obs, deterministic)  # NumPy arrays
        if a.continuous:
            np.testing.assert_allclose(got.actions, expected.actions.numpy(), rtol=1e-5, atol=1e-5)
        else:
            np.testing.assert_array_equal(got.actions, expected.actions.numpy())
        for field in ("log_probs", "values"):
            e, g = getattr(expected, field), getattr(got, field)
            assert (e is None) == (g is None) == deterministic, field
            if e is not None:
                assert isinstance(g, np.ndarray) and g.dtype == np.float32 and e.dtype == torch.float32
                assert g.shape == tuple(e.shape)
                np.testing.assert_allclose(g, e.numpy(), rtol=1e-5, atol=1e-5)
    assert torch.equal(a.generator.get_state(), b.generator.get_state())
    if not a.continuous:  # really sampled: not every action is the greedy one
        assert (got.actions != a.act(torch.from_numpy(obs), True).actions.numpy()).any()


def test_numpy_acting_falls_back_where_the_model_has_no_numpy_pass():
    """Shared trunks, activations other than tanh/relu and layers too large for NumPy's
    single-threaded products answer None (the Agent then uses act); the Agent's actions are the same."""
    from canter.agents.agent import Agent

    assert A2C(*DISCRETE, A2CConfig(activation="elu"), seed=0).act_numpy(np.zeros((2, 4), np.float32)) is None
    wide = A2C(*DISCRETE, A2CConfig(net_arch=[256, 256]), seed=0)
    assert wide.act_numpy(np.zeros((2, 4), np.float32)) is not None
    assert wide.act_numpy(np.zeros((4, 4), np.float32)) is None  # 4 x 256 x 256 = NUMPY_MAX_MACS
    agents = [Agent(A2C(*DISCRETE, A2CConfig(activation=act), seed=1)) for act in ("elu", "tanh")]
    agents[1].algorithm.model.load_state_dict(agents[0].algorithm.model.state_dict())
    obs = np.random.default_rng(2).standard_normal((5, 4)).astype(np.float32)
    agents[1].algorithm.model.body.activation = "elu"  # same weights, torch path
    np.testing.assert_array_equal(agents[0].sample(obs)[0], agents[1].sample(obs)[0])


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 18])
def test_row_reduce_equals_numpys_reduction_bit_for_bit(n):
    """The column-by-column reduction of the policy terms gives NumPy's own results, NaN included."""
    from canter.algorithms.policy_terms import row_reduce

    x = np.random.default_rng(n).standard_normal((37, n)).astype(np.float32) * 1e3
    x[5, n // 2] = np.nan
    for ufunc in (np.maximum, np.add):
        got, want = row_reduce(ufunc, x), ufunc.reduce(x, axis=1, keepdims=True)
        assert got.shape == want.shape == (37, 1) and got.dtype == np.float32
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("n", [1, 2, 3, 6, 18])
def test_acting_log_probs_are_the_policy_terms_bit_for_bit(n):
    """categorical_log_prob (acting) gives CategoricalTerms.logp's bits, for logits far apart too, and
    is a proper log-probability (the actions' probabilities of each row sum to one)."""
    from canter.algorithms.policy_terms import CategoricalTerms, categorical_log_prob

    rng = np.random.default_rng(n)
    logits = (rng.standard_normal((33, n)) * np.array([1.0] * 16 + [60.0] * 17)[:, None]).astype(np.float32)
    for a in range(n):
        actions = np.full(33, a)
        got = categorical_log_prob(logits, actions)
        assert got.dtype == np.float32 and got.shape == (33,)
        np.testing.assert_array_equal(got, CategoricalTerms(logits, actions).logp)
    every = np.stack([categorical_log_prob(logits, np.full(33, a)) for a in range(n)], axis=1)
    np.testing.assert_allclose(np.exp(every.astype(np.float64)).sum(1), 1.0, rtol=1e-5)
