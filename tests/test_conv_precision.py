"""The run option ``conv_precision``: convolutional encoders under bfloat16 autocast."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import torch

import canter
from canter.models.cnn import NatureCNN, set_conv_precision

IMAGES = gym.spaces.Box(0, 255, (4, 84, 84), np.uint8)


def test_bfloat16_encoders_give_float32_features_close_to_float32():
    torch.manual_seed(0)
    enc = NatureCNN(IMAGES)
    obs = torch.randint(0, 256, (16, 4, 84, 84), dtype=torch.uint8)
    ref = enc(obs)
    ref_grad = torch.autograd.grad(ref.sum(), enc.net[0].weight)[0]
    assert set_conv_precision([enc], "bfloat16") == 1 and enc.compute_dtype is torch.bfloat16
    out = enc(obs)
    grad = torch.autograd.grad(out.sum(), enc.net[0].weight)[0]
    assert out.dtype == torch.float32 and grad.dtype == torch.float32
    out, ref = out.detach(), ref.detach()
    assert not torch.equal(out, ref)  # computed in bfloat16 (8 mantissa bits)...
    assert float((out - ref).abs().max() / ref.abs().max()) < 0.02  # ...close to float32
    assert float((grad - ref_grad).abs().max() / ref_grad.abs().max()) < 0.05
    set_conv_precision([enc], "float32")
    torch.testing.assert_close(enc(obs).detach(), ref, rtol=0, atol=0)


def test_the_run_option_reaches_every_encoder_including_targets():
    trainer = canter.make_trainer("dqn", "image_dict_env:DictImageCue-v0", seed=0, max_steps=64, quiet=True,
                                  learning_starts=32, conv_precision="bfloat16", eval_every=0, eval_episodes=1)
    algo = trainer.agent.algorithm
    encoders = [m for mod in algo.modules().values() for m in mod.modules() if hasattr(m, "compute_dtype")]
    assert len(encoders) == 2 and all(e.compute_dtype is torch.bfloat16 for e in encoders)  # online and target
    default = canter.make_trainer("dqn", "image_dict_env:DictImageCue-v0", seed=0, max_steps=64, quiet=True,
                                  learning_starts=32, eval_every=0, eval_episodes=1)
    assert all(m.compute_dtype is None for mod in default.agent.algorithm.modules().values()
               for m in mod.modules() if hasattr(m, "compute_dtype"))


def _float32_input_under_autocast(enc, obs: torch.Tensor) -> torch.Tensor:
    """The encoder's features as they were computed before bfloat16 input: a float32 input, cast
    by autocast at the first convolution."""
    dtype, enc.compute_dtype = enc.compute_dtype, None
    x = enc.to_input(obs)
    enc.compute_dtype = dtype
    with torch.autocast("cpu", dtype=torch.bfloat16):
        return enc.features(x).float()


def test_bfloat16_input_is_made_directly_with_the_values_autocast_gave():
    from canter.models.cnn import ImpalaResNet

    torch.manual_seed(1)
    for enc in (NatureCNN(IMAGES), ImpalaResNet(gym.spaces.Box(0, 255, (4, 40, 40), np.uint8))):
        set_conv_precision([enc], "bfloat16")
        for batch in (1, 8, 32, 96):
            obs = torch.randint(0, 256, (batch,) + tuple(enc.in_shape), dtype=torch.uint8)
            for layout in (obs, enc.training_layout(obs)):  # NCHW, and the channels-last training batches
                for grad in (False, True):
                    with torch.set_grad_enabled(grad):
                        assert enc.to_input(layout).dtype == torch.bfloat16
                        assert torch.equal(enc(layout), _float32_input_under_autocast(enc, layout))


def test_bfloat16_without_a_convolutional_encoder_is_refused(capsys, tmp_path):
    from support import assert_train_refused

    assert_train_refused(capsys, tmp_path, ["train", "ppo", "--env", "CartPole-v1", "--set", "conv_precision=bfloat16"],
                         "conv_precision=bfloat16 applies to convolutional encoders")


def test_a_loaded_run_keeps_its_conv_precision(tmp_path):
    canter.train("dqn", env="image_dict_env:DictImageCue-v0", seed=0, max_steps=64, learning_starts=32,
                 conv_precision="bfloat16", run_dir=tmp_path / "run", quiet=True, eval_every=0, eval_episodes=1)
    loaded = canter.load(tmp_path / "run")
    encoders = [m for mod in loaded.algorithm.modules().values() for m in mod.modules() if hasattr(m, "compute_dtype")]
    assert encoders and all(e.compute_dtype is torch.bfloat16 for e in encoders)
