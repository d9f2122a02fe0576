"""Turn-based games that report the mover's action mask in ``info`` (PettingZoo's AEC API allows it):
the learner acts and learns under it (``tests/info_mask_game.py`` raises on a masked move)."""
from __future__ import annotations

import numpy as np
import pytest

import canter
from canter.envs import make_vec_env
from canter.envs.turns import TurnBasedEnv

pytest.importorskip("pettingzoo")
GAME = "pettingzoo:tests.info_mask_game"


def test_the_info_mask_is_packed_with_the_learners_observation():
    env = TurnBasedEnv(GAME, {"seat": "player_1"}, training=True)
    obs, info = env.reset(seed=0)
    assert set(obs) == {"observation", "action_mask"}
    assert obs["action_mask"].tolist() == np.asarray(info["action_mask"]).tolist()
    venv = make_vec_env(GAME, 2, training=True)
    assert venv.single_observation_space.mask_width == 3  # before: a Box(2,) without the mask
    first = venv.reset(seed=0)
    assert first.shape == (2, 5) and (first[:, -3:].sum(1) >= 1).all()
    venv.close()


@pytest.mark.parametrize("algo, hparams", [
    ("ppo", {"n_steps": 64, "batch_size": 64, "n_epochs": 2}),
    ("dqn", {"learning_starts": 50, "train_freq": 1, "exploration_fraction": 0.5}),
])
def test_the_learner_keeps_to_an_info_mask(algo, hparams, tmp_path):
    """Before the fix the learner ignored the mask (only the random opponent read it): the game raised."""
    canter.train(algo, env=GAME, seed=0, n_envs=2, max_steps=256, hparams=hparams, run_dir=tmp_path / algo,
                 quiet=True)
