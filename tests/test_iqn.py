"""IQN (canter.algorithms.iqn): the loss at sampled fractions, the network, and learning."""
from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest
import torch

import canter
from canter.models.distributional import ImplicitQuantileNetwork, quantile_huber_loss


def _plain_loss(current: torch.Tensor, target: torch.Tensor, taus: torch.Tensor) -> torch.Tensor:
    """The quantile Huber loss (kappa 1) at fractions ``taus`` written plainly, for autograd."""
    delta = target.unsqueeze(-2) - current.unsqueeze(-1)  # [B, N, M]
    huber = torch.where(delta.abs() <= 1, 0.5 * delta.pow(2), delta.abs() - 0.5)
    return ((taus.unsqueeze(-1) - (delta.detach() < 0).to(current.dtype)).abs() * huber).sum(-2).mean(-1)


def test_the_loss_at_sampled_fractions_equals_the_plain_form_and_its_gradient():
    g = torch.Generator().manual_seed(0)
    current = (2 * torch.randn(8, 16, generator=g, dtype=torch.float64)).requires_grad_()
    target = 2 * torch.randn(8, 12, generator=g, dtype=torch.float64)
    taus = torch.rand(8, 16, generator=g, dtype=torch.float64)
    ours, theirs = quantile_huber_loss(current, target, taus=taus), _plain_loss(current, target, taus)
    torch.testing.assert_close(ours, theirs)
    torch.testing.assert_close(torch.autograd.grad(ours.sum(), current)[0], torch.autograd.grad(theirs.sum(), current)[0])
    # by hand: one fraction 0.1 predicting 0 against a target 1 (u = 1 > 0): 0.1 * 0.5
    assert quantile_huber_loss(torch.zeros(1, 1), torch.ones(1, 1), taus=torch.tensor([[0.1]])).item() == pytest.approx(0.05)


@pytest.mark.parametrize("dueling", [False, True])
def test_the_network_embeds_each_fraction(dueling):
    torch.manual_seed(0)
    net = ImplicitQuantileNetwork(gym.spaces.Box(-1, 1, (4,)), gym.spaces.Discrete(3), net_arch=[32, 32],
                                  dueling=dueling, n_cosines=8, n_act_quantiles=4)
    obs = torch.randn(5, 4)
    taus = torch.rand(5, 7)
    z = net.quantiles(obs, taus)
    assert z.shape == (5, 3, 7)
    # each fraction is its own column: evaluating one fraction alone gives the same quantile
    torch.testing.assert_close(net.quantiles(obs, taus[:, 2:3])[:, :, 0], z[:, :, 2])
    # the Q values are the mean quantile at the K midpoints, the same for every call
    mid = torch.tensor([0.125, 0.375, 0.625, 0.875])
    torch.testing.assert_close(net.value(obs), net.quantiles(obs, mid).mean(-1))
    # psi(s) * phi(tau): the cosine embedding reaches the output
    assert not torch.allclose(net.quantiles(obs, torch.full((5, 1), 0.1)), net.quantiles(obs, torch.full((5, 1), 0.9)))


@pytest.mark.slow  # ~30 s: keeps the default suite near its 15-minute budget
def test_iqn_learns_cartpole(tmp_path):
    run = tmp_path / "iqn"
    canter.train("iqn", env="CartPole-v1", seed=1, run_dir=run, quiet=True)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["best_eval_return"] >= 475, summary
    agent = canter.load(run)
    assert type(agent.algorithm.q).__name__ == "ImplicitQuantileNetwork"


def test_the_target_bootstraps_after_a_truncation_not_after_a_termination():
    from test_c51 import _two_rows

    algo = canter.make_trainer("iqn", "CartPole-v1", seed=0, net_arch=[16]).agent.algorithm
    target = algo.td_target(_two_rows([1.0, 0.0]))  # [2, N'] target quantiles
    torch.testing.assert_close(target[0], torch.full_like(target[0], 0.5))  # the reward alone
    assert target[1].std() > 0  # 0.5 + 0.99 * the target network's quantiles at sampled fractions


def test_on_images_the_embedding_meets_the_convolutional_features():
    """The paper's Atari network: phi(tau) has the CNN's width and multiplies its features; every
    net_arch layer (512) comes after the merge."""
    images = gym.spaces.Box(0, 255, (4, 84, 84), np.uint8)
    net = ImplicitQuantileNetwork(images, gym.spaces.Discrete(6), net_arch=[512])
    assert isinstance(net.psi, torch.nn.Identity) and net.phi[0].out_features == net.encoder.out_dim == 3136
    assert net.head.in_features == 512
    obs = torch.randint(0, 256, (2, 4, 84, 84), dtype=torch.uint8)
    assert net.quantiles(obs, torch.rand(2, 5)).shape == (2, 6, 5)
