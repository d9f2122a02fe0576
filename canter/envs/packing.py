"""Structured observations (``Dict``, ``Tuple``) as one flat float32 vector per observation (and
``MultiBinary`` / ``MultiDiscrete`` observations, flattened as the same entries of a ``Dict`` are).

canter's buffers, datasets and networks take arrays. An env whose observations are a ``Dict`` or
``Tuple`` of vectors (``Box``, ``Discrete`` one-hot, ``MultiBinary``, ``MultiDiscrete`` one-hot per
entry, nested) is wrapped by :class:`PackObservations`, which flattens each observation with
gymnasium's ``spaces.flatten`` into a float32 ``Box`` (what Stable-Baselines3's
``MultiInputPolicy`` does for non-image entries). A ``Dict`` in the action-mask convention
(:mod:`canter.envs.masks`) keeps its mask apart: the other entries flattened, then the mask, in a
:class:`~canter.envs.masks.MaskedBox`.

Image entries (``uint8`` images, :func:`canter.models.cnn.is_image_space`) are flattened too, into
a :class:`PackedBox` that records where each image lies in the vector, so the ``multi`` encoder
(:class:`canter.models.cnn.MultiInputEncoder`, picked automatically) gives each image a
convolutional network and the other entries their values. Such a vector is ``uint8`` when every
entry fits in a byte (images, ``uint8`` boxes, one-hot ``Discrete``, ``MultiBinary`` and
``MultiDiscrete``), so buffers store pixels at one byte each; with a float entry it is ``float32``, and
the off-policy replay buffers, the on-policy rollout and ACER's segment replay keep its pixel columns at
one byte each apart from the rest (:mod:`canter.data.pixel_columns`).
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from canter.envs.masks import MASK_KEY, OBS_KEY, MaskedBox, check_mask_length, has_action_mask, mask_size
from canter.errors import CanterError

STRUCTURED = (gym.spaces.Dict, gym.spaces.Tuple)


#: observation spaces that are vectors of categories, flattened like a Dict's entries of the same
#: spaces (MultiBinary as 0/1 floats, MultiDiscrete one-hot per entry), as Stable-Baselines3 takes them
CATEGORICAL = (gym.spaces.MultiBinary, gym.spaces.MultiDiscrete)


def needs_packing(space: gym.Space) -> bool:
    """True for observation spaces that :class:`ObservationPacker` turns into vectors: ``Dict``,
    ``Tuple``, ``MultiBinary`` and ``MultiDiscrete``."""
    return isinstance(space, STRUCTURED + CATEGORICAL)


class PackedBox(gym.spaces.Box):
    """A flat Box holding a ``Dict`` / ``Tuple`` observation with image entries: ``images`` lists
    each image's ``(offset, shape)`` in the vector (its pixels in the image's own layout); the
    other columns are the remaining entries, flattened. ``given_image_layouts`` (offset -> layout) keeps the
    layout of an image whose env marked it otherwise than its shape reads
    (:func:`canter.models.cnn.mark_image_layout`), as the ``multi`` encoder is to read it."""

    def __init__(self, low: np.ndarray, high: np.ndarray, dtype: Any,
                 images: Sequence[tuple[int, Sequence[int]]], seed: Any = None,
                 given_image_layouts: dict[int, str] | None = None) -> None:
        super().__init__(low=np.asarray(low).astype(dtype), high=np.asarray(high).astype(dtype), dtype=dtype, seed=seed)
        self.images: tuple[tuple[int, tuple[int, ...]], ...] = tuple(
            (int(o), tuple(int(d) for d in shape)) for o, shape in images)
        self.given_image_layouts: dict[int, str] = {int(o): str(v) for o, v in (given_image_layouts or {}).items()}

    def image_slices(self) -> list[tuple[slice, tuple[int, ...]]]:
        """Each image's columns and shape."""
        return [(slice(o, o + int(np.prod(shape))), shape) for o, shape in self.images]

    def vector_slices(self) -> list[slice]:
        """The runs of columns that are not pixels, in order."""
        out, start = [], 0
        for cols, _ in self.image_slices():
            if cols.start > start:
                out.append(slice(start, cols.start))
            start = cols.stop
        if start < self.shape[0]:
            out.append(slice(start, self.shape[0]))
        return out

    def __repr__(self) -> str:
        return f"PackedBox({self.shape[0]}, {self.dtype}, images={[s for _, s in self.images]})"


#: one step of a leaf's path (:func:`_leaves`): ``[0]`` an index, else a key
_PATH_STEP = re.compile(r"\[(\d+)\]|([^.\[\]]+)")


def _leaves(space: gym.Space, where: str = "") -> list[tuple[str, gym.Space]]:
    """The leaf entries of a structured space in gymnasium's flattening order, with their names."""
    if isinstance(space, gym.spaces.Dict):
        return [leaf for key, sub in space.spaces.items() for leaf in _leaves(sub, f"{where}.{key}" if where else str(key))]
    if isinstance(space, gym.spaces.Tuple):
        return [leaf for i, sub in enumerate(space.spaces) for leaf in _leaves(sub, f"{where}[{i}]")]
    return [(where, space)]


def _fits_a_byte(space: gym.Space) -> bool:
    """True when every flattened value of ``space`` is an integer in [0, 255]."""
    if isinstance(space, (gym.spaces.Discrete, gym.spaces.MultiBinary, gym.spaces.MultiDiscrete)):
        return True  # one-hot or 0/1
    return (isinstance(space, gym.spaces.Box) and np.issubdtype(space.dtype, np.integer)
            and bool(np.all(space.low >= 0)) and bool(np.all(space.high <= 255)))


#: a packed space's structure: one JSON-safe description per entry, in the vector's order
#: (:func:`layout_entry`), kept in the space's ``packed_layout`` attribute and written in checkpoints
#: (:func:`canter.envs.spaces.space_to_dict`), so that two structures of the same width and bounds
#: (a Dict and a Tuple of the same entries; entries of other sizes) are told apart
Layout = tuple[dict[str, Any], ...]


def layout_entry(path: str, leaf: gym.Space) -> dict[str, Any]:
    """One entry of a packed layout: its ``path`` in the structure (``"img"``, ``"[0]"``, ``"a.b"``;
    ``""`` for a plain MultiDiscrete / MultiBinary observation), its ``kind`` (the space's class) and
    what fixes its columns: a Box's ``shape``, a Discrete's ``n`` (and ``start``), a MultiDiscrete's
    ``nvec`` (and ``start``), a MultiBinary's ``n``."""
    entry: dict[str, Any] = {"path": path, "kind": type(leaf).__name__}
    if isinstance(leaf, gym.spaces.Discrete):
        entry["n"] = int(leaf.n)
        if leaf.start:
            entry["start"] = int(leaf.start)
    elif isinstance(leaf, gym.spaces.MultiDiscrete):
        entry["nvec"] = leaf.nvec.tolist()
        if leaf.start.any():
            entry["start"] = leaf.start.tolist()
    elif isinstance(leaf, gym.spaces.MultiBinary):
        entry["n"] = np.asarray(leaf.n).tolist()
    else:
        entry["shape"] = [int(d) for d in leaf.shape]
    return entry


def packed_layout(space: gym.Space) -> Layout | None:
    """The structure packed into ``space`` (its ``packed_layout``), or None for a space that
    :class:`ObservationPacker` did not make (or one read from a checkpoint written before layouts
    were recorded)."""
    return getattr(space, "packed_layout", None)


def describe_entry(entry: dict[str, Any]) -> str:
    """A layout entry as ``"img: Box(8, 8, 1)"`` (no path for a plain MultiDiscrete observation)."""
    kind = entry.get("kind")
    if "shape" in entry:
        what = f"{kind}({', '.join(str(d) for d in entry['shape'])}{',' if len(entry['shape']) == 1 else ''})"
    else:
        start = f", start={entry['start']}" if "start" in entry else ""
        what = f"{kind}({entry.get('nvec', entry.get('n'))}{start})"
    return f"{entry['path']}: {what}" if entry.get("path") else what


def packing_hint(space: gym.Space, guess: bool = False) -> str:
    """For an error about an observation of the wrong shape: ``"; a ... observation is taken as the env gives it, or
    packed into one vector ..."`` where ``space`` is a packed one (whose agent packs raw observations itself); else,
    with ``guess`` (the input looked structured: a tuple, a dict, whole numbers; a checkpoint from before layouts
    were saved has none to name, and packs nothing), ``"; a ... observation is packed into one vector first: wrap
    the env in ..."``; else ``""``."""
    layout = packed_layout(space)
    if not layout and not guess:
        return ""
    what, how = "Dict, Tuple or MultiDiscrete" if not layout else "Dict or Tuple", ""
    if layout and len(layout) == 1 and not layout[0].get("path") and layout[0].get("kind") in ("MultiDiscrete", "MultiBinary"):
        what, how = describe_entry(layout[0]), " (one-hot per entry)" if layout[0]["kind"] == "MultiDiscrete" else ""
    if layout:  # predict packs raw ones itself (canter.envs.raw_observations)
        return (f"; a {what} observation is taken as the env gives it, or packed into one vector{how} as "
                f"canter.envs.packing.pack_observations(env) gives it")
    return (f"; a {what} observation is packed into one vector first: wrap the env in "
            f"canter.envs.packing.pack_observations(env)")


def _check_entries(space: gym.Space, where: str) -> None:
    """Refuse entries that do not flatten into a feature vector (text, graphs...)."""
    for name, leaf in _leaves(space, where):
        _check_leaf(leaf, name)


def _check_leaf(space: gym.Space, where: str) -> None:
    if not isinstance(space, (gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiBinary, gym.spaces.MultiDiscrete)):
        raise CanterError(f"observation entry '{where}' is a {type(space).__name__} space, which canter cannot "
                          f"flatten into a vector (Box, Discrete, MultiBinary and MultiDiscrete entries can)")


class OutsideSpace(CanterError, ValueError):
    """A Discrete or MultiDiscrete entry of a structured observation outside its space (a ValueError too, as a value
    that does not fit: :func:`pack_rows` names the row, :class:`~canter.envs.vector.VecEnv` the env)."""


class ObservationPacker:
    """Flattens observations of a ``Dict`` / ``Tuple`` space into vectors of :attr:`space`: float32
    (a :class:`~canter.envs.masks.MaskedBox` when the space follows the action-mask convention), or
    a :class:`PackedBox` when it has image entries. The space's ``packed_layout`` lists the entries
    packed into it (:func:`layout_entry`), for checkpoints to record."""

    #: configuration only: an env's snapshot for exact resume (:mod:`canter.envs.state`) skips it
    resume_stateless = True

    def __init__(self, space: gym.Space, action_space: gym.Space) -> None:
        from canter.models.cnn import image_layout, is_image_space, shape_image_layout

        self.mask = has_action_mask(space)
        if self.mask:
            width = mask_size(action_space)  # refuses action spaces that cannot be masked
            rest = {k: v for k, v in space.spaces.items() if k != MASK_KEY}
            mask = space[MASK_KEY]
            if not isinstance(mask, (gym.spaces.Box, gym.spaces.MultiBinary)):
                raise CanterError(f"the '{MASK_KEY}' entry must be a MultiBinary or Box of 0/1 values, got {mask}")
            check_mask_length(int(np.prod(mask.shape)), action_space, f"the '{MASK_KEY}' entry {mask}")
            self._action_space = action_space
            # the usual single 'observation' entry is flattened on its own (the same layout as before)
            # the env's own key order, as without a mask (gymnasium's Dict would sort the keys again)
            self._single = set(rest) == {OBS_KEY}
            self._inner = rest[OBS_KEY] if self._single else gym.spaces.Dict(rest, sort_keys=False)
        else:
            self._inner, width, self._single = space, 0, False
        where = OBS_KEY if self._single else ""
        _check_entries(self._inner, where)
        flat = gym.spaces.flatten_space(self._inner)
        low, high = np.asarray(flat.low, np.float64), np.asarray(flat.high, np.float64)
        images, offset, leaves, given = [], 0, _leaves(self._inner, where), {}
        for _, leaf in leaves:
            if is_image_space(leaf):
                images.append((offset, leaf.shape))
                if (layout := image_layout(leaf)) != shape_image_layout(leaf.shape):  # marked by its env
                    given[offset] = layout
            offset += gym.spaces.flatdim(leaf)
        if images and self.mask:
            raise CanterError("observations with both image entries and an action mask are not supported: give the "
                              "image on its own (a Box observation) or drop the mask")
        if self.mask:
            self.space: gym.spaces.Box = MaskedBox(np.r_[low, np.zeros(width)], np.r_[high, np.ones(width)], width)
        elif images:
            dtype = np.uint8 if all(_fits_a_byte(leaf) for _, leaf in leaves) else np.float32
            self.space = PackedBox(low, high, dtype, images, given_image_layouts=given)
        else:
            self.space = gym.spaces.Box(low.astype(np.float32), high.astype(np.float32), dtype=np.float32)
        self.space.packed_layout = tuple(layout_entry(name, leaf) for name, leaf in leaves)
        self._dtype = self.space.dtype
        #: the Discrete / MultiDiscrete / MultiBinary entries (path steps, space), whose values are checked before
        #: flattening: gymnasium's flatten one-hot encodes ``x - start`` by indexing, so a value below ``start``
        #: wrapped round to another category without a word (and one above was an IndexError traceback); it casts
        #: a MultiBinary's values to int8, so a 2 was trained on as 2.0 (and 0.5 as 0) without a word
        self._categorical = [([int(i) if i else key for i, key in _PATH_STEP.findall(name)], leaf)
                             for name, leaf in leaves if isinstance(leaf, (gym.spaces.Discrete, *CATEGORICAL))]

    def _check_categories(self, observation: Any) -> None:
        """Raise a :class:`CanterError` naming a Discrete, MultiDiscrete or MultiBinary entry whose value is outside
        its space (a MultiBinary's: not 0 or 1; whole floats, 1.0, pack as gymnasium's flatten packs them)."""
        for steps, leaf in self._categorical:
            value = observation
            try:
                for step in steps:
                    value = value[step]
                x = np.asarray(value)
                binary = isinstance(leaf, gym.spaces.MultiBinary)  # flatten casts its values: 1.0 is 1
                if binary:  # one-byte values (MultiBinary's own int8, uint8, bool): the bytes that are not 0 or 1
                    inside = (not x.tobytes().translate(None, b"\x00\x01") if x.dtype.itemsize == 1 and
                              x.dtype.kind in "iub" else bool(np.all((x == 0) | (x == 1))))  # (np.all's: 4 us a call)
                else:
                    n = np.asarray(leaf.n if isinstance(leaf, gym.spaces.Discrete) else leaf.nvec)
                    # the values only: a Discrete entry given as a 1-element array flattens as gymnasium's one does
                    inside = bool(np.all((x >= leaf.start) & (x < leaf.start + n)))
            except (KeyError, IndexError, TypeError, ValueError):  # a missing entry, a shape that does not broadcast:
                continue  # flatten's own error says so
            # gymnasium's flatten indexes with a Discrete / MultiDiscrete's values: floats were an IndexError
            whole = binary or x.dtype.kind in "iub"
            if not (inside and whole):
                entry = _entry_name(steps)
                raise OutsideSpace(f"{entry} holds {x.tolist()}, outside its space {leaf}" if not inside else
                                   f"{entry} holds {x.dtype} values {x.tolist()}, where its space {leaf} holds integers")

    def __call__(self, observation: Any) -> np.ndarray:
        """The flat vector of one observation (in :attr:`space`'s dtype)."""
        if self._categorical:
            self._check_categories(observation)
        if not self.mask:
            return np.asarray(gym.spaces.flatten(self._inner, observation), self._dtype)
        # the 'observation' entry (itself a Dict or Tuple, possibly), or every entry but the mask
        rest = observation[OBS_KEY] if self._single else {k: v for k, v in observation.items() if k != MASK_KEY}
        x = np.asarray(gym.spaces.flatten(self._inner, rest), np.float32)
        mask = np.asarray(observation[MASK_KEY], np.float32).reshape(-1)
        if mask.size != self.space.mask_width:  # else a wrong-shape error for the whole observation, later
            check_mask_length(mask.size, self._action_space, "the env's action mask")
        return np.concatenate([x, mask])


def _entry_name(steps: list[Any]) -> str:
    """How an error names the observation entry at path ``steps`` (``[]``: the whole observation)."""
    name = "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in steps).lstrip(".")
    return f"observation entry '{name}'" if name else "the observation"


class PackObservations(gym.ObservationWrapper):
    """An env with structured observations, each flattened by an :class:`ObservationPacker`."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self._pack = ObservationPacker(env.observation_space, env.action_space)
        self.observation_space = self._pack.space

    def observation(self, observation: Any) -> np.ndarray:  # noqa: D102
        return self._pack(observation)


def pack_observations(env: gym.Env) -> gym.Env:
    """``env`` wrapped in :class:`PackObservations` when its observations are structured, else ``env``."""
    return PackObservations(env) if needs_packing(env.observation_space) else env


def pack_rows(values: Any, packer: ObservationPacker, what: str) -> np.ndarray:
    """Observations ``[N]`` of a structured space packed into ``[N, ...]`` rows of ``packer.space``: ``values`` is a
    ``Dict``'s entries as a dict of arrays ``[N, ...]`` (nested for a nested Dict; a ``Tuple``'s as a tuple of
    them), a list of per-row observations, or ``[N, k]`` MultiBinary / MultiDiscrete rows. A row that does not
    fit the space is a one-line :class:`CanterError` naming ``what`` and the row."""
    columns = isinstance(values, (dict, tuple))
    n = len(_first_leaf(values, what)) if columns else len(values)
    fast = _pack_boxes(values, packer, n) if columns and not packer.mask else None
    if fast is not None:
        return fast
    rows = []
    for i in range(n):
        try:
            rows.append(packer(_row(values, i) if columns else values[i]))
        except (KeyError, IndexError, TypeError, ValueError, AssertionError, AttributeError) as exc:
            raise CanterError(f"{what} row {i} is not an observation of the structured space packed into "
                              f"{packer.space.shape[0]} values ({type(exc).__name__}: {exc}); give a Dict's entries as a "
                              f"dict of arrays [N, ...] (a Tuple's as a tuple of them)") from None
    return np.stack(rows) if rows else np.zeros((0, *packer.space.shape), packer.space.dtype)


def _first_leaf(values: Any, what: str) -> Any:
    """The first array of a nested dict / tuple of arrays."""
    while isinstance(values, (dict, tuple)):
        if not values:
            raise CanterError(f"{what} hold an empty dict or tuple; give each entry's array [N, ...]")
        values = next(iter(values.values())) if isinstance(values, dict) else values[0]
    return values


def _row(values: Any, i: int) -> Any:
    """Row ``i`` of a nested dict / tuple of arrays, as one observation of that structure."""
    if isinstance(values, dict):
        return {k: _row(v, i) for k, v in values.items()}
    if isinstance(values, tuple):
        return tuple(_row(v, i) for v in values)
    return np.asarray(values[i])


def _pack_boxes(values: Any, packer: ObservationPacker, n: int) -> np.ndarray | None:
    """:func:`pack_rows` of a Dict / Tuple of Box entries at once (a row at a time took 13 us: 26 s for a million
    transitions' obs and next obs), checked against the packer on three rows; None for other entries."""
    def columns(space: gym.Space, part: Any) -> list[np.ndarray] | None:
        if isinstance(space, gym.spaces.Dict) and isinstance(part, dict) and set(space.spaces) <= set(part):
            found = [columns(sub, part[key]) for key, sub in space.spaces.items()]
        elif isinstance(space, gym.spaces.Tuple) and isinstance(part, tuple) and len(part) == len(space.spaces):
            found = [columns(sub, p) for sub, p in zip(space.spaces, part)]
        elif isinstance(space, gym.spaces.Box) and np.shape(part) == (n, *space.shape):
            return [np.asarray(part, space.dtype).reshape(n, -1)]  # as gymnasium's flatten casts each entry
        else:
            return None
        return None if any(f is None for f in found) else [c for f in found for c in f]

    found = columns(packer._inner, values)
    if not found or not n:
        return None
    packed = np.concatenate(found, axis=1).astype(packer.space.dtype, copy=False)
    if all(np.array_equal(packed[i], packer(_row(values, i)), equal_nan=True) for i in {0, n // 2, n - 1}):
        return packed
    return None
