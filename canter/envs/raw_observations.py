"""Raw structured observations (``Dict``, ``Tuple``, ``MultiDiscrete``, as an unwrapped env gives them) packed
into the vectors an agent's packed observation space holds, from that space's ``packed_layout`` alone.

:class:`~canter.envs.packing.ObservationPacker` packs what the training envs give; a loaded agent has no env,
only its checkpoint's layout (:func:`~canter.envs.packing.layout_entry`: each entry's path, kind, a Box's
shape, a Discrete's ``n`` and ``start``, a MultiDiscrete's ``nvec`` and ``start``, a MultiBinary's ``n``).
:func:`pack_raw` walks that layout over one observation or a batch of them (a dict of ``[B, ...]`` arrays, as
Stable-Baselines3's VecEnv gives a Dict's; a tuple of them for a Tuple; a list of observations) and gives the
columns in the layout's order, as gymnasium's ``spaces.flatten`` does: a Box's values, one-hot Discrete and
MultiDiscrete entries (less their ``start``), MultiBinary's 0/1 values, and last, in the action-mask
convention (:mod:`canter.envs.masks`), the ``action_mask`` entry. An entry that does not fit (missing, of
another shape, a value outside its Discrete) is a one-line :class:`~canter.errors.CanterError` naming it.
"""
from __future__ import annotations

import re
from typing import Any

import gymnasium as gym
import numpy as np

from canter.envs.masks import MASK_KEY, mask_width
from canter.envs.packing import Layout, describe_entry, packed_layout
from canter.errors import CanterError

_STEP = re.compile(r"\[(\d+)\]|([^.\[\]]+)")


def _steps(path: str) -> list[int | str]:
    """A layout path (``"a.b"``, ``"[0].pos"``) as the keys and indices that reach its entry."""
    return [int(i) if i else key for i, key in _STEP.findall(path)]


def _raw_shape(entry: dict[str, Any]) -> tuple[int, ...]:
    """The shape of one raw value of a layout entry (a Discrete's is a scalar)."""
    kind = entry.get("kind")
    if kind == "Discrete":
        return ()
    if kind == "MultiDiscrete":
        return tuple(np.shape(entry["nvec"]))
    if kind == "MultiBinary":
        return tuple(np.atleast_1d(entry["n"]).tolist())
    return tuple(entry.get("shape", ()))


def is_raw(space: gym.Space, obs: Any) -> bool:
    """Whether ``obs`` is a raw structured observation (or batch) for the packed ``space``: a dict, a tuple or a
    list of them where the space packs a Dict / Tuple; whole numbers of a MultiDiscrete / MultiBinary
    observation's own shape (not the packed vector's) where it packs one of those."""
    layout = packed_layout(space)
    if not layout:
        return False
    plain = len(layout) == 1 and not layout[0].get("path")  # a MultiDiscrete / MultiBinary observation alone
    if (isinstance(obs, (dict, tuple)) and not (plain and isinstance(obs, tuple))) or (  # (1, -2): its numbers, below
            isinstance(obs, list) and obs and isinstance(obs[0], (dict, tuple))):
        top = _steps(layout[0].get("path", ""))[:1]
        if isinstance(obs, tuple) and not (top and isinstance(top[0], int)):
            return False  # a tuple for a Dict: (obs, info) from env.reset(), which as_batch names
        return bool(top) or isinstance(obs, list)
    if not plain:
        return False
    try:
        x = np.asarray(obs)
    except (ValueError, TypeError):
        return False
    raw, packed = _raw_shape(layout[0]), tuple(space.shape)
    if x.dtype.kind not in "biuf" or x.shape == packed or x.shape[1:] == packed:
        return False  # the packed vector (or a batch of them), or not numbers: as_batch's own checks
    return x.shape == raw or x.shape[1:] == raw


def pack_raw(space: gym.Space, obs: Any) -> tuple[np.ndarray, bool]:
    """``obs`` (see :func:`is_raw`) packed into rows ``[B, *space.shape]`` of the space's dtype, as training
    packed them, and whether it was one observation (a batch of one comes back)."""
    layout: Layout = packed_layout(space)
    if isinstance(obs, list) and isinstance(obs[0], (dict, tuple)):  # a list of Dict / Tuple observations (is_raw:
        # not empty); a list of numbers is one MultiDiscrete observation (or nested, a batch), read by its shape
        rows = [_pack(space, layout, o, f"observation {i}: ", single_only=True)[0] for i, o in enumerate(obs)]
        return np.concatenate(rows), False
    return _pack(space, layout, obs, "", single_only=False)


def _pack(space: gym.Space, layout: Layout, obs: Any, where: str, single_only: bool) -> tuple[np.ndarray, bool]:
    """One observation, or (unless ``single_only``) a batch of entries ``[B, ...]``, as packed rows."""
    values = [_lookup(obs, entry, where) for entry in layout]
    shape = _raw_shape(layout[0])
    try:
        first = np.shape(values[0])
    except (ValueError, TypeError):  # ragged
        first = (-1,)
    single = single_only or len(first) == len(shape)
    batch = 1 if single else (first[0] if len(first) == len(shape) + 1 else -1)
    if batch < 0:
        _refuse(layout[0], f"has shape {first}, not {shape} (one observation) or (B, *{shape}) (a batch)", where)
    try:
        columns = [_columns(entry, v, batch, single, where) for entry, v in zip(layout, values)]
    except CanterError as exc:
        if single:
            raise
        # which entry told the batch size, for a mismatch of another's
        told = f"'{layout[0]['path']}'" if layout[0].get("path") else "the observation"
        raise CanterError(f"{exc} (a batch of {batch}, as {told} has shape {first})") from None
    _check_pixels(space, layout, columns, where)
    width = mask_width(space)
    if width:
        columns.append(_mask(obs, width, batch, single, where))
    return np.concatenate(columns, axis=1).astype(space.dtype, copy=False), single and not single_only


def _check_pixels(space: gym.Space, layout: Layout, columns: list[np.ndarray], where: str) -> None:
    """A :class:`CanterError` naming the entry unless the columns of each image entry of the packed ``space`` are
    pixel values (whole numbers 0..255), as for a plain image observation
    (:func:`~canter.models.image_layout.image_pixels`): an image already divided by 255 was packed as it came."""
    starts = {int(offset) for offset, _ in getattr(space, "images", ())}
    at = 0
    for entry, x in zip(layout, columns):
        if at in starts and x.size and x.dtype != np.uint8 and not (
                np.array_equal(np.floor(x), x) and x.min() >= 0 and x.max() <= 255):
            _refuse(entry, f"is an image: uint8 pixel values 0..255, as the env gives them; got {x.dtype} values "
                           f"that are not (min {x.min():g}, max {x.max():g})", where)
        at += x.shape[1]


def _refuse(entry: dict[str, Any], problem: str, where: str) -> None:
    """Raise the one-line error: ``where``, the entry's name and description, ``problem``."""
    name = f"observation entry '{entry['path']}'" if entry.get("path") else "the observation"
    raise CanterError(f"{where}{name} ({describe_entry(entry)}) {problem}")


def _lookup(obs: Any, entry: dict[str, Any], where: str) -> Any:
    """The raw value at the entry's path in ``obs``."""
    value = obs
    for step in _steps(entry["path"]):
        if isinstance(step, str) and isinstance(value, dict) and step in value:
            value = value[step]
        elif isinstance(step, int) and isinstance(value, (tuple, list)) and step < len(value):
            value = value[step]
        else:
            want = f"a dict with key '{step}'" if isinstance(step, str) else f"a tuple of more than {step} entries"
            got = f"keys {sorted(map(str, value))}" if isinstance(value, dict) else (
                f"a {type(value).__name__} of {len(value)} entries" if isinstance(value, (tuple, list)) else f"{type(value).__name__} {value!r:.30}")
            _refuse(entry, f"is missing: expected {want} there, got {got}", where)
    return value


def _numbers(entry: dict[str, Any], value: Any, batch: int, single: bool, where: str) -> np.ndarray:
    """``value`` as a numeric array ``[B, *raw shape]``, else a :class:`CanterError` naming the entry."""
    shape = _raw_shape(entry)
    try:
        x = np.asarray(value)
    except (ValueError, TypeError):
        x = np.asarray(None)
    if x.dtype.kind not in "biuf":
        _refuse(entry, f"must be numbers, got {type(value).__name__} of {x.dtype} values", where)
    want = shape if single else (batch, *shape)
    if x.shape != want:
        _refuse(entry, f"has shape {x.shape}, expected {want}", where)
    return x.reshape(batch, *shape)


def _categories(entry: dict[str, Any], x: np.ndarray, n: np.ndarray, start: np.ndarray, where: str) -> np.ndarray:
    """Indices ``x - start`` of whole numbers in ``start .. start + n - 1``, else a :class:`CanterError`."""
    x = x.astype(np.float64)
    idx = x - start
    bad = (np.floor(x) != x) | (idx < 0) | (idx >= n)
    if bad.any():
        at = tuple(int(i) for i in np.argwhere(bad)[0])
        _refuse(entry, f"holds {x[at]:g} where the values are whole numbers {int(np.broadcast_to(start, x.shape)[at])}"
                       f"..{int(np.broadcast_to(start + n - 1, x.shape)[at])}", where)
    return idx.astype(np.int64)


def _columns(entry: dict[str, Any], value: Any, batch: int, single: bool, where: str) -> np.ndarray:
    """One entry's packed columns ``[B, flatdim]``, as gymnasium's ``spaces.flatten`` gives them."""
    x = _numbers(entry, value, batch, single, where)
    kind = entry.get("kind")
    if kind == "Discrete":
        idx = _categories(entry, x, np.asarray(entry["n"]), np.asarray(entry.get("start", 0)), where)
        return np.eye(int(entry["n"]), dtype=np.float32)[idx]
    if kind == "MultiDiscrete":
        nvec = np.asarray(entry["nvec"], np.int64)
        idx = _categories(entry, x, nvec, np.asarray(entry.get("start", np.zeros_like(nvec))), where).reshape(batch, -1)
        offsets = np.r_[0, np.cumsum(nvec.reshape(-1))]
        out = np.zeros((batch, int(offsets[-1])), np.float32)
        np.put_along_axis(out, offsets[:-1] + idx, 1.0, axis=1)
        return out
    if kind == "MultiBinary":
        binary_values(entry, x, where)
    return x.reshape(batch, -1)


def binary_values(entry: dict[str, Any], x: np.ndarray, where: str = "") -> None:
    """A :class:`CanterError` naming the MultiBinary ``entry`` unless every value of ``x`` is 0 or 1."""
    _categories(entry, x, np.asarray(2), np.asarray(0), where)


def _mask(obs: Any, width: int, batch: int, single: bool, where: str) -> np.ndarray:
    """The ``action_mask`` entry's columns ``[B, width]``."""
    entry = {"path": MASK_KEY, "kind": "MultiBinary", "n": width}
    if not isinstance(obs, dict) or MASK_KEY not in obs:
        _refuse(entry, f"is missing: got {sorted(map(str, obs)) if isinstance(obs, dict) else type(obs).__name__}",
                where)
    try:
        value = np.reshape(obs[MASK_KEY], (-1,) if single else (batch, -1))
    except (ValueError, TypeError):
        value = obs[MASK_KEY]  # refused by _numbers, naming its shape
    return _numbers(entry, value, batch, single, where).astype(np.float32)
