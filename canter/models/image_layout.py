"""How image observations lie: the layout (``chw``, ``hw``, ``hwc``, or a stack of frames ``s...``) the
convolutional encoders of :mod:`canter.models.cnn` read a uint8 image Box with, and the checks that go with it.
:mod:`canter.models.cnn` re-exports these names."""
from __future__ import annotations

import gymnasium as gym
import numpy as np

from canter.errors import CanterError


def image_layout(space: gym.Space) -> str | None:
    """``"chw"``, ``"hw"`` or ``"hwc"`` for a uint8 image Box space (bounds 0 and 255, at least 8 pixels a
    side); None for anything else, such as a uint8 board of small integers, which is a vector of values
    rather than a picture.

    A 3-dimensional image is channels-last when its last axis holds 1, 3 or 4 values or fewer than its first
    (Stable-Baselines3's rule: the channels are the smallest axis), so ``[84, 84, 12]`` (four RGB frames
    stacked along the channels) and ``[64, 64, 6]`` are ``hwc``; else channels-first (``[12, 84, 84]``).
    A 4-dimensional one is a stack of such frames along its first axis (gymnasium's ``FrameStackObservation``):
    ``"shwc"`` (``[4, 96, 96, 3]``) or ``"schw"`` (``[4, 3, 96, 96]``), read as ``S * C`` channels."""
    if not isinstance(space, gym.spaces.Box) or space.dtype != np.uint8:
        return None
    if not (np.all(space.low == 0) and np.all(space.high == 255)):
        return None
    saved = getattr(space, "saved_image_layout", None)  # a checkpoint's space, read as its model was trained
    if saved is not None:
        return saved or None
    given = getattr(space, GIVEN_LAYOUT, None)  # an env that says how its frames lie (mark_image_layout)
    if given is not None:
        return given or None
    return _shape_layout(space.shape)


#: the attribute of an observation space in which its env gives the layout of its images (:func:`mark_image_layout`)
GIVEN_LAYOUT = "given_image_layout"


def mark_image_layout(space: gym.Space, layout: str) -> gym.Space:
    """``space``, marked as laid out as ``layout`` (``"chw"``, ...) for :func:`image_layout`, where the shape rule
    could read it otherwise: the Atari envs' channels-first stacks ``[C * frame_stack, height, width]`` of small
    screens or long stacks (``[12, 10, 10]``, ``[12, 8, 8]``) have a last axis shorter than their first, which reads
    as channels-last. Checkpoints record it (``image_layout`` in the space's description). An image entry of a
    ``Dict`` or ``Tuple`` observation keeps its mark when packed (:class:`canter.envs.packing.PackedBox`'s
    ``given_image_layouts``, ``image_layouts`` in the packed space's description), and the ``multi`` encoder
    reads it so."""
    setattr(space, GIVEN_LAYOUT, layout)
    return space


def shape_image_layout(shape: tuple[int, ...]) -> str | None:
    """:func:`image_layout` of an unmarked uint8 0-255 Box of ``shape``: the layout its shape alone gives."""
    return image_layout(gym.spaces.Box(0, 255, tuple(shape), np.uint8))


def _shape_layout(shape: tuple[int, ...]) -> str | None:
    if len(shape) == 4:
        frame = _shape_layout(shape[1:])
        return None if frame is None else "s" + frame
    if len(shape) == 2 and min(shape) >= 8:
        return "hw"
    if len(shape) == 3:
        if (shape[-1] in (1, 3, 4) or shape[-1] < shape[0]) and min(shape[:2]) >= 8:
            return "hwc"
        if min(shape[1:]) >= 8:
            return "chw"
    return None


def conv_input_layout(space: gym.Space) -> str | None:
    """The layout a convolutional encoder reads ``space`` with: :func:`image_layout`'s for uint8 pixel images;
    for another float or uint8 Box of an image's shape (float images in [0, 1], say, which ``auto`` gives the
    flat encoder, as Stable-Baselines3 does) the same rule by shape, when an encoder is named for it."""
    layout = image_layout(space)
    if layout is not None or not isinstance(space, gym.spaces.Box):
        return layout
    if not (np.issubdtype(space.dtype, np.floating) or space.dtype == np.uint8):
        return None
    return _shape_layout(space.shape)


def former_image_layout(shape: tuple[int, ...]) -> str | None:
    """The layout :func:`image_layout` gave a uint8 0-255 Box of ``shape`` until 2026-11-27: channels-last only
    for 1, 3 or 4 channels, so ``[84, 84, 12]`` was read as 84 channels of 84 x 12 pixels and ``[64, 64, 6]``
    as a vector. Checkpoints of such spaces (written without ``image_layout``) keep that reading
    (:func:`canter.envs.spaces.space_from_dict`), so their weights still fit."""
    if len(shape) == 2 and min(shape) >= 8:
        return "hw"
    if len(shape) == 3:
        if shape[-1] in (1, 3, 4) and min(shape[:2]) >= 8:
            return "hwc"
        if min(shape[1:]) >= 8:
            return "chw"
    return None


def is_image_space(space: gym.Space) -> bool:
    """True for uint8 image observations (what the convolutional encoders take)."""
    return image_layout(space) is not None


def image_pixels(x: np.ndarray, space: gym.Space, what: str = "") -> np.ndarray:
    """``x`` as uint8 when ``space`` holds images: the convolutional encoders divide uint8 pixels by 255 and
    take other dtypes as already scaled, so a nested list (int64) or a float array of the same 0-255 values
    would otherwise act on unscaled input. Values that are not pixels are refused (``what`` starts the
    message); observations of any other space are returned as they are."""
    if not is_image_space(space) or x.dtype == np.uint8:
        return x
    pixels = x.astype(np.uint8)
    if not np.array_equal(pixels, x):
        raise CanterError(f"{what}image observations are uint8 pixel values 0..255, as the env gives them; got "
                          f"{x.dtype} values that are not (min {x.min()}, max {x.max()})")
    return pixels

