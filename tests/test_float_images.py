"""Float image observations (a float32 Box of an image's shape, values in [0, 1]) through a named
convolutional encoder: taken as they are (never divided by 255 again); ``auto`` keeps the flat encoder."""
from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest
import torch

import canter
import image_envs  # noqa: F401 (registers ImageSide-v0)
from canter.errors import CanterError
from canter.models.cnn import FlatEncoder, ImpalaResNet, NatureCNN, make_encoder

ENV = "image_envs:ImageSide-v0"


@pytest.mark.parametrize("shape,in_shape", [((3, 36, 36), (3, 36, 36)), ((36, 36, 3), (3, 36, 36)),
                                            ((40, 40), (1, 40, 40))], ids=["chw", "hwc", "hw"])
@pytest.mark.parametrize("encoder", ["nature", "impala"])
def test_a_named_cnn_takes_float_images_as_they_are(shape, in_shape, encoder):
    """``encoder=nature`` on a float image was refused ('needs uint8 image observations', naming no way on):
    no built-in CNN could read float images at all."""
    space = gym.spaces.Box(0.0, 1.0, shape, np.float32)
    assert isinstance(make_encoder(space), FlatEncoder)  # auto: a vector, as Stable-Baselines3 reads it
    net = make_encoder(space, encoder)
    assert type(net) is {"nature": NatureCNN, "impala": ImpalaResNet}[encoder] and net.in_shape == in_shape
    obs = torch.rand((3,) + shape)
    x = obs.unsqueeze(1) if len(shape) == 2 else (obs.permute(0, 3, 1, 2) if shape[-1] == 3 else obs)
    with torch.no_grad():
        torch.testing.assert_close(net(obs), net.features(x.contiguous()), rtol=1e-4, atol=1e-5)  # not / 255


def test_a_named_cnn_on_observations_that_are_no_image_names_the_flat_encoder():
    with pytest.raises(CanterError, match=r"NatureCNN needs image observations .*; use encoder=flat"):
        make_encoder(gym.spaces.Box(-1.0, 1.0, (4,), np.float32), "nature")
    with pytest.raises(CanterError, match=r"ImpalaResNet needs image observations"):
        make_encoder(gym.spaces.Box(0, 10, (36, 36, 3), np.int64), "impala")


def test_ppo_trains_a_cnn_on_float_images_and_loads_it(tmp_path):
    run = tmp_path / "ppo"
    kwargs = {"shape": [36, 36, 3], "dtype": "float32"}
    canter.train("ppo", ENV, env_kwargs=kwargs, encoder="nature", seed=0, max_steps=64, n_envs=2, n_steps=32,
                 run_dir=run, quiet=True, eval_every=0, eval_episodes=1)
    agent = canter.load(run)
    assert isinstance(agent.algorithm.model.encoder, NatureCNN)
    assert json.loads((run / "checkpoints" / "last.json").read_text())["config"]["hparams"]["encoder"] == "nature"
    obs, _ = image_envs.ImageSideEnv(shape=(36, 36, 3), dtype="float32").reset(seed=0)
    assert agent.predict(obs) in (0, 1)
