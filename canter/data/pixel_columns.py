"""Replay buffers that keep the pixels of packed float32 observations at one byte each.

A ``Dict`` / ``Tuple`` observation holding an image and a float entry is packed into one float32
vector (:class:`~canter.envs.packing.PackedBox`), so a plain buffer would store each pixel in four
bytes: a 36 x 36 x 3 image beside three floats took 15.6 KB a transition (15 GB per million). The
buffers here store the image columns as ``uint8`` (``pixels``, ``[T, n_envs, n_pixels]``) and the
other columns in the space's float dtype (``obs``, ``[T, n_envs, n_other]``), and put the float32
rows back together when sampled: the batches are the very values a plain buffer returns, at 3.9 KB
a transition. A buffer file saved by a plain buffer (before this storage) loads into them.
:class:`PixelColumns` (the split and the join) is also how the on-policy rollout
(:class:`~canter.data.rollout.RolloutBuffer`) and ACER's segment replay
(:class:`~canter.data.segments.SegmentReplay`) store them (``benchmarks/pixel_memory.py`` measures each).
"""
from __future__ import annotations

from functools import cache
from typing import Any

import gymnasium as gym
import numpy as np

from canter.data.replay import ReplayBuffer
from canter.errors import CanterError

#: ``(columns in the observation, columns in the storage)`` pairs
_Runs = list[tuple[slice, slice]]


def split_pixels(space: gym.Space) -> bool:
    """True when ``space`` is a float :class:`~canter.envs.packing.PackedBox` with image columns and
    other columns: the observations whose pixels :func:`pixel_columns_buffer` stores as bytes (a
    packed space of bytes only is ``uint8`` already, and stored as it is)."""
    from canter.envs.packing import PackedBox

    return (isinstance(space, PackedBox) and len(space.shape) == 1 and bool(space.images)
            and bool(space.vector_slices()) and np.issubdtype(space.dtype, np.floating))


def _runs(slices: list[slice]) -> tuple[_Runs, int]:
    """Each run of observation columns with where it lies in its packed storage, and the storage's width."""
    out, at = [], 0
    for cols in slices:
        width = cols.stop - cols.start
        out.append((cols, slice(at, at + width)))
        at += width
    return out, at


class PixelColumns:
    """Where the pixels of flat observations of ``width`` columns (``dtype``) lie: :meth:`split` cuts rows into
    their pixels (``uint8``, ``n_pixels`` a row) and their other columns (``n_rest``), :meth:`join` puts them
    back together (the very values split). What the replay buffers here, the on-policy rollout
    (:mod:`canter.data.rollout`) and ACER's segment replay (:mod:`canter.data.segments`) store."""

    def __init__(self, image_slices: list[slice], width: int, dtype: Any) -> None:
        image_slices = [slice(int(s.start), int(s.stop)) for s in image_slices]
        rest, start = [], 0
        for cols in image_slices:
            if cols.start > start:
                rest.append(slice(start, cols.start))
            start = cols.stop
        if start < width:
            rest.append(slice(start, width))
        self.width, self.dtype = int(width), np.dtype(dtype)
        self.pixel_runs, self.n_pixels = _runs(image_slices)
        self.rest_runs, self.n_rest = _runs(rest)

    @classmethod
    def of(cls, space: gym.Space) -> PixelColumns | None:
        """The columns of ``space``'s observations where :func:`split_pixels` says to store their pixels as
        bytes, else None."""
        if not split_pixels(space):
            return None
        return cls([cols for cols, _ in space.image_slices()], int(space.shape[0]), space.dtype)

    def split(self, obs: Any) -> tuple[np.ndarray, np.ndarray]:
        """``obs`` (``[..., width]``) as its pixels (``uint8``) and its other columns; a one-line
        :class:`CanterError` if a pixel column holds anything but a whole number in [0, 255]."""
        obs = np.asarray(obs)
        pixels = np.concatenate([obs[..., cols] for cols, _ in self.pixel_runs], axis=-1)
        stored = pixels.astype(np.uint8)
        if not np.array_equal(stored, pixels):
            raise CanterError("a packed observation's image columns hold values that are not pixels (whole numbers "
                              "0-255): the env's observations do not match its observation space")
        return stored, np.concatenate([obs[..., cols] for cols, _ in self.rest_runs], axis=-1)

    def join(self, pixels: np.ndarray, rest: np.ndarray) -> np.ndarray:
        """The rows (``[..., width]``, the observations' dtype) that :meth:`split` cut into ``pixels`` and ``rest``."""
        out = np.empty(pixels.shape[:-1] + (self.width,), dtype=self.dtype)
        for cols, at in self.pixel_runs:
            out[..., cols] = pixels[..., at]
        for cols, at in self.rest_runs:
            out[..., cols] = rest[..., at]
        return out


class PixelColumnsMixin:
    """Pixels as ``uint8`` beside the float columns, for :class:`ReplayBuffer` subclasses (see the module
    docstring). ``image_slices``: the observation's pixel columns (:meth:`PackedBox.image_slices`)."""

    obs: np.ndarray
    n_envs: int
    length: int
    pos: int

    def __init__(self, *args: Any, image_slices: list[slice], **kwargs: Any) -> None:
        self.image_slices = [slice(int(s.start), int(s.stop)) for s in image_slices]
        super().__init__(*args, **kwargs)

    def _obs_storage(self, shape: tuple[int, int], obs_shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        if len(obs_shape) != 1:
            raise ValueError(f"pixel columns need flat observations, got shape {obs_shape}")
        self.columns = PixelColumns(self.image_slices, int(obs_shape[0]), dtype)
        self.obs_width, self.obs_dtype = self.columns.width, self.columns.dtype
        self.pixels = np.zeros(shape + (self.columns.n_pixels,), dtype=np.uint8)
        return np.zeros(shape + (self.columns.n_rest,), dtype=dtype)

    def _flat(self) -> None:
        super()._flat()  # type: ignore[misc]
        self._pixels = self.pixels.reshape((self.length * self.n_envs,) + self.pixels.shape[2:])

    def _write_obs(self, row: int, obs: np.ndarray) -> None:
        self.pixels[row], self.obs[row] = self.columns.split(obs)

    def _gather_obs(self, idx: np.ndarray) -> np.ndarray:
        return self.columns.join(self._pixels[idx], self._obs[idx])  # type: ignore[attr-defined]

    def _head_matches(self, obs: np.ndarray) -> bool:
        head = self._gather_obs(self.pos * self.n_envs + np.arange(self.n_envs))
        return np.array_equal(head, obs, equal_nan=True)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` saved, or what a plain buffer saved (whole float rows, split here)."""
        obs = np.asarray(state["obs"]) if "obs" in state else None
        if "pixels" not in state and obs is not None:
            if obs.shape[2:] != (self.obs_width,) or obs.dtype != self.obs_dtype:
                raise CanterError(f"replay buffer observations do not match: saved {obs.shape[2:]} {obs.dtype}, "
                                  f"this buffer ({self.obs_width},) {self.obs_dtype}")
            state = dict(state)
            state["pixels"], state["obs"] = self.columns.split(obs)
        pixels = np.asarray(state["pixels"]) if "pixels" in state else None
        if pixels is not None and pixels.shape[2:] != self.pixels.shape[2:]:
            raise CanterError(f"replay buffer observations do not match: saved {pixels.shape[2]} pixels a row, "
                              f"this buffer {self.pixels.shape[2]}")
        super().load_state_dict(state)  # type: ignore[misc]


@cache
def pixel_columns_class(base: type[ReplayBuffer]) -> type[ReplayBuffer]:
    """``base`` (a :class:`ReplayBuffer` class) storing pixels as bytes (:class:`PixelColumnsMixin`)."""
    return type(f"PixelColumns{base.__name__}", (PixelColumnsMixin, base),
                {"ARRAYS": base.ARRAYS + ("pixels",), "__module__": __name__,
                 "__doc__": f"{base.__name__} storing the pixels of packed observations as bytes."})


def pixel_columns_buffer(base: type[ReplayBuffer], space: gym.Space, *args: Any, **kwargs: Any) -> ReplayBuffer:
    """A ``base`` buffer for observations of ``space``: with its pixels as bytes where :func:`split_pixels`
    says so, else ``base`` itself."""
    columns = PixelColumns.of(space)
    if columns is None:
        return base(*args, **kwargs)
    return pixel_columns_class(base)(*args, image_slices=[cols for cols, _ in columns.pixel_runs], **kwargs)
