"""canter's QR-DQN against sb3-contrib as a reference implementation (moved from test_reference_sb3_contrib.py,
whose docstring describes the method; TRPO's comparison stays there).

* **QR-DQN**: ``qrdqn`` (``DQN`` with ``n_quantiles``) against ``sb3_contrib.QRDQN.train()`` from the
  same quantile network, on the same minibatches: the per-step quantile Huber losses, every
  parameter after the steps, and a Polyak target update afterwards.
* The shipped ``qrdqn/CartPole-v1`` preset against rl-zoo3's entry and sb3-contrib's QRDQN defaults.
"""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

pytest.importorskip("sb3_contrib")
pytestmark = pytest.mark.usefixtures("restore_global_rngs")  # SB3's seed= reseeds them process-wide

import sb3_contrib.qrdqn.qrdqn as sb3_qrdqn_module  # noqa: E402
from test_reference_sb3_offpolicy import (  # noqa: E402
    _assert_params_close, _assert_relu_mlp, _assert_same_adam, _cat, _discrete_batches, _feed, _params,
    _perturb, _sb3,
)

from canter.algorithms.dqn import QRDQN, QRDQNConfig  # noqa: E402


# -- QR-DQN ---------------------------------------------------------------------------------------
N_QUANTILES = 25  # neither library's default (canter's qrdqn: 50, SB3: 200)
QR_STEPS = 4


def _head_rows(n_actions: int, n_quantiles: int) -> torch.Tensor:
    """SB3's output row of each of canter's: canter views the head's output as ``[A, N]`` (row
    ``a * N + j``), SB3 as ``[N, A]`` (row ``j * A + a``)."""
    a, j = torch.meshgrid(torch.arange(n_actions), torch.arange(n_quantiles), indexing="ij")
    return (j * n_actions + a).reshape(-1)


def _sb3_qr_params(net, n_actions: int) -> list[torch.Tensor]:
    """SB3's quantile network parameters in canter's layout (output rows permuted)."""
    *trunk, w, b = net.quantile_net.parameters()
    rows = _head_rows(n_actions, N_QUANTILES)
    return [*trunk, w[rows], b[rows]]


def _copy_qr(ours, theirs, n_actions: int) -> None:
    *trunk, w, b = ours.parameters()
    *trunk2, w2, b2 = theirs.quantile_net.parameters()
    assert [p.shape for p in trunk] == [p.shape for p in trunk2] and w.shape == w2.shape
    rows = _head_rows(n_actions, N_QUANTILES)
    with torch.no_grad():
        for p, p2 in zip(trunk, trunk2):
            p2.copy_(p)
        w2[rows] = w
        b2[rows] = b


def _qrdqn_pair(tau: float):
    """canter's ``qrdqn`` and SB3's QR-DQN on CartPole-v1, configured the same: N_QUANTILES, lr 1e-4,
    gradient-norm clip 10 and Adam epsilon 1e-8 (canter's defaults, DQN's; SB3's QR-DQN defaults
    are lr 5e-5, no clipping, eps 0.01 / batch_size, as in the QR-DQN paper), Polyak rate ``tau``.
    Same online network, same (different) target network."""
    env = gym.make("CartPole-v1")
    torch.manual_seed(0)
    ours = QRDQN(env.observation_space, env.action_space, QRDQNConfig(n_quantiles=N_QUANTILES, tau=tau), seed=0)
    c = ours.config
    theirs = _sb3(sb3_qrdqn_module.QRDQN, "CartPole-v1", learning_rate=c.lr, max_grad_norm=c.max_grad_norm, tau=tau,
                  target_update_interval=1,
                  policy_kwargs=dict(n_quantiles=N_QUANTILES, net_arch=c.net_arch, optimizer_class=torch.optim.Adam,
                                     optimizer_kwargs=dict(eps=1e-8)))
    assert (c.gamma, c.batch_size, c.n_step) == (theirs.gamma, theirs.batch_size, theirs.n_steps) == (0.99, 32, 1)
    assert not (c.double_q or c.dueling or c.prioritized) and theirs.n_quantiles == N_QUANTILES
    assert not ours.uses_manual_backward  # QR-DQN takes the autograd path
    _assert_relu_mlp(theirs.quantile_net.quantile_net, c.net_arch)
    _assert_same_adam(ours.optimizer, theirs.policy.optimizer)
    _perturb(ours.q_target, 0.2)
    _copy_qr(ours.q, theirs.quantile_net, 2)
    _copy_qr(ours.q_target, theirs.quantile_net_target, 2)
    obs = torch.randn(8, 4)
    with torch.no_grad():  # the layouts agree: [B, A, N] against SB3's [B, N, A]
        for a, b in ((ours.q, theirs.quantile_net), (ours.q_target, theirs.quantile_net_target)):
            torch.testing.assert_close(a.quantiles(obs), b(obs).transpose(1, 2), rtol=1e-6, atol=1e-6)
    return ours, theirs


@pytest.mark.parametrize("path", ["phase", "step"])
def test_qrdqn_gradient_steps_match_sb3_contrib(path, monkeypatch):
    """QR_STEPS gradient steps: quantile Huber loss (kappa 1, midpoints (j + 0.5) / N, summed over
    the predicted quantiles, averaged over the target ones and the batch) against the target
    network's quantiles of its greedy (mean) action, gradient-norm clip (two of the steps clipped),
    Adam; then one Polyak target update. ``phase`` is the trainer's path (``learn_phase``), ``step``
    one ``learn`` per minibatch."""
    tau = 0.3
    ours, theirs = _qrdqn_pair(tau)
    batches = _discrete_batches(QR_STEPS, ours.config.batch_size, 2, seed=1)
    q_before, target_before = _params(ours.q), _params(ours.q_target)

    stats = ours.learn_phase(_cat(batches), QR_STEPS) if path == "phase" else [ours.learn(b) for b in batches]
    _feed(theirs, batches)
    losses, norms = [], []
    loss_fn, clip = sb3_qrdqn_module.quantile_huber_loss, torch.nn.utils.clip_grad_norm_

    def recording_loss(*args, **kwargs):  # noqa: ANN002, ANN003
        out = loss_fn(*args, **kwargs)
        losses.append(out.item())
        return out

    def recording_clip(*args, **kwargs):  # noqa: ANN002, ANN003
        norms.append(float(clip(*args, **kwargs)))
        return norms[-1]

    with monkeypatch.context() as m:
        m.setattr(sb3_qrdqn_module, "quantile_huber_loss", recording_loss)
        m.setattr(torch.nn.utils, "clip_grad_norm_", recording_clip)
        theirs.train(gradient_steps=QR_STEPS, batch_size=ours.config.batch_size)

    assert len(losses) == QR_STEPS and ours.updates == QR_STEPS
    assert sum(norm > ours.config.max_grad_norm for norm in norms) == 2  # the clip acted on two steps
    np.testing.assert_allclose([s["loss"] for s in stats], losses, rtol=1e-5, atol=1e-6)
    assert np.mean(losses) == pytest.approx(theirs.logger.name_to_value["train/loss"], rel=1e-6)
    _assert_params_close(ours.q, _sb3_qr_params(theirs.quantile_net, 2), "quantile network", q_before,
                         min_change=0.5 * QR_STEPS * ours.config.lr)
    assert all(torch.equal(a, b) for a, b in zip(_params(ours.q_target), target_before))
    assert all(torch.equal(a, b) for a, b in zip(_params(_sb3_qr_params(theirs.quantile_net_target, 2)), target_before))

    # the target update: canter's sync_target against SB3's _on_step (target_update_interval 1)
    ours.sync_target()
    theirs._on_step()
    _assert_params_close(ours.q_target, _sb3_qr_params(theirs.quantile_net_target, 2), "target network",
                         target_before, min_change=0.01)


# rl-zoo3's hyperparams/qrdqn.yml entry for CartPole-v1 (the "Tuned" one), as sb3-contrib's QRDQN
# keyword arguments; everything it leaves out is sb3-contrib's QRDQN default.
ZOO_QRDQN_CARTPOLE = dict(learning_rate=2.3e-3, batch_size=64, buffer_size=100_000, learning_starts=1000, gamma=0.99,
                          target_update_interval=10, train_freq=256, gradient_steps=128, exploration_fraction=0.16,
                          exploration_final_eps=0.04, policy_kwargs=dict(net_arch=[256, 256], n_quantiles=10))


def test_qrdqn_cartpole_preset_is_rl_zoo3s():
    """The shipped ``qrdqn/CartPole-v1`` preset says it is rl-zoo3's: the values rl-zoo3's run uses,
    its entry's and, where the entry is silent, sb3-contrib's QRDQN defaults (no gradient clipping,
    Adam epsilon 0.01 / batch_size), not DQN's (clip 10, epsilon 1e-8)."""
    from canter.config import resolve_config
    from canter.optim import clip_grad_norm_

    run, c = resolve_config("qrdqn", "CartPole-v1")
    theirs = _sb3(sb3_qrdqn_module.QRDQN, "CartPole-v1", **ZOO_QRDQN_CARTPOLE)
    assert run.n_envs == 1 and run.max_steps == 50_000  # rl-zoo3: n_timesteps 5e4, one env
    ours = {"lr": c.lr, "batch_size": c.batch_size, "buffer_size": c.buffer_size, "learning_starts": c.learning_starts,
            "gamma": c.gamma, "tau": c.tau, "target_update_interval": c.target_update_interval,
            "train_freq": c.train_freq, "gradient_steps": c.gradient_steps,
            "exploration_fraction": c.exploration_fraction, "exploration_initial_eps": c.exploration_initial_eps,
            "exploration_final_eps": c.exploration_final_eps, "max_grad_norm": c.max_grad_norm,
            "net_arch": c.net_arch, "n_quantiles": c.n_quantiles, "adam_eps": c.adam_eps}
    reference = {"lr": theirs.learning_rate, "batch_size": theirs.batch_size, "buffer_size": theirs.buffer_size,
                 "learning_starts": theirs.learning_starts, "gamma": theirs.gamma, "tau": theirs.tau,
                 "target_update_interval": theirs.target_update_interval, "train_freq": theirs.train_freq.frequency,
                 "gradient_steps": theirs.gradient_steps, "exploration_fraction": theirs.exploration_fraction,
                 "exploration_initial_eps": theirs.exploration_initial_eps,
                 "exploration_final_eps": theirs.exploration_final_eps, "max_grad_norm": theirs.max_grad_norm,
                 "net_arch": theirs.policy.net_arch, "n_quantiles": theirs.n_quantiles,
                 "adam_eps": theirs.policy.optimizer.defaults["eps"]}
    assert ours == pytest.approx(reference)
    assert not (c.double_q or c.dueling or c.prioritized) and c.n_step == 1 and c.huber

    # no clipping: a gradient far above DQN's norm 10 passes unscaled, and the norm is still returned
    env = gym.make("CartPole-v1")
    algo = QRDQN(env.observation_space, env.action_space, c, seed=0)
    assert algo.optimizer.param_groups[0]["eps"] == pytest.approx(0.01 / 64)
    for p in algo.params:
        p.grad = torch.full_like(p, 100.0)
    before = [p.grad.clone() for p in algo.params]
    norm = float(clip_grad_norm_(algo.optimizer, algo.params, c.max_grad_norm))
    assert norm > 1e3 and all(torch.equal(p.grad, b) for p, b in zip(algo.params, before))
