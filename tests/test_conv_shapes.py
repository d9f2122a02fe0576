"""The convolutional encoders' out_dim is worked out from their layers' sizes: sizing an image model on the meta
device (canter.model_size) ran a forward pass there, which imported sympy (1.6-3.4 s of every image run's start)."""
from __future__ import annotations

import os
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

from canter.models.cnn import ImpalaResNet, NatureCNN, NaturePooledCNN
from canter.models.conv_shapes import output_shape

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}


def _modules_after(code: str) -> set[str]:
    """The top-level modules that a fresh interpreter has imported after running ``code``."""
    out = subprocess.run([sys.executable, "-c", f"{code}\nimport sys\nprint(' '.join(sys.modules))"],
                         env=ENV, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return {m.split(".")[0] for m in out.stdout.split()}


def _image_models():
    from canter.envs.packing import ObservationPacker
    from canter.models.mlp import ActorCritic
    from canter.models.q_network import QNetwork

    image, six = gym.spaces.Box(0, 255, (4, 84, 84), np.uint8), gym.spaces.Discrete(6)
    small = gym.spaces.Box(0, 255, (16, 16, 3), np.uint8)
    packed = ObservationPacker(gym.spaces.Dict({"img": image, "v": gym.spaces.Box(-1, 1, (3,))}), six).space
    for space, kind in [(image, "nature"), (image, "nature_pool"), (image, "impala"), (small, "auto"), (packed, "auto")]:
        for cls in (ActorCritic, QNetwork):
            yield f"{cls.__name__} {kind} {space.shape}", lambda cls=cls, space=space, kind=kind: cls(space, six,
                                                                                                      encoder=kind)


def test_sizing_image_models_on_meta_runs_none_of_their_layers():
    """Counting a model's bytes on the meta device ran its convolutions there (to size the layer after them):
    the first operator on meta tensors imports sympy, seconds of every image run's start."""
    from canter.model_size import model_bytes_on_meta

    ran = []
    handle = nn.modules.module.register_module_forward_pre_hook(lambda module, args: ran.append(type(module).__name__))
    try:
        for name, build in _image_models():
            assert model_bytes_on_meta(build), name
            assert not ran, f"{name}: ran {ran}"
    finally:
        handle.remove()


@pytest.mark.slow
def test_sizing_image_models_on_meta_does_not_import_sympy():
    """Every built-in convolutional encoder (and the multi-input one around them), counted on the meta device as
    every run's model is: the first operator run on meta tensors imported sympy."""
    code = ("import gymnasium as gym, numpy as np, sys\n"
            "from canter.model_size import model_bytes_on_meta\n"
            "from canter.models.mlp import ActorCritic\nfrom canter.models.q_network import QNetwork\n"
            "from canter.envs.packing import ObservationPacker\n"
            "image, six = gym.spaces.Box(0, 255, (4, 84, 84), np.uint8), gym.spaces.Discrete(6)\n"
            "small = gym.spaces.Box(0, 255, (16, 16, 3), np.uint8)\n"
            "packed = ObservationPacker(gym.spaces.Dict({'img': image, 'v': gym.spaces.Box(-1, 1, (3,))}), six).space\n"
            "for space, kind in [(image, 'nature'), (image, 'nature_pool'), (image, 'impala'), (small, 'auto'),\n"
            "                    (packed, 'auto')]:\n"
            "    for cls in (ActorCritic, QNetwork):\n"
            "        assert model_bytes_on_meta(lambda: cls(space, six, encoder=kind)), (cls, kind)\n")
    assert "sympy" not in _modules_after(code)


@pytest.mark.slow
def test_building_a_pong_ppo_trainer_does_not_import_sympy():
    """The case it was found in: make_trainer for PPO on Pong spent 1.6 s importing sympy."""
    code = ("import warnings\nwarnings.simplefilter('ignore')\nimport canter\n"
            "canter.make_trainer('ppo', 'PongNoFrameskip-v4', max_steps=64, n_envs=1, n_steps=128, batch_size=64,\n"
            "                    eval_episodes=0).close()")
    assert "sympy" not in _modules_after(code)


SPACES = [gym.spaces.Box(0, 255, shape, np.uint8) for shape in
          [(4, 84, 84), (84, 84, 3), (1, 36, 36), (3, 210, 160), (2, 37, 101), (100, 100), (4, 64, 64, 3)]]
SMALL = [gym.spaces.Box(0, 255, shape, np.uint8) for shape in [(8, 8, 3), (3, 9, 13), (12, 10, 10)]]


def _forward_dim(encoder: nn.Module) -> int:
    with torch.no_grad():
        return int(encoder.features(torch.zeros((1,) + tuple(encoder.in_shape))).shape[1])


@pytest.mark.parametrize("cls", [NatureCNN, NaturePooledCNN, ImpalaResNet])
def test_out_dim_is_what_a_forward_pass_gives(cls):
    spaces = SPACES + (SMALL if cls is ImpalaResNet else [])
    for space in spaces:
        encoder = cls(space)
        assert encoder.out_dim == _forward_dim(encoder), (cls.__name__, space.shape)
    assert NatureCNN(SPACES[0]).out_dim == 3136 and ImpalaResNet(SPACES[0]).out_dim == 3872
    assert NaturePooledCNN(SPACES[3]).out_dim == 3136 and NatureCNN(SPACES[3]).out_dim == 22528


def test_a_layer_it_does_not_know_or_an_empty_output_is_left_to_a_forward_pass():
    conv = nn.Conv2d(3, 8, 3)
    assert output_shape(nn.Sequential(conv, nn.ReLU(), nn.Flatten()), (3, 10, 12)) == (8 * 8 * 10,)
    assert output_shape(nn.Sequential(conv, nn.Tanh()), (3, 10, 12)) is None
    assert output_shape(conv, (4, 10, 12)) is None  # the wrong number of channels: the forward pass says so
    assert output_shape(nn.Sequential(nn.Conv2d(3, 8, 5), nn.Conv2d(8, 8, 5)), (3, 6, 6)) is None
    assert output_shape(nn.Conv2d(3, 8, 3, padding="same"), (3, 10, 12)) is None
    assert output_shape(nn.MaxPool2d(3, 2, ceil_mode=True), (3, 10, 12)) is None
    assert output_shape(nn.Sequential(nn.MaxPool2d(3, 2, 1), nn.AdaptiveAvgPool2d((None, 2))), (3, 9, 12)) == (3, 5, 2)


def test_a_subclass_with_features_of_its_own_is_sized_by_running_them():
    class Halved(NatureCNN):
        def features(self, x):
            return self.net(x)[:, ::2]

    assert Halved(SPACES[0]).out_dim == 3136 // 2



class _PoolingConv(nn.Conv2d):
    """A convolution whose own forward() also halves the image."""

    def forward(self, x):
        return nn.functional.max_pool2d(super().forward(x), 2)


class _GrowingBlock(nn.Module):
    """Says preserves_shape through a base class, but its own forward() doubles the channels."""

    preserves_shape = True

    def forward(self, x):
        return x


class _Doubling(_GrowingBlock):
    def forward(self, x):
        return torch.cat([x, x], dim=1)


def test_a_known_layer_with_a_forward_of_its_own_is_left_to_a_forward_pass():
    """A subclass of Conv2d (or of a block that preserves its shape) whose own forward() changes the shape was sized
    as its base class: the encoder's out_dim was wrong, and the layer after it failed on the first batch."""
    assert output_shape(_PoolingConv(3, 8, 3), (3, 10, 12)) is None
    assert output_shape(nn.Sequential(nn.Conv2d(3, 8, 3), _Doubling()), (3, 10, 12)) is None
    assert output_shape(nn.Sequential(nn.Conv2d(3, 8, 3), _GrowingBlock()), (3, 10, 12)) == (8, 8, 10)

    class Pooled(NatureCNN):
        def __init__(self, space):
            super().__init__(space)
            self.net[0] = _PoolingConv(self.in_shape[0], 32, 8, stride=4)
            self._set_out_dim()

    encoder = Pooled(SPACES[0])
    assert encoder.out_dim == _forward_dim(encoder) == 256


def test_a_max_pool_padded_past_half_its_kernel_is_left_to_the_forward_pass_that_refuses_it():
    """torch builds MaxPool2d(2, padding=2) but refuses to run it (pad at most half the kernel); the arithmetic
    gave it a shape, so an encoder made of it was sized without the error."""
    pools = (nn.MaxPool2d(2, padding=2), nn.MaxPool2d(3, padding=2, dilation=2), nn.MaxPool2d((2, 4), padding=(2, 1)))
    for pool in pools:
        with pytest.raises(RuntimeError, match="pad should"):
            pool(torch.zeros(1, 3, 9, 12))
        assert output_shape(pool, (3, 9, 12)) is None, pool
    fine = nn.MaxPool2d((2, 4), padding=(1, 2))  # exactly half: torch runs it
    assert output_shape(fine, (3, 9, 12)) == tuple(fine(torch.zeros(1, 3, 9, 12)).shape[1:])
