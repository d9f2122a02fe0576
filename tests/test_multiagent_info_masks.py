"""PettingZoo parallel envs that report each agent's action mask in ``infos[agent]["action_mask"]``
(``tests/match_agents.py`` with ``info_mask=True``, which raises on a masked action): the masks are moved into
the agents' observations, so every policy mode acts and learns under them."""
from __future__ import annotations

import numpy as np
import pytest

import canter
from canter.envs import make_vec_env
from canter.envs.masks import MaskedBox

pytest.importorskip("pettingzoo")
ENV = "pettingzoo:tests.match_agents"
KWARGS = {"n_agents": 2, "masked": True, "info_mask": True}


@pytest.mark.parametrize("policies", ["shared", "agent", "joint"])
def test_info_masks_are_packed_with_each_agents_observation(policies):
    env = make_vec_env(ENV, 2, env_kwargs=KWARGS, policies=policies)
    space = env.single_observation_space
    spaces = list(space.spaces.values()) if policies == "agent" else [space]
    assert all(isinstance(s, MaskedBox) and s.mask_width == 3 for s in spaces)  # before: Box(3,), no mask
    obs = env.reset(seed=0)
    if policies == "shared":
        inner = env.env.envs
        for c in range(2):
            for i, name in enumerate(inner[c].possible_agents):
                np.testing.assert_array_equal(obs[2 * c + i, :3], np.eye(3)[inner[c].targets[name]])
                np.testing.assert_array_equal(obs[2 * c + i, -3:], inner[c].masks[name])
    env.close()


@pytest.mark.parametrize("algo, hparams", [
    ("ppo", {"n_steps": 32, "batch_size": 64, "n_epochs": 1}),
    ("dqn", {"learning_starts": 32, "train_freq": 1}),
])
def test_agents_keep_to_masks_in_infos(algo, hparams, tmp_path):
    """Before, only the observations were read: the agents drew masked actions and the env raised."""
    canter.train(algo, env=ENV, env_kwargs=KWARGS, seed=0, n_envs=2, max_steps=256, hparams=hparams,
                 run_dir=tmp_path / algo, eval_episodes=2)
