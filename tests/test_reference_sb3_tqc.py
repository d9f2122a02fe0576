"""Numerical equivalence with sb3-contrib's TQC: from identical weights, minibatches and
reparameterisation noise, canter's TQC takes the same gradient steps (entropy coefficient,
quantile critics against the truncated pooled target, actor, Polyak targets). TQC's learning test
is in tests/test_offpolicy_learning.py. The helpers and tolerances are those of tests/test_reference_sb3_offpolicy.py."""
from __future__ import annotations

import pytest

pytest.importorskip("sb3_contrib")
pytestmark = pytest.mark.usefixtures("restore_global_rngs")  # SB3's seed= reseeds them process-wide

import gymnasium as gym  # noqa: E402
import torch  # noqa: E402
from sb3_contrib import TQC as SB3TQC  # noqa: E402

from canter.algorithms.tqc import TQC, TQCConfig  # noqa: E402
from test_reference_sb3_offpolicy import (  # noqa: E402
    _assert_relu_mlp, _assert_same_adam, _box_batches, _copy_squashed_actor_critic, _pendulum_pair, _squashed_steps_match,
)


def _tqc_pair() -> tuple[TQC, SB3TQC]:
    """canter's and sb3-contrib's TQC on Pendulum-v1 with their defaults, identical networks."""
    ours, theirs = _pendulum_pair(TQC, TQCConfig(), SB3TQC)
    c = ours.config
    critic = theirs.critic
    assert (c.n_quantiles, c.n_critics, c.top_quantiles_to_drop_per_net, c.ent_coef, c.target_update_interval) == (
        critic.n_quantiles, critic.n_critics, theirs.top_quantiles_to_drop_per_net, theirs.ent_coef,
        theirs.target_update_interval)
    assert ours.ent_coef.target_entropy == theirs.target_entropy == -1.0
    _assert_relu_mlp(theirs.actor.latent_pi, c.net_arch)
    for q in critic.q_networks:
        _assert_relu_mlp(q, c.net_arch)
    _assert_same_adam(ours.actor_optimizer, theirs.actor.optimizer)
    _assert_same_adam(ours.critic_optimizer, theirs.critic.optimizer)
    _assert_same_adam(ours.ent_coef.optimizer, theirs.ent_coef_optimizer)

    _copy_squashed_actor_critic(ours, theirs)  # the SAC layout, 25 outputs per critic network
    return ours, theirs


def test_tqc_gradient_steps_match_sb3_contrib(monkeypatch):
    """STEPS TQC steps with identical noise: entropy coefficient, quantile critics against the
    truncated pooled target, actor on the mean quantile, Polyak targets (SAC's order)."""
    _squashed_steps_match(*_tqc_pair(), monkeypatch, batch_seed=5, noise_seed=6)


def test_truncation_drops_the_largest_pooled_quantiles(monkeypatch):
    """With every target quantile known, the target is built from the smallest ones only."""
    import canter.algorithms.tqc as tqc

    env = gym.make("Pendulum-v1")
    algo = TQC(env.observation_space, env.action_space, TQCConfig(n_quantiles=3, top_quantiles_to_drop_per_net=1),
               seed=0)
    batch = _box_batches(env.observation_space, 1, 1, 4, seed=1)[0]
    pooled = torch.tensor([[5.0, 1.0, 3.0], [2.0, 6.0, 4.0]])  # [E=2, N=3], the same for every sample
    algo.critic_target.forward = lambda obs, actions: pooled.unsqueeze(1).expand(2, obs.shape[0], 3)
    targets = []
    monkeypatch.setattr(tqc, "quantile_huber_loss", lambda current, target: targets.append(target) or current.sum(-1))
    algo.critic_loss(batch, torch.tensor(0.0))  # alpha 0: the target is r + discount * (1 - terminated) * z
    kept = torch.tensor([1.0, 2.0, 3.0, 4.0])  # 6 pooled, the largest one per network (2) dropped
    expected = batch.rewards[:, None] + (batch.discounts * (1 - batch.terminated))[:, None] * kept
    assert len(targets) == 1 and torch.allclose(targets[0], expected.unsqueeze(0))  # every network's target
