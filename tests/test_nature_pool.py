"""``encoder=nature_pool``: the Nature CNN with an adaptive average pool, so that large frames do not
blow up the layer after it (the Nature CNN's features grow with the image: 73,984 at 300 x 300)."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import torch

import canter
import image_envs  # noqa: F401 (registers ImageSide-v0 and DictImageSide-v0)
from canter.models.cnn import MultiInputEncoder, NatureCNN, NaturePooledCNN, make_encoder


def _params(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def test_pooled_features_stay_3136_on_large_frames_and_match_nature_at_84():
    big = gym.spaces.Box(0, 255, (300, 300, 3), np.uint8)
    nature, pooled = make_encoder(big, "nature"), make_encoder(big, "nature_pool")
    assert isinstance(pooled, NaturePooledCNN) and (nature.out_dim, pooled.out_dim) == (73_984, 3136)
    assert _params(pooled) == _params(nature)  # the same convolutions; the pool has no weights
    assert make_encoder(gym.spaces.Box(0, 255, (210, 160, 3), np.uint8), "nature_pool").out_dim == 3136
    assert make_encoder(gym.spaces.Box(0, 255, (36, 36), np.uint8), "nature_pool").out_dim == 64  # not upsampled
    frames = gym.spaces.Box(0, 255, (4, 84, 84), np.uint8)
    a, b = make_encoder(frames, "nature"), make_encoder(frames, "nature_pool")
    b.load_state_dict(a.state_dict())  # the same parameter names
    obs = torch.randint(0, 256, (3, 4, 84, 84), dtype=torch.uint8)
    with torch.no_grad():
        torch.testing.assert_close(a(obs), b(obs))
    torch.testing.assert_close(a(obs).detach(), b(obs).detach())  # the channels-last training pass too


def test_ppo_trains_and_loads_a_pooled_encoder_and_multi_takes_it(tmp_path):
    run = tmp_path / "ppo"
    canter.train("ppo", "image_envs:ImageSide-v0", env_kwargs={"shape": [100, 100]}, encoder="nature_pool", seed=0,
                 max_steps=32, n_envs=2, n_steps=16, run_dir=run, quiet=True, eval_every=0, eval_episodes=1)
    encoder = canter.load(run).algorithm.model.encoder
    assert isinstance(encoder, NaturePooledCNN) and encoder.out_dim == 3136
    agent = canter.make_trainer("ppo", "image_envs:DictImageSide-v0", env_kwargs={"shape": [84, 84, 1]},
                                encoder="nature_pool", max_steps=64, n_envs=2, eval_every=0).agent
    multi = agent.algorithm.model.encoder
    assert isinstance(multi, MultiInputEncoder) and [type(c) for c in multi.convs] == [NaturePooledCNN]
    assert not isinstance(make_encoder(gym.spaces.Box(0, 255, (84, 84), np.uint8)), NaturePooledCNN)  # auto: nature
    assert type(make_encoder(gym.spaces.Box(0, 255, (84, 84), np.uint8))) is NatureCNN
