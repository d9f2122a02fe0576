"""QR-DQN and IQN under an action mask: masked actions' Q values lie below every allowed one's,
however negative the return quantiles are (canter.envs.masks.apply_mask_below)."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from canter.algorithms.dqn import DQN, DQNConfig
from canter.algorithms.iqn import IQN, IQNConfig
from canter.data.batch import ReplayBatch
from canter.envs.masks import MASKED, MaskedBox, apply_mask_below


def _masked_algo(name: str, offset: float):
    """A QR-DQN or IQN agent on 4 masked actions whose quantiles are all shifted by ``offset``."""
    space = MaskedBox(np.zeros(8), np.ones(8), mask_width=4)
    if name == "qrdqn":
        algo = DQN(space, gym.spaces.Discrete(4), DQNConfig(net_arch=[8], n_quantiles=5), seed=0)
    else:
        algo = IQN(space, gym.spaces.Discrete(4), IQNConfig(net_arch=[8], n_quantiles=5, n_cosines=4,
                                                             n_act_quantiles=3), seed=0)
    for net in (algo.q, algo.q_target):
        with torch.no_grad():
            net.head.bias += offset
    return algo


def _obs_allowing(action: int) -> torch.Tensor:
    obs = torch.zeros(6, 8)
    obs[:, :4] = torch.rand(6, 4, generator=torch.Generator().manual_seed(0))
    obs[:, 4 + action] = 1.0
    return obs


@pytest.mark.parametrize("name", ["qrdqn", "iqn"])
@pytest.mark.parametrize("offset", [-1e9, -1e30])
@pytest.mark.parametrize("double_q", [False, True])
def test_returns_below_the_mask_value_still_act_and_bootstrap_over_allowed_actions(name, offset, double_q):
    """Masked actions' mean quantiles were -1e8 (MASKED): with every allowed action's mean below that,
    the greedy action and the bootstrapped next action were disallowed ones."""
    algo = _masked_algo(name, offset)
    algo.config.double_q = double_q
    obs = _obs_allowing(2)
    assert algo.act(obs, deterministic=True).actions.tolist() == [2] * 6
    assert algo.q.value(obs).argmax(-1).tolist() == [2] * 6
    ones = torch.ones(6)
    batch = ReplayBatch(obs, torch.zeros(6, dtype=torch.long), ones * 0, obs, ones * 0, ones * 0.99, ones, ones)
    torch.manual_seed(0)
    nxt = algo.target_values(obs)
    target = algo.td_target(batch, nxt)
    torch.testing.assert_close(target, 0.99 * nxt[:, 2])


def test_apply_mask_below_fills_below_each_rows_minimum():
    q = torch.tensor([[1.0, 2.0, 3.0], [-5e8, -2e8, 0.0], [-3e38, 1.0, 2.0]])
    allowed = torch.tensor([[False, True, True], [True, False, False], [True, False, True]])
    out = apply_mask_below(q, allowed)
    assert out[0, 0] == MASKED and out[1, 1] < -5e8 and out[1, 2] < -5e8 and out[2, 1] == -float("inf")
    assert out.argmax(-1).tolist() == [2, 0, 2]
    assert np.array_equal(apply_mask_below(q.numpy(), allowed.numpy()), out.numpy())


def test_a_q_network_below_the_mask_value_still_acts_over_allowed_actions():
    """DQN's Q values have no lower bound either: value and the NumPy acting path."""
    space = MaskedBox(np.zeros(8), np.ones(8), mask_width=4)
    algo = DQN(space, gym.spaces.Discrete(4), DQNConfig(net_arch=[8]), seed=0)
    last = [m for m in algo.q.q.modules() if isinstance(m, torch.nn.Linear)][-1]
    with torch.no_grad():
        last.bias -= 1e9
    obs = _obs_allowing(2)
    assert algo.q.value(obs).argmax(-1).tolist() == [2] * 6
    assert algo.q.value_numpy(obs.numpy()).argmax(-1).tolist() == [2] * 6
    assert algo.act(obs, deterministic=True).actions.tolist() == [2] * 6
