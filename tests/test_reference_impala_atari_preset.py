"""The IMPALA Atari preset weighs its losses as the IMPALA paper's code does.

Espeholt et al. 2018's Atari settings (Table G.1; deepmind/scalable_agent's ``experiment.py``) use
baseline cost 0.5 and entropy cost 0.01 on the losses

    pg       = sum( -A_s log pi(a_s|x_s) )
    baseline = 0.5 * sum( (v_s - V(x_s))^2 )        "multiply by 0.5 to match d(loss)/d(baseline) = advantage"
    entropy  = -sum( H(pi(.|x_s)) )
    total    = pg + baseline_cost * baseline + entropy_cost * entropy

canter's value loss is ``mean((v_s - V)^2)`` without the 1/2 (and means for sums, which scales all
three alike), so the paper's baseline cost 0.5 is ``vf_coef`` 0.25 here. The preset said "baseline
cost 0.5" and set ``vf_coef: 0.5``, twice the paper's weight on the value loss. Compared: every
parameter's gradient of one update of an IMPALA built with the preset's coefficients (a small MLP in
place of the ResNet: the weighting does not depend on the network) against the paper's total loss / n.
"""
from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import torch

from canter.algorithms.impala import IMPALA
from canter.config import build, resolve_config
from canter.data.batch import TrajectoryBatch
from canter.distributed.vtrace import vtrace

T, N, OBS, ACTIONS = 6, 3, 4, 3
BASELINE_COST, ENTROPY_COST = 0.5, 0.01  # the paper's Atari settings


def _preset_algo() -> IMPALA:
    _, preset = resolve_config("impala", "ALE/Pong-v5")  # any ALE id: impala/atari.yaml
    assert preset.ent_coef == ENTROPY_COST
    cfg = build(IMPALA.Config, dict(net_arch=[8], vf_coef=preset.vf_coef, ent_coef=preset.ent_coef,
                                    gamma=preset.gamma, max_grad_norm=1e6))
    return IMPALA(gym.spaces.Box(-5, 5, (OBS,), np.float32), gym.spaces.Discrete(ACTIONS), cfg, seed=0)


def _batch() -> TrajectoryBatch:
    g = torch.Generator().manual_seed(1)
    dones, terminated = torch.zeros(T, N), torch.zeros(T, N)
    dones[2, 1] = terminated[2, 1] = 1.0  # env 1 terminates at row 2; row 3 is its autoreset row
    valid = torch.ones(T, N, dtype=torch.bool)
    valid[3, 1] = False
    return TrajectoryBatch(torch.randn(T, N, OBS, generator=g), torch.randint(0, ACTIONS, (T, N), generator=g),
                           -1.0 + 0.5 * torch.randn(T, N, generator=g), torch.randn(T, N, generator=g), terminated,
                           dones, valid, torch.randn(N, OBS, generator=g))


def test_impala_atari_preset_weighs_the_value_loss_as_the_papers_baseline_cost():
    algo = _preset_algo()
    ref = copy.deepcopy(algo.model)
    batch = _batch()
    out, v = ref.action_value(batch.obs.reshape(T * N, OBS))
    dist = torch.distributions.Categorical(logits=out.view(T, N, ACTIONS))
    logp, ent, values = dist.log_prob(batch.actions), dist.entropy(), v.view(T, N)
    boot = ref.action_value(batch.last_obs)[1]
    vt = vtrace(logp.detach() - batch.behaviour_log_probs, batch.rewards, values.detach(), boot.detach(),
                batch.terminated, batch.dones, algo.config.gamma)
    m = batch.valid
    pg = -(vt.pg_advantages[m] * logp[m]).sum()
    baseline = 0.5 * (vt.vs[m] - values[m]).pow(2).sum()
    entropy = -ent[m].sum()
    ((pg + BASELINE_COST * baseline + ENTROPY_COST * entropy) / m.sum()).backward()
    algo.learn(batch)
    for (name, ours), theirs in zip(algo.model.named_parameters(), ref.parameters()):
        torch.testing.assert_close(ours.grad, theirs.grad, rtol=1e-5, atol=1e-7, msg=lambda s, n=name: f"{n}: {s}")
