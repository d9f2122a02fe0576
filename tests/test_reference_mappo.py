"""MAPPO's update against a reference written here from Yu et al. 2022 (MAPPO) and its ValueNorm.

Decentralised actor on the agent's own row, centralised critic on the state row; PPO's clipped surrogate
with ``r = pi / pi_old`` and advantages normalised per minibatch; ValueNorm as the paper's reference code
has it on a first batch: the critic learns ``(R - mu) / sigma`` with ``mu`` and ``sigma^2`` the returns' mean
and (population) variance, and value clipping (``max`` of the clipped and unclipped squared errors) is
centred on the critic's own old outputs; entropy bonus; Adam. Log-probabilities and entropies come from
``torch.distributions``; the network is a copy of the algorithm's. Compared after three epochs on one
minibatch (the ratio and value clips biting by then): every gradient and every parameter, with canter's
hand-derived update (``manual_backward``, the default) and with autograd.
"""
from __future__ import annotations

import copy

import gymnasium as gym
import pytest
import torch

from canter.algorithms.mappo import MAPPO, MAPPOConfig
from canter.data.batch import RolloutBatch

B, W, ACTIONS = 48, 5, 3


@pytest.mark.parametrize("manual", [True, False])
def test_mappo_epochs_match_the_papers_loss_with_value_norm_and_clipping(manual):
    clip, clip_vf, lr, epochs, ent_coef, vf_coef = 0.2, 0.05, 0.03, 3, 0.02, 0.7
    algo = MAPPO(gym.spaces.Box(-3, 3, (2, W)), gym.spaces.Discrete(ACTIONS),  # seeded weights: the clips bite
                 MAPPOConfig(net_arch=[16], lr=lr, n_epochs=epochs, batch_size=B, clip_range=clip,
                             clip_range_vf=clip_vf, ent_coef=ent_coef, vf_coef=vf_coef, max_grad_norm=1e6,
                             manual_backward=manual), seed=0)
    assert algo.config.normalize_value and algo.uses_manual_backward == manual
    ref = copy.deepcopy(algo.model)
    opt = torch.optim.Adam(ref.parameters(), lr=lr, eps=algo.config.adam_eps)
    g = torch.Generator().manual_seed(0)
    obs = torch.randn(B, 2, W, generator=g)
    with torch.no_grad():
        out = algo.act(obs)
        old_v = ref.value(obs)  # the critic's own outputs, which acting scaled back (by mean 0, std 1 here)
    returns, adv = 2.0 + 1.5 * torch.randn(B, generator=g), torch.randn(B, generator=g)
    batch = RolloutBatch(obs, out.actions, out.log_probs, out.values, adv, returns)
    target = (returns - returns.mean()) / returns.var(unbiased=False).sqrt()
    a = (adv - adv.mean()) / (adv.std() + 1e-8)
    for _ in range(epochs):
        logits, v = ref.action(obs), ref.value(obs)
        dist = torch.distributions.Categorical(logits=logits)
        ratio = (dist.log_prob(out.actions) - out.log_probs).exp()
        pg = -torch.min(a * ratio, a * ratio.clamp(1 - clip, 1 + clip)).mean()
        v_clipped = old_v + (v - old_v).clamp(-clip_vf, clip_vf)
        v_loss = torch.max((v - target) ** 2, (v_clipped - target) ** 2).mean()
        opt.zero_grad()
        (pg + vf_coef * v_loss - ent_coef * dist.entropy().mean()).backward()
        opt.step()
    assert ((ratio - 1).abs() > clip).any() and ((v - old_v).abs() > clip_vf).any()  # both clips bit
    algo.learn(batch)
    for (name, ours), theirs in zip(algo.model.named_parameters(), ref.parameters()):
        torch.testing.assert_close(ours.grad, theirs.grad, rtol=1e-3, atol=1e-5, msg=lambda m, n=name: f"grad {n}: {m}")
        torch.testing.assert_close(ours, theirs, rtol=1e-4, atol=1e-5, msg=lambda m, n=name: f"{n}: {m}")
