"""A QMIX model of the user's own (``model: module:Class``) must apply action masks: the joint observation always
carries one, the env's or the alive mask canter adds where the env has none (2026-11-28)."""
from __future__ import annotations

import pytest
import torch

import canter
from canter.errors import CanterError
from canter.models.mixing import QMixModel
from support import assert_one_line_error, run_cli

ENV = "pettingzoo:tests.match_agents"


class NoMaskModel(QMixModel):
    """A model written for an env without action masks, as one could before the alive mask: no ``action_masks``."""

    action_masks = False


def test_a_model_without_masks_on_an_env_without_masks_is_told_of_the_alive_mask(tmp_path, capsys):
    """It was refused saying 'the env's observations carry one': the env has none, the mask is canter's."""
    with pytest.raises(CanterError) as info:
        canter.make_trainer("qmix", ENV, model=f"{__name__}:NoMaskModel", max_steps=64, run_dir=None)
    message = str(info.value)
    assert "the alive mask canter adds" in message and "the env's observations carry one" not in message, message
    code, _, err = run_cli(capsys, "train", "qmix", "--env", ENV, "--set", f"model={__name__}:NoMaskModel",
                           "--max-steps", "64", "--run-dir", str(tmp_path / "run"), "--quiet")
    assert_one_line_error(code, err, "model NoMaskModel does not apply action masks, and QMIX's joint observation "
                                     "always carries one")


def test_a_model_without_masks_still_loads_a_run_saved_before_the_alive_mask():
    """A QMIX run saved before 2026-11-28 on an env without masks has joint observations without mask columns, and
    one with such a model of the user's own loaded with ``canter.load`` (as the docs say such runs still do); the
    refusal above, made whatever the observation space, refused it too. Only a masked observation needs the mask."""
    import gymnasium as gym
    import numpy as np

    from canter.algorithms.qmix import QMIX, QMIXConfig

    obs, actions = gym.spaces.Box(-1.0, 1.0, (3, 4), np.float32), gym.spaces.MultiDiscrete([2, 2])
    agent = QMIX(obs, actions, QMIXConfig(net_arch=[8]), model=f"{__name__}:NoMaskModel")
    assert agent.act(torch.zeros(1, 3, 4)).actions.shape == (1, 2)
