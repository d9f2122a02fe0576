"""Numerical equivalence with Stable-Baselines3 as a reference for canter's DQN (moved from
test_reference_sb3_offpolicy.py, whose docstring describes the method and whose helpers these tests use):
DQN's training phase against SB3's ``train``, and Double DQN (which SB3 lacks) against a plain reference step
on SB3's networks and Adam."""
from __future__ import annotations

import pytest

pytest.importorskip("stable_baselines3")
pytestmark = pytest.mark.usefixtures("restore_global_rngs")  # SB3's seed= reseeds them process-wide

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from stable_baselines3 import DQN as SB3DQN  # noqa: E402
from test_reference_sb3_offpolicy import (  # noqa: E402
    STEPS, _assert_params_close, _assert_relu_mlp, _assert_same_adam, _cat, _copy, _discrete_batches, _feed, _params,
    _perturb, _record_calls, _sb3,
)

from canter.algorithms.dqn import DQN, DQNConfig  # noqa: E402
from canter.data.batch import ReplayBatch  # noqa: E402


def _dqn_pair(**config) -> tuple[DQN, SB3DQN]:
    """canter's and SB3's DQN on CartPole-v1 with their default hyperparameters, the same online
    network and the same (different) target network."""
    env = gym.make("CartPole-v1")
    torch.manual_seed(0)
    ours = DQN(env.observation_space, env.action_space, DQNConfig(**config), seed=0)
    theirs = _sb3(SB3DQN, "CartPole-v1")
    c = ours.config
    assert (c.lr, c.gamma, c.batch_size, c.max_grad_norm, c.tau) == (
        theirs.learning_rate, theirs.gamma, theirs.batch_size, theirs.max_grad_norm, theirs.tau)
    assert (c.train_freq, c.gradient_steps, c.target_update_interval, c.learning_starts) == (
        theirs.train_freq.frequency, theirs.gradient_steps, theirs.target_update_interval, theirs.learning_starts)
    assert (c.exploration_fraction, c.exploration_initial_eps, c.exploration_final_eps) == (
        theirs.exploration_fraction, theirs.exploration_initial_eps, theirs.exploration_final_eps)
    assert c.huber and not c.dueling and c.n_quantiles == 0 and c.double_q == bool(config.get("double_q"))
    _assert_relu_mlp(theirs.q_net.q_net, c.net_arch)
    _assert_same_adam(ours.optimizer, theirs.policy.optimizer)
    _perturb(ours.q_target, 0.2)
    _copy(ours.q, theirs.q_net)
    _copy(ours.q_target, theirs.q_net_target)
    return ours, theirs


@pytest.mark.parametrize("path", ["phase_manual", "step_manual", "step_autograd", "phase_autograd"])
def test_dqn_training_phase_matches_sb3(path, monkeypatch):
    """STEPS gradient steps: Huber TD loss against the target network's max, gradient-norm clip at 10
    (two of the steps clipped), Adam. ``phase_manual`` is what users get (the off-policy trainer with
    gradient_steps > 1): ``learn_phase`` on the hand-derived gradient path; ``step_*`` calls ``learn``
    once per minibatch; ``*_autograd`` is ``manual_backward=False``."""
    ours, theirs = _dqn_pair(manual_backward=path.endswith("manual"))
    assert ours.uses_manual_backward == path.endswith("manual")
    batches = _discrete_batches(STEPS, ours.config.batch_size, 2, seed=1)
    q_before, target_before = _params(ours.q), _params(ours.q_target)

    stats = ours.learn_phase(_cat(batches), STEPS) if path.startswith("phase") else [ours.learn(b) for b in batches]
    _feed(theirs, batches)
    with monkeypatch.context() as m:
        sb3_losses = _record_calls(m, "smooth_l1_loss")
        theirs.train(gradient_steps=STEPS, batch_size=ours.config.batch_size)

    assert len(sb3_losses) == STEPS and ours.updates == STEPS
    np.testing.assert_allclose([s["loss"] for s in stats], sb3_losses, rtol=1e-5, atol=1e-6)
    _assert_params_close(ours.q, theirs.q_net, "Q-network", q_before, min_change=0.5 * STEPS * ours.config.lr)
    # targets move between training phases only (every target_update_interval env steps), in both
    assert all(torch.equal(a, b) for a, b in zip(_params(ours.q_target), target_before))
    assert all(torch.equal(a, b) for a, b in zip(_params(theirs.q_net_target), target_before))


def _double_dqn_reference(q_net, q_target, optimizer, batch: ReplayBatch, max_grad_norm: float) -> float:
    """One Double DQN step written out plainly (van Hasselt et al. 2016): the online network picks
    the next action, the target network values it; Huber loss, gradient-norm clip, optimizer step."""
    with torch.no_grad():
        best = q_net(batch.next_obs).argmax(1, keepdim=True)
        next_v = q_target(batch.next_obs).gather(1, best).squeeze(1)
        target = batch.rewards + batch.discounts * (1.0 - batch.terminated) * next_v
    q = q_net(batch.obs).gather(1, batch.actions.long().view(-1, 1)).squeeze(1)
    loss = torch.nn.functional.smooth_l1_loss(q, target)
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(q_net.parameters(), max_grad_norm)
    optimizer.step()
    return loss.item()


@pytest.mark.parametrize("path", ["phase_manual", "step_autograd"])
def test_double_dqn_matches_plain_reference(path):
    """SB3 has no Double DQN: SB3's networks and Adam, driven by the plain Double DQN step above."""
    ours, theirs = _dqn_pair(manual_backward=path.endswith("manual"), double_q=True)
    batches = _discrete_batches(STEPS, ours.config.batch_size, 2, seed=2)
    with torch.no_grad():  # target's actions swapped, in both: the online network's choice matters
        for net in (ours.q_target, theirs.q_net_target):
            w, b = list(net.parameters())[-2:]
            w.copy_(w.flip(0))
            b.copy_(b.flip(0))
        next_obs = _cat(batches).next_obs
        assert (theirs.q_net(next_obs).argmax(1) != theirs.q_net_target(next_obs).argmax(1)).float().mean() > 0.25
    before = _params(ours.q)
    stats = ours.learn_phase(_cat(batches), STEPS) if path.startswith("phase") else [ours.learn(b) for b in batches]
    ref = [_double_dqn_reference(theirs.q_net, theirs.q_net_target, theirs.policy.optimizer, b, 10.0) for b in batches]
    np.testing.assert_allclose([s["loss"] for s in stats], ref, rtol=1e-5, atol=1e-6)
    _assert_params_close(ours.q, theirs.q_net, "Q-network", before, min_change=0.5 * STEPS * ours.config.lr)
