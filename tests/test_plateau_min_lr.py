"""A plateau makes no reduction once every learning rate is at ``min_lr``: before, ``lr_scale`` kept shrinking (x0.1
at each plateau, to 1e-7 in the run below) and each such plateau was logged in ``PlateauLR.reductions``, while no rate
changed; Keras's ``ReduceLROnPlateau`` stops reducing at its ``min_lr``. A resumed run still continues exactly."""
from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

import canter
from support import scripted

DQN = dict(plateau_patience=1, plateau_factor=0.1, min_lr=1e-5, lr=1e-3, learning_starts=0, train_freq=32,
           net_arch=[16], buffer_size=1000, n_envs=2, eval_every=32, eval_episodes=1, tensorboard=False, quiet=True)


def test_no_reduction_once_every_rate_is_at_min_lr():
    trainer = canter.make_trainer("dqn", "CartPole-v1", max_steps=8 * 32, **DQN)
    scripted(trainer, [1.0] * 8)  # no improvement after the first: a plateau at every later evaluation
    rates = [r.losses.get("learning_rate") for r in trainer()]
    trainer.close()
    plateau = next(cb for cb in trainer.hooks.callbacks if type(cb).__name__ == "PlateauLR")
    # 1e-3 -> 1e-4 -> 1e-5 (1e-3 x 0.01 is a hair above 1e-5 in floats: one more reduction takes it to min_lr exactly)
    assert plateau.reductions == [64, 96, 128]
    assert trainer.lr.scale == pytest.approx(1e-3)
    assert rates[4:] == [1e-5] * 4


def test_a_rate_above_min_lr_is_still_reduced():
    """Only every rate at min_lr stops the reductions: with min_lr 0 they go on."""
    trainer = canter.make_trainer("dqn", "CartPole-v1", max_steps=6 * 32, **{**DQN, "min_lr": 0.0})
    scripted(trainer, [1.0] * 6)
    list(trainer())
    trainer.close()
    assert trainer.lr.scale == pytest.approx(1e-5)  # at evaluations 2 to 6


def _stop_at_128(trainer, losses) -> None:
    if trainer.step >= 128:
        trainer.stop_requested = "interrupted"


def test_resumed_past_the_floor_it_continues_exactly(tmp_path):
    """Real evaluations: a run stopped at step 128 (before its rates reach min_lr) and resumed has the uninterrupted run's rates, scale and
    plateau state."""
    steps = dict(max_steps=8 * 32, seed=3)
    whole, part = tmp_path / "whole", tmp_path / "part"
    canter.train("dqn", "CartPole-v1", run_dir=whole, **steps, **DQN)
    canter.train("dqn", "CartPole-v1", run_dir=part, hooks={"after_update": _stop_at_128}, **steps, **DQN)
    assert json.loads((part / "checkpoints" / "last.json").read_text())["step"] == 128
    canter.resume(part)
    metas = [json.loads((d / "checkpoints" / "last.json").read_text()) for d in (whole, part)]
    assert metas[0]["trainer"]["lr_scale"] == metas[1]["trainer"]["lr_scale"] >= 1e-3 * (1 - 1e-9)
    rates = [pq.read_table(d / "updates.parquet").column("learning_rate").to_pylist() for d in (whole, part)]
    assert rates[0] == rates[1] and rates[0][-1] == 1e-5
