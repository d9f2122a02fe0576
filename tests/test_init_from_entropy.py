"""init_from of an agent that learned an entropy coefficient (SAC, TQC, discrete SAC): the new run's learned
coefficient starts from the source's, as Stable-Baselines3's ``SAC.load(path, env=new_env)`` restores
``log_ent_coef``; it restarted at 1, whose entropy bonus swamped the trained policy's Q values."""
from __future__ import annotations

import math

import pytest
import torch

import canter

TINY = dict(max_steps=64, net_arch=[16], learning_starts=32, batch_size=16, eval_every=0, eval_episodes=1)


def _source(algo: str, env: str, path, **kwargs):
    """A saved ``algo`` agent whose learned log_alpha is log(0.05) (a fixed one is left as it is)."""
    trainer = canter.make_trainer(algo, env, seed=0, **TINY, **kwargs)
    if trainer.algorithm.ent_coef.optimizer is not None:
        with torch.no_grad():
            trainer.algorithm.ent_coef.log_alpha.fill_(math.log(0.05))
    trainer.agent.save(path)
    trainer.close()
    return str(path)


@pytest.mark.parametrize("algo, env", [("sac", "Pendulum-v1"), ("tqc", "Pendulum-v1"), ("sac_discrete", "CartPole-v1")])
def test_a_learned_entropy_coefficient_starts_from_the_sources(algo, env, tmp_path):
    extra = dict(n_quantiles=5) if algo == "tqc" else {}
    source = _source(algo, env, tmp_path / "agent", **extra)
    with canter.make_trainer(algo, env, seed=1, init_from=source, **TINY, **extra) as trainer:
        assert trainer.algorithm.ent_coef.value.item() == pytest.approx(0.05)


@pytest.mark.parametrize("ent_coef, expected", [("auto_0.3", 0.3), ("0.2", 0.2)])
def test_an_entropy_coefficient_the_new_run_sets_is_its_own(ent_coef, expected, tmp_path):
    """An explicit start (auto_<init>) or a fixed coefficient is the new run's choice, not the source's."""
    source = _source("sac", "Pendulum-v1", tmp_path / "agent")
    with canter.make_trainer("sac", "Pendulum-v1", seed=1, init_from=source, ent_coef=ent_coef, **TINY) as trainer:
        assert trainer.algorithm.ent_coef.value.item() == pytest.approx(expected)


def test_a_source_without_entropy_bonus_leaves_the_learned_coefficient_at_its_start(tmp_path):
    """ent_coef 0 saves log_alpha -inf, from which a learned coefficient could never move."""
    source = _source("sac", "Pendulum-v1", tmp_path / "agent", ent_coef="0")
    with canter.make_trainer("sac", "Pendulum-v1", seed=1, init_from=source, **TINY) as trainer:
        assert trainer.algorithm.ent_coef.value.item() == pytest.approx(1.0)
