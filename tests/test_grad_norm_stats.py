"""PPO, recurrent PPO, MAPPO, APPO and IMPALA log ``grad_norm``, as A2C, REINFORCE and ACER do: the
gradients' global L2 norm before clipping, averaged over the update's minibatches (PPO's hand-derived
gradients and autograd give the same number). They logged none. Every case clips with a max_grad_norm the
gradients exceed, so a norm logged after clipping would fail it."""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch

import canter
from canter.algorithms.appo import APPO
from canter.algorithms.impala import IMPALA
from canter.algorithms.mappo import MAPPO, MAPPOConfig
from canter.algorithms.ppo import PPO, PPOConfig
from canter.config import build
from canter.data.batch import RolloutBatch, TrajectoryBatch

pytestmark = pytest.mark.filterwarnings("ignore:.*(less than one (rollout|training phase)|never learns).*")
DISCRETE = (gym.spaces.Box(-1, 1, (4,)), gym.spaces.Discrete(3))


def _norm(params) -> float:
    return float(torch.linalg.vector_norm(torch.cat([p.grad.reshape(-1) for p in params])))


def _batch(algo: PPO, n: int = 64) -> RolloutBatch:
    g = torch.Generator().manual_seed(1)
    obs = torch.randn(n, *algo.observation_space.shape, generator=g)
    with torch.no_grad():
        out = algo.act(obs)
    return RolloutBatch(obs, out.actions, out.log_probs + 0.4 * torch.randn(n, generator=g),
                        out.values + 0.3 * torch.randn(n, generator=g), torch.randn(n, generator=g),
                        torch.randn(n, generator=g))


def _ppo(cls=PPO, cfg_cls=PPOConfig, spaces=DISCRETE, **kw) -> PPO:
    torch.manual_seed(0)  # model initialisation
    return cls(*spaces, cfg_cls(net_arch=[16, 16], batch_size=64, **kw), seed=0)


def _reference_norms(algo: PPO, batch: RolloutBatch, epochs: int, steps: bool = True) -> list[float]:
    """Each epoch (one minibatch: the whole batch) by autograd: the norm, then torch's clip and a step."""
    norms = []
    for _ in range(epochs):
        algo._grads_autograd(algo._normalized(batch))
        norms.append(_norm(algo.params))
        if steps:
            torch.nn.utils.clip_grad_norm_(algo.params, algo.config.max_grad_norm)
            algo.optimizer.step()
    return norms


@pytest.mark.parametrize("manual", [True, False])
def test_ppo_logs_the_mean_gradient_norm_before_clipping(manual):
    epochs, clip = 3, 0.05
    ref = _ppo(manual_backward=False, n_epochs=epochs, max_grad_norm=clip)
    expected = _reference_norms(ref, _batch(ref), epochs)
    assert min(expected) > 2 * clip  # the clip bites: the norm after clipping would be 0.05
    algo = _ppo(manual_backward=manual, n_epochs=epochs, max_grad_norm=clip)
    assert algo.uses_manual_backward == manual
    stats = algo.learn(_batch(algo))
    assert stats["grad_norm"] == pytest.approx(np.mean(expected), rel=1e-4)


def test_ppo_stopped_by_target_kl_before_any_step_still_logs_the_norm():
    """The minibatch whose KL stops the epochs counts in every statistic's mean (as SB3's): its norm too."""
    ref = _ppo(manual_backward=False, n_epochs=2, target_kl=1e-9)
    expected = _reference_norms(ref, _batch(ref), 1, steps=False)
    algo = _ppo(n_epochs=2, target_kl=1e-9)
    stats = algo.learn(_batch(algo))
    assert algo.updates == 0
    assert stats["grad_norm"] == pytest.approx(expected[0], rel=1e-4)


def test_mappo_logs_the_gradient_norm():
    """(Value normalisation off: the reference feeds the returns as they are.)"""
    spaces = (gym.spaces.Box(-1, 1, (2, 7)), DISCRETE[1])
    clip = 0.05
    kw = dict(n_epochs=1, max_grad_norm=clip, normalize_value=False)
    ref = _ppo(MAPPO, MAPPOConfig, spaces, manual_backward=False, **kw)
    expected = _reference_norms(ref, _batch(ref), 1)
    assert expected[0] > 2 * clip  # the clip bites: the norm after clipping would be 0.05
    algo = _ppo(MAPPO, MAPPOConfig, spaces, **kw)
    assert algo.learn(_batch(algo))["grad_norm"] == pytest.approx(expected[0], rel=1e-4)


def _recurrent_first_update(max_grad_norm: float) -> tuple[float, float]:
    """The first update's logged ``grad_norm`` and the norm of the gradients it left (clipped ones)."""
    seen = []

    def after_update(trainer, losses):
        seen.append((losses["grad_norm"], _norm(trainer.agent.algorithm.params)))

    trainer = canter.make_trainer("recurrent_ppo", "CartPole-v1", max_steps=64, n_steps=16, n_envs=4, seed=0,
                                  eval_episodes=0, lstm_hidden=8, net_arch=[8], n_epochs=1, batch_size=64,
                                  max_grad_norm=max_grad_norm, hooks={"after_update": after_update})
    for _ in trainer():
        pass
    trainer.close()
    return seen[0]


def test_recurrent_ppo_logs_the_gradient_norm_before_clipping():
    """One epoch of one minibatch. Without clipping the gradients left after the update are the norm's; a run
    alike but for a clip of a quarter of that norm (the clip bites) logs the same norm, not the clipped one."""
    _assert_logs_the_norm_before_clipping(_recurrent_first_update, rel=1e-4)


def _assert_logs_the_norm_before_clipping(learned: Any, rel: float) -> None:
    """``learned(max_grad_norm) -> (logged grad_norm, norm of the gradients left)``: unclipped, the logged norm is the
    gradients'; with a clip of a quarter of it (the clip acts: the gradients left are at the clip), the logged
    norm is still the unclipped one."""
    logged, actual = learned(1e6)
    assert logged == pytest.approx(actual, rel=rel) and actual > 0
    clip = actual / 4
    logged_clipped, left = learned(clip)
    assert left == pytest.approx(clip, rel=1e-3)  # the clip acted
    assert logged_clipped == pytest.approx(actual, rel=rel)


def _trajectories() -> TrajectoryBatch:
    g = torch.Generator().manual_seed(0)
    T, N = 5, 2
    zeros = torch.zeros(T, N)
    return TrajectoryBatch(torch.randn(T, N, 4, generator=g), torch.randint(0, 3, (T, N), generator=g),
                           -1.1 + 0.5 * torch.randn(T, N, generator=g), torch.randn(T, N, generator=g), zeros, zeros,
                           torch.ones(T, N, dtype=torch.bool), torch.randn(N, 4, generator=g))


@pytest.mark.parametrize("cls", [IMPALA, APPO])
def test_impala_and_appo_log_the_gradient_norm(cls):
    """One gradient step (APPO: one epoch of one minibatch). Without clipping the gradients left are the norm's;
    the same algorithm with a clip of a quarter of that norm (the clip bites) logs the same norm, not the
    clipped one."""
    extra = dict(n_epochs=1, batch_size=10) if cls is APPO else {}

    def learned(max_grad_norm: float) -> tuple[float, float]:
        torch.manual_seed(0)
        config = build(cls.Config, dict(net_arch=[8], max_grad_norm=max_grad_norm, **extra))
        algo = cls(DISCRETE[0], DISCRETE[1], config, seed=0)
        return algo.learn(_trajectories())["grad_norm"], _norm(algo.params)

    _assert_logs_the_norm_before_clipping(learned, rel=1e-5)
