"""The output shape of a convolutional stack worked out from its layers' sizes, without running it.

The convolutional encoders learn their ``out_dim`` (the width of the layer after them) from the shape their
layers give an image. A forward pass of zeros found it, but :func:`canter.model_size.check_model_fits`
builds every model on torch's ``meta`` device first, and the first operator that runs on meta tensors
imports torch's symbolic-shape machinery and sympy with it: 1.6-3.4 s of the start of every run on images
(a PPO agent for Pong), for a number that is plain arithmetic. :func:`output_shape` does that arithmetic for
the layers canter's encoders are made of; for anything else it answers None and the encoder runs the
forward pass as before.
"""
from __future__ import annotations

import math

from torch import nn


def _pair(value: int | tuple[int, ...]) -> tuple[int, int]:
    return (value, value) if isinstance(value, int) else (int(value[0]), int(value[1]))


def _sliding(size: int, kernel: int, stride: int, padding: int, dilation: int) -> int:
    """Output length of a convolution or pooling window along one axis (torch's formula, floor mode)."""
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def _says_it_preserves_shape(layer: nn.Module) -> bool:
    """Whether the class whose ``forward`` ``layer`` runs says ``preserves_shape = True`` (a subclass's own forward
    is not vouched for by its base class's word)."""
    owner = next((c for c in type(layer).__mro__ if "forward" in c.__dict__), None)
    return owner is not None and owner.__dict__.get("preserves_shape", False) is True


def _layer_shape(layer: nn.Module, shape: tuple[int, ...]) -> tuple[int, ...] | None:
    kind = next((base for base in _KNOWN if isinstance(layer, base)), None)
    if kind is None:
        return shape if _says_it_preserves_shape(layer) else None
    if type(layer).forward is not kind.forward:  # a subclass's own forward (a convolution that also pools, say)
        return None
    if isinstance(layer, nn.Sequential):
        for child in layer:
            shape = _layer_shape(child, shape)  # type: ignore[assignment]
            if shape is None or min(shape) < 1:
                return None
        return shape
    if isinstance(layer, (nn.ReLU, nn.Identity)):
        return shape
    if isinstance(layer, nn.Flatten):
        return (math.prod(shape),) if (layer.start_dim, layer.end_dim) == (1, -1) else None
    if len(shape) != 3:
        return None
    c, h, w = shape
    if isinstance(layer, nn.Conv2d):
        if isinstance(layer.padding, str) or layer.in_channels != c:
            return None
        k, s, p, d = (_pair(v) for v in (layer.kernel_size, layer.stride, layer.padding, layer.dilation))
        return layer.out_channels, _sliding(h, k[0], s[0], p[0], d[0]), _sliding(w, k[1], s[1], p[1], d[1])
    if isinstance(layer, nn.MaxPool2d):
        if layer.ceil_mode:
            return None
        k, p, d = (_pair(v) for v in (layer.kernel_size, layer.padding, layer.dilation))
        if p[0] > k[0] // 2 or p[1] > k[1] // 2:  # torch refuses it at forward: the pass gives its error
            return None
        s = _pair(layer.stride if layer.stride is not None else layer.kernel_size)
        return c, _sliding(h, k[0], s[0], p[0], d[0]), _sliding(w, k[1], s[1], p[1], d[1])
    if isinstance(layer, nn.AdaptiveAvgPool2d):
        size = layer.output_size
        oh, ow = (size, size) if isinstance(size, int) else size
        return c, h if oh is None else int(oh), w if ow is None else int(ow)
    return None


#: the layers whose output shape :func:`_layer_shape` works out (where they run their own class's forward)
_KNOWN = (nn.Sequential, nn.ReLU, nn.Identity, nn.Flatten, nn.Conv2d, nn.MaxPool2d, nn.AdaptiveAvgPool2d)


def output_shape(module: nn.Module, shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """The shape (without the batch axis) of what ``module`` gives one input of ``shape`` (``[C, H, W]``), from
    its layers' sizes: ``Sequential`` stacks of ``Conv2d``, ``MaxPool2d`` (floor mode), ``AdaptiveAvgPool2d``,
    ``ReLU``, ``Identity``, ``Flatten`` (not their subclasses with a forward of their own) and modules whose
    forward's class says ``preserves_shape = True``. None where a layer is none of those, its input does not fit
    it (a ``MaxPool2d`` padded by more than half its kernel, which torch accepts when built and refuses when
    run, included), or an axis would come out empty (a forward pass then finds the shape, or the error)."""
    out = _layer_shape(module, tuple(int(n) for n in shape))
    return None if out is None or min(out) < 1 else out
