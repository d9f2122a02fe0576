"""REINFORCE's update against a reference written here from Williams 1992 / Sutton & Barto 13.4.

A rollout in canter's buffer (gymnasium's NEXT_STEP layout: the row after an episode's last step holds its
final observation and is not a transition) with terminations, truncations and episodes cut by the rollout's
end. The reference sums each return-to-go ``G_t = sum_k gamma^k r_{t+k}`` over the rest of its episode by
hand, completing a cut episode (a time limit, or the end of the rollout) with ``gamma^k V(s_cut)``, never 0;
the loss is ``-mean(log pi(a_t|s_t) A_t)`` with ``A_t = G_t - V(s_t)`` (normalised over the rollout, or not),
the baseline's ``vf_coef * mean((G_t - V(s_t))^2)`` and the entropy bonus, log-probabilities and
entropies from ``torch.distributions`` on a copy of the network. Compared: every gradient after one step.
"""
from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import pytest
import torch

from canter.algorithms.reinforce import REINFORCE
from canter.config import build
from canter.data.rollout import RolloutBuffer

T, N, OBS, ACTIONS, GAMMA = 9, 3, 4, 3, 0.9


def _returns_to_go(rewards, values, last_values, terminated, dones):
    """Monte-Carlo returns to go, row by row, each summed forward to its episode's end."""
    out = np.zeros((T, N))
    for n in range(N):
        for t in range(T):
            total, s = 0.0, t
            while True:
                total += GAMMA ** (s - t) * rewards[s, n]
                if terminated[s, n]:
                    break
                if dones[s, n] or s == T - 1:  # cut: the rest of the episode is the baseline's estimate
                    total += GAMMA ** (s - t + 1) * (values[s + 1, n] if s + 1 < T else last_values[n])
                    break
                s += 1
            out[t, n] = total
    return out


@pytest.mark.parametrize("normalize", [True, False])
def test_reinforce_gradient_is_the_monte_carlo_policy_gradient_with_a_baseline(normalize):
    ent_coef, vf_coef = 0.03, 0.6
    cfg = build(REINFORCE.Config, dict(net_arch=[8], gamma=GAMMA, normalize_advantage=normalize, ent_coef=ent_coef,
                                       vf_coef=vf_coef, max_grad_norm=1e6, n_steps=T))
    algo = REINFORCE(gym.spaces.Box(-5, 5, (OBS,), np.float32), gym.spaces.Discrete(ACTIONS), cfg, seed=0)
    ref = copy.deepcopy(algo.model)
    g = torch.Generator().manual_seed(0)
    obs, last_obs = torch.randn(T, N, OBS, generator=g), torch.randn(N, OBS, generator=g)
    actions = torch.randint(0, ACTIONS, (T, N), generator=g)
    rewards = torch.randn(T, N, generator=g).numpy()
    terminated, truncated = np.zeros((T, N), np.float32), np.zeros((T, N), np.float32)
    terminated[2, 0] = truncated[5, 1] = terminated[1, 2] = truncated[6, 2] = 1.0
    valid = np.ones((T, N), bool)
    valid[1:][(terminated + truncated)[:-1] > 0] = False  # the row after an episode's end: its final observation
    with torch.no_grad():
        dist = torch.distributions.Categorical(logits=ref.action(obs.reshape(-1, OBS)))
        values, last_values = ref.value(obs.reshape(-1, OBS)).view(T, N), ref.value(last_obs)
    buf = RolloutBuffer(T, N, (OBS,), (), act_dtype=torch.int64)
    for t in range(T):
        buf.add(obs[t], actions[t], dist.log_prob(actions.reshape(-1)).view(T, N)[t], values[t], rewards[t], terminated[t],
                truncated[t], valid[t])
    batch = buf.finish(last_values, GAMMA, 1.0)
    m = torch.from_numpy(valid)
    G = torch.from_numpy(_returns_to_go(rewards, values.numpy(), last_values.numpy(), terminated,
                                        terminated + truncated)).float()[m]
    dist = torch.distributions.Categorical(logits=ref.action(obs[m]))
    v = ref.value(obs[m])
    adv = G - v.detach()
    if normalize:
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
    loss = -(dist.log_prob(actions[m]) * adv).mean() + vf_coef * (G - v).pow(2).mean() - ent_coef * dist.entropy().mean()
    loss.backward()
    algo.learn(batch)
    for (name, ours), theirs in zip(algo.model.named_parameters(), ref.parameters()):
        torch.testing.assert_close(ours.grad, theirs.grad, rtol=1e-4, atol=1e-6, msg=lambda m, n=name: f"grad {n}: {m}")
