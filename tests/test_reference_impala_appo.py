"""IMPALA's and APPO's whole update against a reference written here from the papers' equations.

Espeholt et al. 2018 (IMPALA), section 4: the V-trace target by its recursion
``v_s = V(x_s) + rho_s delta_s + gamma c_s (v_{s+1} - V(x_{s+1}))``, ``delta_s = r_s + gamma V(x_{s+1}) - V(x_s)``,
``rho_s = min(rho_bar, pi/mu)``, ``c_s = lambda min(c_bar, pi/mu)``, the policy-gradient advantage
``min(pg_rho_bar, pi/mu) (r_s + gamma v_{s+1} - V(x_s))``, episode ends inside the unroll (a termination
ends in 0, a truncation in the value of the final observation, in the next row under gymnasium's
NEXT_STEP autoreset, whose own row is masked out), and the loss (canter's documented variant: means
over real rows, value loss ``vf_coef (v_s - V)^2``, entropy bonus). APPO: the same targets under the
policy when the batch arrives, then PPO's clipped surrogate (Schulman et al. 2017) with
``r = pi / pi_old``. Log-probabilities and entropies come from ``torch.distributions``; the
network is a copy of the algorithm's (Discrete actions, and for IMPALA Box ones: a diagonal Gaussian with its
free ``log_std``). Compared: every parameter's gradient after the update.
"""
from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import pytest
import torch

from canter.algorithms.appo import APPO
from canter.algorithms.impala import IMPALA
from canter.config import build
from canter.data.batch import TrajectoryBatch

T, N, OBS, ACTIONS = 7, 3, 4, 3
CLIPS = dict(gamma=0.9, vtrace_lambda=0.8, rho_clip=1.3, c_clip=0.7, pg_rho_clip=1.1, vf_coef=0.4, ent_coef=0.05,
             max_grad_norm=1e6)


def _batch(continuous: bool = False) -> TrajectoryBatch:
    """A batch with terminations and truncations inside the unroll and on its last row, each episode end
    followed by its autoreset row (invalid), and behaviour log-probs far from the learner's."""
    g = torch.Generator().manual_seed(0)
    dones = torch.zeros(T, N)
    terminated = torch.zeros(T, N)
    dones[1, 0] = terminated[1, 0] = 1.0  # env 0: terminated at row 1 (row 2 its autoreset row)
    dones[4, 1] = 1.0  # env 1: truncated at row 4 (row 5 holds the final observation)
    dones[T - 1, 2] = 1.0  # env 2: truncated on the last row (bootstraps from last_obs)
    dones[2, 2] = terminated[2, 2] = 1.0
    valid = torch.ones(T, N, dtype=torch.bool)
    valid[1:][dones[:-1].bool()] = False
    actions = torch.randn(T, N, 2, generator=g) if continuous else torch.randint(0, ACTIONS, (T, N), generator=g)
    return TrajectoryBatch(torch.randn(T, N, OBS, generator=g), actions,
                           -1.1 - 1.4 * continuous + 0.8 * torch.randn(T, N, generator=g), torch.randn(T, N, generator=g), terminated,
                           dones, valid, torch.randn(N, OBS, generator=g))


def _forward(model, batch: TrajectoryBatch):
    """Log-probs, entropies and values ``[T, N]`` and bootstrap values ``[N]`` by ``torch.distributions``."""
    out, v = model.action_value(batch.obs.reshape(T * N, OBS))
    if batch.actions.dim() == 3:  # a diagonal Gaussian (Box actions): the mean and the free log_std
        dist = torch.distributions.Normal(out.view(T, N, -1), model.log_std.exp())
        logp, ent = dist.log_prob(batch.actions).sum(-1), dist.entropy().sum(-1)
    else:
        dist = torch.distributions.Categorical(logits=out.view(T, N, ACTIONS))
        logp, ent = dist.log_prob(batch.actions), dist.entropy()
    return logp, ent, v.view(T, N), model.action_value(batch.last_obs)[1]


def _vtrace(batch: TrajectoryBatch, log_rho: torch.Tensor, values: torch.Tensor, boot: torch.Tensor, c: dict):
    """V-trace targets and policy-gradient advantages by the paper's backward recursion, env by env."""
    gamma, ratio = c["gamma"], log_rho.exp()
    vs, adv = torch.zeros(T, N), torch.zeros(T, N)
    for n in range(N):
        v_next_target = None  # v_{s+1} inside the episode
        for s in reversed(range(T)):
            next_value = values[s + 1, n] if s + 1 < T else boot[n]
            after = 0.0 if batch.terminated[s, n] else next_value  # the value the transition leads to
            if batch.dones[s, n] or s == T - 1:  # the episode (or the unroll) ends here
                v_next_target = after
            rho, cs = min(c["rho_clip"], ratio[s, n]), c["vtrace_lambda"] * min(c["c_clip"], ratio[s, n])
            delta = batch.rewards[s, n] + gamma * after - values[s, n]
            ends = batch.dones[s, n] or s == T - 1
            vs[s, n] = values[s, n] + rho * delta + (0.0 if ends else gamma * cs * (v_next_target - next_value))
            adv[s, n] = min(c["pg_rho_clip"], ratio[s, n]) * (batch.rewards[s, n] + gamma * v_next_target - values[s, n])
            v_next_target = vs[s, n]
    return vs, adv


def _algo(cls, continuous: bool = False, **kw):
    cfg = build(cls.Config, dict(net_arch=[8], **CLIPS, **kw))
    actions = gym.spaces.Box(-1, 1, (2,), np.float32) if continuous else gym.spaces.Discrete(ACTIONS)
    # seed=0 seeds the initial weights too, so the clips this test needs to bite do not depend on the tests run before
    return cls(gym.spaces.Box(-5, 5, (OBS,), np.float32), actions, cfg, seed=0)


def _assert_same_grads(algo, ref) -> None:
    for (name, ours), theirs in zip(algo.model.named_parameters(), ref.parameters()):
        assert ours.grad is not None and theirs.grad is not None, name
        torch.testing.assert_close(ours.grad, theirs.grad, rtol=1e-5, atol=1e-7, msg=lambda m, n=name: f"grad {n}: {m}")


@pytest.mark.parametrize("normalize, continuous", [(False, False), (True, False), (False, True)])
def test_impala_gradient_matches_the_papers_vtrace_loss(normalize, continuous):
    algo = _algo(IMPALA, continuous, normalize_advantage=normalize)
    ref = copy.deepcopy(algo.model)
    batch = _batch(continuous)
    logp, ent, values, boot = _forward(ref, batch)
    vs, adv = _vtrace(batch, logp.detach() - batch.behaviour_log_probs, values.detach(), boot.detach(), CLIPS)
    m = batch.valid
    assert ((logp - batch.behaviour_log_probs).exp() > 1.3).any() and ((logp - batch.behaviour_log_probs).exp() < 0.7).any()
    a = adv[m]
    if normalize:
        a = (a - a.mean()) / (a.std() + 1e-8)  # PPO's and APPO's normalisation (it was the population std)
    loss = -(a * logp[m]).mean() + CLIPS["vf_coef"] * (vs[m] - values[m]).pow(2).mean() - CLIPS["ent_coef"] * ent[m].mean()
    loss.backward()
    stats = algo.learn(batch)
    _assert_same_grads(algo, ref)
    assert stats["value_loss"] == pytest.approx(float((vs[m] - values[m]).detach().pow(2).mean()), rel=1e-5)


def test_appo_epochs_match_vtrace_advantages_under_ppos_clipped_surrogate():
    """Three epochs on one minibatch (a large learning rate, so the ratio's clip bites by the last): the
    V-trace targets are computed once, under pi_old, the network as the batch arrives."""
    clip, epochs, lr = 0.2, 3, 0.05
    algo = _algo(APPO, n_epochs=epochs, batch_size=T * N, clip_range=clip, normalize_advantage=True, lr=lr)
    ref = copy.deepcopy(algo.model)
    opt = torch.optim.Adam(ref.parameters(), lr=lr, eps=algo.config.adam_eps)
    batch = _batch()
    m = batch.valid
    with torch.no_grad():
        old_logp, _, old_values, boot = _forward(ref, batch)
    vs, adv = _vtrace(batch, old_logp - batch.behaviour_log_probs, old_values, boot, CLIPS)
    a = (adv[m] - adv[m].mean()) / (adv[m].std() + 1e-8)
    for _ in range(epochs):
        logp, ent, values, _ = _forward(ref, batch)
        ratio = (logp[m] - old_logp[m]).exp()
        pg = -torch.min(a * ratio, a * ratio.clamp(1 - clip, 1 + clip)).mean()
        loss = pg + CLIPS["vf_coef"] * (values[m] - vs[m]).pow(2).mean() - CLIPS["ent_coef"] * ent[m].mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert ((ratio - 1).abs() > clip).any()  # the clip bit in the last epoch
    algo.learn(batch)
    _assert_same_grads(algo, ref)
    for (name, ours), theirs in zip(algo.model.named_parameters(), ref.parameters()):
        torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-6, msg=lambda m, n=name: f"{n}: {m}")
