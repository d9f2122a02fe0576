"""agent.predict on raw Dict observations checks the pixels of their image entries as it checks a plain image
observation's (canter.models.image_layout.image_pixels): an image entry already divided by 255, or with values
outside 0..255, is a one-line error naming the entry, where it was packed as it came and the agent acted on
images it never saw (a float32 packed space), or on pixels truncated or wrapped to bytes (a uint8 one)."""
from __future__ import annotations

import importlib

import gymnasium as gym
import numpy as np
import pytest

from canter.errors import CanterError
from support import untrained_agent

importlib.import_module("image_dict_env")  # registers DictImageCue-v0


@pytest.fixture(scope="module", params=[{}, {"float_flip": True}], ids=["uint8-packed", "float32-packed"])
def agent_and_obs(request):
    agent = untrained_agent("dqn", "image_dict_env:DictImageCue-v0", env_kwargs=request.param, learning_starts=32)
    obs, _ = gym.make("DictImageCue-v0", **request.param).reset(seed=0)
    return agent, obs


def test_pixel_values_of_another_dtype_act_as_the_uint8_ones(agent_and_obs):
    agent, obs = agent_and_obs
    as_float = dict(obs, image=obs["image"].astype(np.float64))
    assert np.array_equal(agent.predict(as_float, deterministic=True), agent.predict(obs, deterministic=True))
    batch = {key: np.stack([np.asarray(value)] * 2) for key, value in as_float.items()}
    assert agent.predict(batch, deterministic=True).shape == (2,)


@pytest.mark.parametrize("change", ["scaled", "too_bright", "negative"])
def test_image_entries_that_are_not_pixels_are_refused(agent_and_obs, change):
    agent, obs = agent_and_obs
    image = obs["image"].astype(np.float64)
    image[0, 0] = 128  # a grey pixel (the env's are 0 or 255, which divided by 255 are still whole numbers)
    image = {"scaled": image / 255.0, "too_bright": image + 300.0, "negative": image - 1.0}[change]
    with pytest.raises(CanterError, match=r"'image'.*uint8 pixel values 0\.\.255"):
        agent.predict(dict(obs, image=image), deterministic=True)
    with pytest.raises(CanterError, match=r"'image'"):  # a batch too
        agent.predict({key: np.stack([np.asarray(value)] * 2) for key, value in dict(obs, image=image).items()})
