"""Observation encoders: convolutional stacks for images, and the flat encoder for everything else.

An encoder turns raw observation tensors into flat float features of size ``out_dim``; the
models (``ActorCritic``, ``QNetwork``, ``QuantileQNetwork``) put their fully connected layers
(``net_arch``) on top. Image observations (``uint8`` ``[C, H, W]``, ``[H, W]`` or ``[H, W, C]``,
channels-last where the last axis has 1, 3 or 4 values or fewer than the first; ``[S, ...]`` stacks of
such frames) stay ``uint8`` through buffers and batches; the encoder casts them to
float and divides by 255 as its first step. ``nature`` or ``impala`` named for a float Box of an image's shape
(pixels in [0, 1], which ``auto`` gives the flat encoder) takes its values as they are.

- ``nature``: the convolutional part of the Nature DQN network (Mnih et al. 2015): 32 8x8/4,
  64 4x4/2, 64 3x3/1, ReLU, flattened (3136 features at 84x84). With ``net_arch: [512]`` the
  model is exactly that paper's network (and Stable-Baselines3's ``NatureCNN`` + heads).
- ``nature_pool``: ``nature`` with an adaptive average pool to at most 7x7 after its last ReLU:
  3136 features at any image size from 84x84, where ``nature``'s grow with it (73,984 at 300x300).
- ``impala``: the IMPALA ResNet encoder (Espeholt et al. 2018): three sections of 16, 32, 32
  channels, each a 3x3 conv, a 3x3/2 max-pool and two residual blocks, then ReLU and flatten
  (3872 features at 84x84); the paper adds a 256-unit layer (``net_arch: [256]``).
- ``flat``: :class:`~canter.models.mlp.ObsEncoder` (one-hot Discrete, flatten Box).
- ``multi``: for ``Dict`` / ``Tuple`` observations with image entries (a
  :class:`~canter.envs.packing.PackedBox`): each image through its own convolutional network and a
  256-unit ReLU layer, concatenated with the other entries' values (Stable-Baselines3's
  ``CombinedExtractor``). ``nature`` or ``impala`` on such observations names the image network;
  ``auto`` uses ``nature`` for images of at least 36 pixels a side (its smallest input) and
  ``impala`` for smaller ones.
- ``split``: for a centralised critic (``mappo``): observations ``[2, w]``, the actor's input then
  the critic's, become one input per network of an actor-critic model.

``auto`` picks ``nature`` for image spaces (``impala`` for images below 36 pixels a side, which
``nature``'s convolutions cannot take), ``multi`` for structured ones with images and ``flat``
otherwise. Encoders are registered
(kind ``encoder``), so ``encoder: mypkg.nets:MyEncoder`` works like a model name.
"""
from __future__ import annotations

import math
from collections.abc import Iterable

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from canter.errors import CanterError
from canter.models.conv_shapes import output_shape
from canter.models.image_layout import (  # noqa: F401 (re-exported: canter.models.cnn names them)
    GIVEN_LAYOUT, conv_input_layout, former_image_layout, image_layout, image_pixels, is_image_space,
    mark_image_layout, shape_image_layout)
from canter.models.mlp import ObsEncoder, obs_dim
from canter.registry import lookup, register


#: the smallest image side the ``nature`` encoder takes (its convolutions leave nothing of a smaller one)
NATURE_MIN_SIDE = 36


def auto_image_encoder(space: gym.Space) -> str:
    """The image encoder ``auto`` picks for the uint8 image ``space``: ``nature`` for images of at least
    :data:`NATURE_MIN_SIDE` pixels a side, ``impala`` (which takes any size) for smaller ones."""
    return "nature" if min(ImageEncoder(space).in_shape[1:]) >= NATURE_MIN_SIDE else "impala"


class ImageEncoder(nn.Module):
    """Base of the convolutional encoders: layout handling, uint8 -> [0, 1] float (float images are taken as
    they are), ``out_dim``."""

    #: channels-last input also for forward passes without gradients (acting, target values)
    channels_last_inference = True
    #: run the convolutions under ``torch.autocast`` with this dtype (None: float32); the features
    #: come out as float32 either way (:func:`set_conv_precision`)
    compute_dtype: torch.dtype | None = None

    def __init__(self, space: gym.Space) -> None:
        super().__init__()
        layout = conv_input_layout(space)
        if layout is None:
            raise CanterError(f"{type(self).__name__} needs image observations (a uint8 or float Box of shape [C, H, W], "
                              f"[H, W] or [H, W, C], at least 8 pixels a side), got {space}; use encoder=flat")
        self.layout = layout
        shape, stack = tuple(space.shape), 1
        if layout.startswith("s"):  # a stack of frames: their channels one after the other, frame by frame
            stack, shape = shape[0], shape[1:]
        if layout.endswith("hw") and len(shape) == 2:
            shape = (1,) + shape
        elif layout.endswith("hwc"):
            shape = (shape[2], shape[0], shape[1])
        self.in_shape = (stack * shape[0],) + shape[1:]
        self.out_dim = 0

    def to_input(self, obs: torch.Tensor) -> torch.Tensor:
        """``[B, C, H, W]`` floats in [0, 1] from raw observations."""
        if self.layout == "hw":
            obs = obs.unsqueeze(1)
        elif self.layout == "hwc":
            obs = obs.permute(0, 3, 1, 2)
        elif self.layout == "shwc":
            obs = obs.permute(0, 1, 4, 2, 3).reshape((obs.shape[0],) + tuple(self.in_shape))
        elif self.layout.startswith("s"):
            obs = obs.reshape((obs.shape[0],) + tuple(self.in_shape))
        # channels-last (NHWC) batches: oneDNN's CPU convolutions ran faster on them here (Nature CNN
        # forward + backward, 2 threads: batch 32 9.6 -> 6.0 ms, batch 256 74 -> 44 ms); a single
        # observation is a little faster as it is (0.18 vs 0.25 ms), and so is the Nature CNN's
        # forward pass without gradients (see ``channels_last_inference``)
        cl = obs.shape[0] > 1 and (self.channels_last_inference or torch.is_grad_enabled())
        scale = 1.0 / 255.0 if obs.dtype == torch.uint8 else None
        # under conv_precision=bfloat16 the input is made in bfloat16 at once: the scaling computes in
        # float32 and rounds once, so the values are those autocast's cast of the float32 input gave,
        # with half the memory traffic (Zen 4, 2 threads, conversion + first convolution: batch 32
        # 3.0 -> 0.9 ms, batch 256 7.2 -> 5.4 ms)
        dtype = self.compute_dtype or torch.float32
        if cl and obs.shape[0] <= 64 and not obs.is_contiguous(memory_format=torch.channels_last):
            # small batches: convert in the stored layout, then permute the floats (the same values;
            # 2 threads, batch 32: 0.64 -> 0.40 ms; from batch ~256 the single converting copy is
            # as fast or faster). A channels-last input (see training_layout) takes the copy below,
            # which is then a plain conversion (batch 256: ~1 ms instead of 3-6).
            x = obs.to(dtype, copy=True)
            return (x if scale is None else x.mul_(scale)).contiguous(memory_format=torch.channels_last)
        layout = torch.channels_last if cl else torch.contiguous_format
        x = obs.to(dtype, memory_format=layout, copy=True)
        return x if scale is None else x.mul_(scale)

    def training_layout(self, obs: torch.Tensor) -> torch.Tensor:
        """Raw ``[B, C, H, W]`` observations as a channels-last copy (same shape and values; other
        layouts and single observations are returned as they are).

        Training passes run channels-last, and converting a channels-last uint8 batch to float is a
        plain copy where an NCHW one needs a transposing copy (batch 256: ~1 ms against 3-6 ms). For
        a batch that is read several times (PPO's epochs of minibatches) one uint8 permute of the
        whole rollout replaces a float permute per minibatch; indexing rows keeps the layout.
        """
        if self.layout != "chw" or obs.dim() != 4 or obs.shape[0] < 2:
            return obs
        return obs.contiguous(memory_format=torch.channels_last)

    def _set_out_dim(self) -> None:
        if type(self).features in _NET_FEATURES:  # features are self.net's output: its shape by arithmetic
            self.out_dim = int(self._shape_after(self.net)[0])
            return
        with torch.no_grad():
            self.out_dim = int(self.features(torch.zeros((1,) + tuple(self.in_shape))).shape[1])

    def _shape_after(self, module: nn.Module) -> tuple[int, ...]:
        """The shape (no batch axis) ``module`` gives one input of ``in_shape``: from its layers' sizes
        (:func:`~canter.models.conv_shapes.output_shape`; a forward pass on the meta device, where models
        are sized first, imports sympy: seconds), else by a forward pass of zeros."""
        shape = output_shape(module, tuple(self.in_shape))
        if shape is None:
            with torch.no_grad():
                shape = tuple(module(torch.zeros((1,) + tuple(self.in_shape))).shape[1:])
        return shape

    def forward(self, obs: torch.Tensor) -> torch.Tensor:  # noqa: D102
        if self.compute_dtype is None:
            return self.features(self.to_input(obs))
        with torch.autocast(obs.device.type, dtype=self.compute_dtype):
            out = self.features(self.to_input(obs))
        return out.float()

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """Flat features from ``[B, C, H, W]`` float input."""
        raise NotImplementedError


def set_conv_precision(modules: Iterable[nn.Module], precision: str) -> int:
    """Run every convolutional encoder inside ``modules`` in ``precision`` (``float32`` or ``bfloat16``,
    the run option ``conv_precision``); returns how many encoders it set."""
    dtype = {"float32": None, "bfloat16": torch.bfloat16}.get(precision)
    if dtype is None and precision != "float32":
        raise CanterError(f"unknown conv_precision {precision!r}: float32 or bfloat16")
    encoders = _conv_encoders(modules)
    for encoder in encoders:
        encoder.compute_dtype = dtype
    return len(encoders)


def count_conv_encoders(modules: Iterable[nn.Module]) -> int:
    """How many convolutional encoders (:class:`ImageEncoder`) are inside ``modules``."""
    return len(_conv_encoders(modules))


def _conv_encoders(modules: Iterable[nn.Module]) -> list[ImageEncoder]:
    return [m for module in modules for m in module.modules() if isinstance(m, ImageEncoder)]


def _ortho(module: nn.Module, gain: float) -> None:
    for m in module.modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            nn.init.orthogonal_(m.weight, gain)
            nn.init.zeros_(m.bias)


@register("encoder", "nature")
class NatureCNN(ImageEncoder):
    """Nature DQN convolutions (32 8x8/4, 64 4x4/2, 64 3x3/1, ReLU), flattened."""

    #: without gradients, plain NCHW input was faster (2 threads, batch 8: 0.66 -> 0.61 ms, batch 32:
    #: 2.10 -> 1.74 ms; channels-last output also costs a copy to flatten). IMPALA's ResNet is the
    #: other way round (batch 8: 3.6 ms channels-last vs 11.7 ms)
    channels_last_inference = False

    def __init__(self, space: gym.Space, ortho_init: bool = False) -> None:
        super().__init__(space)
        if min(self.in_shape[1:]) < NATURE_MIN_SIDE:
            name = "nature_pool" if isinstance(self, NaturePooledCNN) else "nature"
            raise CanterError(f"the {name} encoder needs images of at least {NATURE_MIN_SIDE} pixels a side, got "
                              f"{tuple(space.shape)}; use encoder=impala (or auto, which picks it for small images)")
        c = self.in_shape[0]
        self.net = nn.Sequential(
            nn.Conv2d(c, 32, 8, stride=4), nn.ReLU(),
            nn.Conv2d(32, 64, 4, stride=2), nn.ReLU(),
            # the last ReLU after the flatten (the same values): the flatten copies channels-last
            # activations into a contiguous tensor, and relu's backward is ~2x slower on a channels-last
            # output with a contiguous gradient than on two contiguous tensors (batch 256: 1.4-1.9 vs 2.9-3.6 ms)
            nn.Conv2d(64, 64, 3, stride=1), nn.Flatten(), nn.ReLU(),
        )
        if ortho_init:
            _ortho(self.net, math.sqrt(2))
        self._set_out_dim()

    def features(self, x: torch.Tensor) -> torch.Tensor:  # noqa: D102
        return self.net(x)


@register("encoder", "nature_pool")
class NaturePooledCNN(NatureCNN):
    """The Nature convolutions and ReLU, then an adaptive average pool to at most 7 x 7 before the flatten:
    3136 features at any image size of 84 x 84 or more (the Nature CNN's own at 84 x 84, where the pool
    changes nothing; smaller images keep their smaller output).

    The Nature CNN's features grow with the image (22,528 at 210 x 160, 73,984 at 300 x 300), and the layer
    after it with them: a 512-unit layer on 300 x 300 frames holds 37.9M weights (1.7M here)."""

    def __init__(self, space: gym.Space, ortho_init: bool = False) -> None:
        super().__init__(space, ortho_init)
        layers = list(self.net)  # conv, relu, conv, relu, conv, flatten, relu
        h, w = self._shape_after(nn.Sequential(*layers[:5]))[1:]
        pool = nn.AdaptiveAvgPool2d((min(h, 7), min(w, 7)))
        self.net = nn.Sequential(*layers[:5], nn.ReLU(), pool, nn.Flatten())
        self._set_out_dim()


class _Residual(nn.Module):
    """``x + conv(relu(conv(relu(x))))`` with 3x3 convolutions."""

    #: the output has the input's shape (:func:`~canter.models.conv_shapes.output_shape`)
    preserves_shape = True

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv0 = nn.Conv2d(channels, channels, 3, padding=1)
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # noqa: D102
        return x + self.conv1(torch.relu(self.conv0(torch.relu(x))))


@register("encoder", "impala")
class ImpalaResNet(ImageEncoder):
    """IMPALA's ResNet: per section conv 3x3, max-pool 3x3/2, two residual blocks; then ReLU, flatten."""

    def __init__(self, space: gym.Space, ortho_init: bool = False, channels: tuple[int, ...] = (16, 32, 32)) -> None:
        super().__init__(space)
        layers: list[nn.Module] = []
        c = self.in_shape[0]
        for out in channels:
            layers += [nn.Conv2d(c, out, 3, padding=1), nn.MaxPool2d(3, stride=2, padding=1),
                       _Residual(out), _Residual(out)]
            c = out
        layers += [nn.Flatten(), nn.ReLU()]  # ReLU after the flatten: see NatureCNN
        self.net = nn.Sequential(*layers)
        if ortho_init:
            _ortho(self.net, math.sqrt(2))
        self._set_out_dim()

    def features(self, x: torch.Tensor) -> torch.Tensor:  # noqa: D102
        return self.net(x)


#: the ``features`` methods that return ``self.net``'s output (whose shape :func:`output_shape` can work out);
#: a subclass's own ``features`` is run to find its ``out_dim``
_NET_FEATURES = (NatureCNN.features, ImpalaResNet.features)


class FlatEncoder(ObsEncoder):
    """:class:`ObsEncoder` with ``out_dim`` (one-hot Discrete, flattened float Box)."""

    def __init__(self, space: gym.Space, ortho_init: bool = False) -> None:
        super().__init__(space)
        self.out_dim = obs_dim(space)


register("encoder", "flat")(FlatEncoder)


@register("encoder", "multi")
class MultiInputEncoder(nn.Module):
    """Structured observations with images (a :class:`~canter.envs.packing.PackedBox`): each image
    through a convolutional network (``image_encoder``: ``nature``, ``impala``, or ``auto`` by its
    size) and a ``image_features``-unit ReLU layer, then the other columns' values as floats."""

    #: the width each image's convolutional features are reduced to (SB3's CombinedExtractor: 256)
    image_features = 256

    def __init__(self, space: gym.Space, ortho_init: bool = False, image_encoder: str = "auto") -> None:
        super().__init__()
        from canter.envs.packing import PackedBox
        from canter.envs.spaces import packed_image_layouts
        from canter.models.linear import Linear

        if not isinstance(space, PackedBox):
            raise CanterError(f"encoder 'multi' needs Dict or Tuple observations with image entries, not {space}")
        self.images = [(cols.start, cols.stop, shape) for cols, shape in space.image_slices()]
        # each image as its env marked it, or as a checkpoint's reading keeps it (canter.envs.spaces)
        layouts = packed_image_layouts(space)
        self.vectors = [(c.start, c.stop) for c in space.vector_slices()]
        self.convs, self.heads = nn.ModuleList(), nn.ModuleList()
        for (_, _, shape), layout in zip(self.images, layouts):
            image = gym.spaces.Box(0, 255, shape, np.uint8)
            if layout != image_layout(image):
                image.saved_image_layout = layout or ""  # type: ignore[attr-defined]
            kind = auto_image_encoder(image) if image_encoder == "auto" else image_encoder
            conv = lookup("encoder", kind)(image, ortho_init=ortho_init)
            head = nn.Sequential(Linear(conv.out_dim, self.image_features), nn.ReLU())
            if ortho_init:
                _ortho(head, math.sqrt(2))
            self.convs.append(conv)
            self.heads.append(head)
        self.out_dim = self.image_features * len(self.images) + sum(b - a for a, b in self.vectors)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:  # noqa: D102
        b, parts = obs.shape[0], []
        for (start, stop, shape), conv, head in zip(self.images, self.convs, self.heads):
            pixels = obs[:, start:stop].reshape((b,) + shape)
            # float storage (a float entry beside the image, or normalised observations) holds the
            # same 0-255 integers; as uint8 the encoder scales them to [0, 1] like any image
            parts.append(head(conv(pixels if pixels.dtype == torch.uint8 else pixels.to(torch.uint8))))
        parts += [obs[:, a:b_].float() for a, b_ in self.vectors]
        return torch.cat(parts, dim=1)


@register("encoder", "split")
class SplitEncoder(ObsEncoder):
    """Observations ``[2, w]`` whose first row is the actor's input and the second the critic's (a
    centralised critic, :mod:`canter.algorithms.mappo`): features ``[2, B, w]``, one input per
    network (actor-critic models only; their stacked networks take the two at once)."""

    #: the features are ``[networks, B, out_dim]``, one input per network
    per_network = True

    def __init__(self, space: gym.Space, ortho_init: bool = False) -> None:
        super().__init__(space)
        if not isinstance(space, gym.spaces.Box) or len(space.shape) != 2 or space.shape[0] != 2:
            raise CanterError(f"encoder 'split' needs observations of shape [2, w] (the actor's input, then the "
                              f"critic's, as mappo's multi-agent envs give), not {space}")
        self.out_dim = int(space.shape[1])

    def numpy(self, obs: np.ndarray) -> np.ndarray:  # noqa: D102
        return obs.astype(np.float32, copy=False).transpose(1, 0, 2)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:  # noqa: D102
        return obs.float().transpose(0, 1)


def make_encoder(space: gym.Space, kind: str = "auto", ortho_init: bool = False) -> nn.Module:
    """The encoder ``kind`` names for ``space`` (``auto``: ``nature`` for images, ``impala`` for images
    below 36 pixels a side, ``multi`` for structured observations with images, else ``flat``).

    The returned module maps ``[B, *space.shape]`` tensors to ``[B, encoder.out_dim]`` floats.
    For observations that carry an action mask (:class:`~canter.envs.masks.MaskedBox`) it is built
    on the observation part: the model splits the mask off before encoding.
    """
    from canter.envs.masks import MaskedBox
    from canter.envs.packing import PackedBox

    if isinstance(space, MaskedBox):
        space = space.observation_space()
    if isinstance(space, PackedBox) and kind in ("auto", "nature", "nature_pool", "impala"):
        encoder: nn.Module = MultiInputEncoder(space, ortho_init, image_encoder=kind)
    else:
        if kind == "auto":
            kind = auto_image_encoder(space) if is_image_space(space) else "flat"
        cls = lookup("encoder", kind)
        try:
            encoder = cls(space, ortho_init=ortho_init)
        except Exception as exc:  # a user's encoder: it was the model's error (naming the default model) or,
            # under canter's own model, a traceback
            if cls.__module__.split(".")[0] == "canter" or isinstance(exc, CanterError):
                raise
            from canter.errors import raised_in

            if isinstance(exc, TypeError) and "argument" in str(exc):
                raise CanterError(f"cannot build encoder '{kind}': {exc}; an encoder is built as "
                                  f"Encoder(observation_space, ortho_init=...)") from None
            raise CanterError(f"cannot build encoder '{kind}': {raised_in(exc)}") from None
    if not isinstance(encoder, nn.Module):  # a registered class of the user's: an AttributeError traceback later
        raise CanterError(f"encoder '{kind}' made a {type(encoder).__name__!r} object, not a torch.nn.Module (an encoder "
                          f"subclasses it)")
    if not isinstance(getattr(encoder, "out_dim", None), int):
        raise CanterError(f"encoder '{kind}' must set an integer 'out_dim'")
    return encoder


def has_parameters(module: nn.Module) -> bool:
    """True when ``module`` has trainable parameters (a convolutional encoder, not the flat one)."""
    return any(True for _ in module.parameters())
