"""Serialise Gymnasium spaces to JSON and compare them (checkpoint metadata)."""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from canter.envs.masks import MaskedBox
from canter.envs.packing import Layout, PackedBox, describe_entry, packed_layout
from canter.errors import CanterError

_MAX_BOUNDS = 4096


def _bound(arr: np.ndarray) -> Any:
    """JSON-safe bounds (infinities as +-1e308): a nested list, one number when a large array is
    uniform, or for a large non-uniform one its runs of equal values, ``{"runs": [[value, count], ...]}``
    in flat order (a flattened ``Dict``'s entries are such runs)."""
    arr = np.asarray(arr, dtype=np.float64)
    arr = np.where(np.isfinite(arr), arr, np.sign(arr) * 1e308)
    if arr.size <= _MAX_BOUNDS:
        return arr.tolist()
    flat = arr.reshape(-1)
    if np.all(flat == flat[0]):
        return float(flat[0])
    starts = np.flatnonzero(np.r_[True, flat[1:] != flat[:-1]])
    counts = np.diff(np.r_[starts, flat.size])
    return {"runs": [[float(flat[i]), int(c)] for i, c in zip(starts, counts)]}


def _unbound(value: Any, shape: tuple[int, ...]) -> np.ndarray:
    """Inverse of :func:`_bound` (infinities still as +-1e308), as a float64 array of ``shape``."""
    if isinstance(value, dict):
        runs = np.asarray(value["runs"], dtype=np.float64).reshape(-1, 2)
        return np.repeat(runs[:, 0], runs[:, 1].astype(np.int64)).reshape(shape)
    return np.broadcast_to(np.asarray(value, dtype=np.float64), shape)


def _infinities(values: np.ndarray) -> np.ndarray:
    """The +-1e308 that :func:`_bound` writes for infinite bounds as infinities again. Only those: a finite float64
    bound beyond them (``np.finfo(np.float64).max``, a common stand-in for no bound) stays itself; read as infinite,
    the run's own env no longer matched its checkpoint (``canter eval`` and ``--resume`` refused it)."""
    return np.where(values == -1e308, -np.inf, np.where(values == 1e308, np.inf, values))


def space_to_dict(space: gym.Space) -> dict[str, Any]:
    """A JSON-safe description of ``space``."""
    if isinstance(space, gym.spaces.Discrete):
        return {"type": "Discrete", "n": int(space.n), "start": int(space.start)}
    if isinstance(space, PackedBox):  # pixels are 0-255: the bounds of the other columns only
        cols = _vector_columns(space)
        d = {"type": "Box", "shape": list(space.shape), "dtype": str(space.dtype),
             "images": [[o, list(shape)] for o, shape in space.images],
             "low": _bound(space.low[cols]), "high": _bound(space.high[cols])}
        from canter.models.cnn import former_image_layout

        layouts = packed_image_layouts(space)
        if any(layout != former_image_layout(shape) for layout, (_, shape) in zip(layouts, space.images)) \
                or getattr(space, "given_image_layouts", None):
            d["image_layouts"] = layouts  # some image is read otherwise than until 2026-11-27, or as its env marked it
        return _with_layout(d, space)
    if isinstance(space, gym.spaces.Box):
        d = {
            "type": "Box", "shape": list(space.shape), "dtype": str(space.dtype),
            "low": _bound(space.low), "high": _bound(space.high),
        }
        if isinstance(space, MaskedBox):  # the last entries are an action mask (canter.envs.masks)
            d["action_mask"] = space.mask_width
        else:
            _add_image_layout(d, space)
        return _with_layout(d, space)
    if isinstance(space, gym.spaces.MultiDiscrete):
        d: dict[str, Any] = {"type": "MultiDiscrete", "nvec": space.nvec.tolist()}
        if space.dtype != np.int64:  # written only where they differ from the defaults, which older
            d["dtype"] = str(space.dtype)  # checkpoints (without them) had
        if space.start.any():
            d["start"] = space.start.tolist()
        return d
    if isinstance(space, gym.spaces.MultiBinary):
        return {"type": "MultiBinary", "n": np.asarray(space.n).tolist()}
    if isinstance(space, gym.spaces.Dict):  # a multi-policy agent's spaces, policy -> space
        return {"type": "Dict", "spaces": {k: space_to_dict(v) for k, v in space.spaces.items()}}
    raise CanterError(f"unsupported space {space!r}")


def _add_image_layout(d: dict[str, Any], space: gym.spaces.Box) -> None:
    """``d["image_layout"]`` (``"none"``: not an image) for an image Box read otherwise until 2026-11-27
    (:func:`canter.models.cnn.former_image_layout`): a description without it is such a space as it was read then.
    Also for one whose env gave a layout its shape alone does not (:func:`canter.models.cnn.mark_image_layout`)."""
    from canter.models.cnn import former_image_layout, image_layout

    layout = image_layout(space)
    by_shape = image_layout(gym.spaces.Box(0, 255, space.shape, np.uint8)) if _pixel_bounds(space) else None
    given = getattr(space, "given_image_layout", None) is not None and layout != by_shape
    if (layout is not None or _pixel_bounds(space)) and (layout != former_image_layout(space.shape) or given):
        d["image_layout"] = layout or "none"


def packed_image_layouts(space: PackedBox) -> list[str | None]:
    """How the ``multi`` encoder reads each image of ``space``: its ``saved_image_layouts`` where a checkpoint's
    description keeps an earlier reading (:func:`_saved_image_layouts`), its ``given_image_layouts`` where its env
    marked the entry (:func:`canter.models.cnn.mark_image_layout`), else by its shape."""
    from canter.models.cnn import shape_image_layout

    saved = getattr(space, "saved_image_layouts", {})
    given = getattr(space, "given_image_layouts", {})
    return [saved.get(o) or given.get(o) or shape_image_layout(shape) for o, shape in space.images]


def _saved_image_layouts(space: PackedBox, d: dict[str, Any]) -> PackedBox:
    """``space`` with ``saved_image_layouts`` (offset -> layout) for the images a description without
    ``image_layouts`` (written until 2026-11-27) reads otherwise than canter now does, and ``given_image_layouts``
    for those its ``image_layouts`` records otherwise than their shape reads: entries marked by their env
    (:func:`canter.models.cnn.mark_image_layout`; a description written since 2026-11-27 and before marks were
    kept in packed spaces, 2026-11-28, records the shape's reading, which its model was trained with)."""
    from canter.models.cnn import former_image_layout, shape_image_layout

    given = d.get("image_layouts")
    saved, marked = {}, {}
    for i, (o, shape) in enumerate(space.images):
        recorded = isinstance(given, list) and i < len(given)
        layout = given[i] if recorded else former_image_layout(shape)
        if layout is not None and layout not in _LAYOUTS:
            raise CanterError(f"unknown image_layouts entry {layout!r}: {', '.join(_LAYOUTS)}"
                              f"{_layout_hint(layout, _LAYOUTS)}")  # 'hcw' was the list alone
        if layout is not None and layout != shape_image_layout(shape):
            (marked if recorded else saved)[o] = layout
    if saved:
        space.saved_image_layouts = saved  # type: ignore[attr-defined]
    space.given_image_layouts = marked
    return space


#: the layouts a description may record for an image (:func:`canter.models.cnn.image_layout`)
_LAYOUTS = ("hw", "hwc", "chw", "shwc", "schw")


def _layout_hint(layout: Any, choices: tuple[str, ...]) -> str:
    """``"; did you mean 'hwc' or 'chw'?"`` for an unknown saved layout (an ``image_layouts`` entry, or a Box's
    ``image_layout``): of ``choices``, the one spelt otherwise in case (``chw`` for ``CHW``), else the closest of
    those with as many axes (``hwc`` or ``chw`` for ``hcw``; ``hw`` looks closer, but reads another rank), else the
    closest of all; ``""`` for none close, or a layout that is no string."""
    from canter.errors import closest

    if not isinstance(layout, str):
        return ""
    near = ([x for x in choices if x == layout.strip().lower()]
            or closest(layout, [x for x in choices if len(x) == len(layout)], n=2) or closest(layout, choices, n=1))
    return "; did you mean " + " or ".join(f"'{n}'" for n in near) + "?" if near else ""


def _pixel_bounds(space: gym.spaces.Box) -> bool:
    return space.dtype == np.uint8 and bool(np.all(space.low == 0) and np.all(space.high == 255))


def _saved_image_layout(space: gym.spaces.Box, d: dict[str, Any]) -> gym.spaces.Box:
    """``space`` read as :func:`_add_image_layout` recorded it: a uint8 0-255 Box described without
    ``image_layout`` keeps the layout its model was trained with where canter now reads it otherwise; one described
    with an ``image_layout`` that its shape does not give had it from its env (the Atari envs' frame stacks)."""
    from canter.models.cnn import former_image_layout, image_layout, mark_image_layout

    if not _pixel_bounds(space):
        return space
    saved = d.get("image_layout")
    if saved is None:
        saved = former_image_layout(space.shape) or "none"
    if saved not in (*_LAYOUTS, "none"):  # 'hcw' was the list alone, as an image_layouts entry was
        raise CanterError(f"unknown image_layout {saved!r}: {', '.join(_LAYOUTS)} or none"
                          f"{_layout_hint(saved, (*_LAYOUTS, 'none'))}")
    if saved == (image_layout(space) or "none"):
        return space
    if "image_layout" in d:  # written as the run read it, where its env gave the layout (cnn.mark_image_layout)
        return mark_image_layout(space, "" if saved == "none" else saved)
    space.saved_image_layout = "" if saved == "none" else saved  # type: ignore[attr-defined]
    return space


def _with_layout(d: dict[str, Any], space: gym.Space) -> dict[str, Any]:
    """``d`` with the structure packed into ``space`` (``"layout"``), where it has one
    (:func:`canter.envs.packing.packed_layout`): a packed Box's width and bounds alone do not tell a
    ``Dict`` from a ``Tuple`` of the same entries, nor entries of other sizes apart."""
    layout = packed_layout(space)
    if layout is not None:
        d["layout"] = [dict(entry) for entry in layout]
    return d


def _layout_from(value: Any) -> Layout:
    """A ``"layout"`` read from a description, checked to be a list of entries."""
    if not isinstance(value, list) or not all(
            isinstance(e, dict) and isinstance(e.get("path"), str) and isinstance(e.get("kind"), str) for e in value):
        raise CanterError(f"a packed layout is a list of entries with a path and a kind, got {value!r:.100}")
    return tuple(dict(e) for e in value)


def space_from_dict(d: dict[str, Any]) -> gym.Space:
    """Inverse of :func:`space_to_dict`."""
    space = _space_from_dict(d)
    if d.get("type") == "Box" and "layout" in d:
        space.packed_layout = _layout_from(d["layout"])  # type: ignore[attr-defined]
    return space


def _space_from_dict(d: dict[str, Any]) -> gym.Space:
    kind = d.get("type")
    if kind == "Discrete":
        return gym.spaces.Discrete(d["n"], start=d.get("start", 0))
    if kind == "Box" and "images" in d:
        return _saved_image_layouts(_packed_from_dict(d, np.dtype(d["dtype"])), d)
    if kind == "Box":
        shape = tuple(d["shape"])
        low, high = _unbound(d["low"], shape), _unbound(d["high"], shape)
        dtype = np.dtype(d["dtype"])
        if np.issubdtype(dtype, np.floating):
            info = np.finfo(dtype)
            low, high = np.clip(low, -np.inf if (low < info.min).any() else info.min, None), high
            low, high = _infinities(low), _infinities(high)
        elif np.issubdtype(dtype, np.integer):
            low, high = _integers(low, dtype), _integers(high, dtype)
        if d.get("action_mask"):
            return MaskedBox(low, high, int(d["action_mask"]))
        return _saved_image_layout(gym.spaces.Box(low=low.astype(dtype), high=high.astype(dtype), shape=shape,
                                                  dtype=dtype), d)
    if kind == "MultiDiscrete":
        return gym.spaces.MultiDiscrete(d["nvec"], dtype=np.dtype(d.get("dtype", "int64")), start=d.get("start"))
    if kind == "MultiBinary":
        return gym.spaces.MultiBinary(d["n"])
    if kind == "Dict":
        return gym.spaces.Dict({str(k): space_from_dict(v) for k, v in d["spaces"].items()})
    raise CanterError(f"unsupported space description {d!r}")


def _integers(bounds: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Float64 bounds as integers of ``dtype``: the dtype's extremes stay its extremes (int64's
    2**63 - 1 is 2**63 as a float, which ``astype`` wrapped round to -2**63)."""
    info = np.iinfo(dtype)
    top, bottom = bounds >= float(info.max), bounds <= float(info.min)
    out = np.where(top | bottom, 0.0, bounds).astype(dtype)
    out[top], out[bottom] = info.max, info.min
    return out


def _vector_columns(space: PackedBox) -> np.ndarray:
    """The indices of a packed vector's non-image columns (none when every entry is an image)."""
    return np.concatenate([np.arange(c.start, c.stop, dtype=np.int64) for c in space.vector_slices()]
                          + [np.zeros(0, np.int64)])


def _packed_from_dict(d: dict[str, Any], dtype: np.dtype) -> PackedBox:
    """A :class:`PackedBox` from its description (pixel bounds 0-255, the rest's bounds stored)."""
    n, images = int(d["shape"][0]), [(int(o), tuple(shape)) for o, shape in d["images"]]
    low, high = np.zeros(n, np.float64), np.full(n, 255.0)
    probe = PackedBox(low, high, dtype, images)
    cols = _vector_columns(probe)
    for arr, key in ((low, "low"), (high, "high")):
        vals = _unbound(d[key], cols.shape)
        arr[cols] = _infinities(vals)
    return PackedBox(low, high, dtype, images)


def action_nvec(space: gym.Space) -> np.ndarray | None:
    """The category count of each entry of a factored discrete action space, flattened: MultiDiscrete's
    ``nvec``, 2 per entry of a MultiBinary (each entry a two-way categorical, SB3's Bernoulli in another
    parameterisation); None for any other space."""
    if isinstance(space, gym.spaces.MultiDiscrete):
        return np.asarray(space.nvec, np.int64).reshape(-1)
    if isinstance(space, gym.spaces.MultiBinary):
        return np.full(int(np.prod(space.shape)), 2, np.int64)
    return None


def describe_space(space: gym.Space) -> str:
    """A short one-line description: type, shape and dtype (never the full bounds); a discrete space's
    categories and ``start``."""
    if isinstance(space, gym.spaces.Discrete):
        return f"Discrete({space.n})" if not space.start else f"Discrete({space.n}, start={space.start})"
    if isinstance(space, gym.spaces.MultiDiscrete):  # the categories, which two such spaces differ by
        start = f", start={space.start.tolist()}" if space.start.any() else ""
        dtype = f", {space.dtype}" if space.dtype != np.int64 else ""
        return f"MultiDiscrete({space.nvec.tolist()}{start}{dtype})"
    if isinstance(space, gym.spaces.MultiBinary):
        return f"MultiBinary({np.asarray(space.n).tolist()})"
    if isinstance(space, MaskedBox):
        return f"Box(shape={space.observation_space().shape}, {space.dtype}) with an action mask of {space.mask_width}"
    if isinstance(space, PackedBox):
        return (f"Box(shape={tuple(space.shape)}, {space.dtype}) packing images "
                f"{', '.join(str(s) for _, s in space.images)} and {sum(c.stop - c.start for c in space.vector_slices())} other values")
    if isinstance(space, gym.spaces.Box):
        return f"Box(shape={tuple(space.shape)}, {space.dtype})"
    if isinstance(space, gym.spaces.Dict):
        return "{" + ", ".join(f"{k}: {describe_space(v)}" for k, v in space.spaces.items()) + "}"
    if isinstance(space, gym.spaces.Tuple):  # an action space no algorithm takes: its entries, not "shape=None"
        return f"Tuple({', '.join(describe_space(s) for s in space.spaces)})"
    shape = getattr(space, "shape", None)
    return type(space).__name__ if shape is None else f"{type(space).__name__}(shape={shape})"


def bounds_difference(trained: gym.Space, other: gym.Space) -> str:
    """The first bound in which two Box spaces that :func:`describe_space` cannot tell apart (same shape
    and dtype) differ, as ``"high[0] 3.0 vs 5.0"`` (``trained``'s value first), for a mismatch message
    that would otherwise show the same description twice; ``""`` for any other pair."""
    if not (isinstance(trained, gym.spaces.Box) and isinstance(other, gym.spaces.Box)
            and describe_space(trained) == describe_space(other)):
        return ""
    for key in ("low", "high"):
        a, b = np.asarray(getattr(trained, key)).reshape(-1), np.asarray(getattr(other, key)).reshape(-1)
        differ = np.flatnonzero(~((a == b) | (np.isnan(a) & np.isnan(b))))
        if differ.size:
            i = int(differ[0])
            where = f"{key}[{i}]" if a.size > 1 or trained.shape else key
            return f"{where} {a[i].item()!r} vs {b[i].item()!r}"
    return ""


def _comparable(a: Any, b: Any) -> tuple[Any, Any]:
    """Two space descriptions without their ``"layout"`` where only one has it (a checkpoint written
    before layouts were recorded compares by type, shape and bounds, as it did), and without their
    ``"image_layout"`` (how a model reads the same space: an env's space matches a checkpoint's that an
    earlier canter read otherwise, :func:`_saved_image_layout`)."""
    if not (isinstance(a, dict) and isinstance(b, dict)):
        return a, b
    a, b = ({k: v for k, v in d.items() if k not in ("image_layout", "image_layouts")} for d in (a, b))
    if a.get("type") == b.get("type") == "Dict" and isinstance(a.get("spaces"), dict) and isinstance(b.get("spaces"), dict):
        sa, sb = dict(a["spaces"]), dict(b["spaces"])  # a multi-policy agent's spaces, policy -> space
        for k in sa.keys() & sb.keys():
            sa[k], sb[k] = _comparable(sa[k], sb[k])
        return {**a, "spaces": sa}, {**b, "spaces": sb}
    if ("layout" in a) != ("layout" in b):
        return ({k: v for k, v in a.items() if k != "layout"}, {k: v for k, v in b.items() if k != "layout"})
    return a, b


def spaces_match(a: gym.Space, b: gym.Space) -> bool:
    """True when two spaces have the same type, shape and bounds and, where both record one, the same
    structure packed into them (:func:`canter.envs.packing.packed_layout`)."""
    x, y = _comparable(space_to_dict(a), space_to_dict(b))
    return x == y or _same_packing(a, b)


def read_alike(a: gym.Space, b: gym.Space) -> bool:
    """True when two matching spaces (:func:`spaces_match`) are also packed alike: the same entries are images
    in both (a checkpoint's packing from before 2026-11-27 may read one as a vector)."""
    x, y = _comparable(space_to_dict(a), space_to_dict(b))
    return x == y


def _same_packing(a: gym.Space, b: gym.Space) -> bool:
    """Two packed spaces of the same entries and bounds whose image lists differ only in what canter reads as an
    image (an entry such as ``[40, 40, 6]`` was a vector until 2026-11-27)."""
    if not (isinstance(a, PackedBox) or isinstance(b, PackedBox)):  # one was packed without images, perhaps
        return False
    if not (isinstance(a, gym.spaces.Box) and isinstance(b, gym.spaces.Box)) or a.shape != b.shape or a.dtype != b.dtype:
        return False
    la, lb = packed_layout(a), packed_layout(b)
    return (la is not None and lb is not None and list(la) == list(lb) and np.array_equal(a.low, b.low)
            and np.array_equal(a.high, b.high))


def layout_difference(trained: gym.Space, other: gym.Space) -> str:
    """The first entry in which the structures packed into two spaces differ, as
    ``"img: Box(8, 8, 1) vs [0]: Box(8, 8, 1)"`` (``trained``'s first); ``""`` where they do not, or
    where either space records none."""
    a, b = packed_layout(trained), packed_layout(other)
    if a is None or b is None or list(a) == list(b):
        return ""
    for i in range(max(len(a), len(b))):
        x, y = (a[i] if i < len(a) else None), (b[i] if i < len(b) else None)
        if x != y:
            return f"{describe_entry(x) if x else 'nothing'} vs {describe_entry(y) if y else 'nothing'}"
    return ""


def joint_alive_mask_note(trained: gym.Space, env: gym.Space, actions: gym.Space | None = None) -> str:
    """``""``, or where ``trained`` is a joint observation (QMIX's ``[k + 1, w]``) without an action mask and ``env``
    the same with a mask after it, of one column per action of ``actions`` (the joint ``MultiDiscrete`` of ``k``
    agents: a centralised critic's ``[2, w]`` of an env that gained masks is none), why: since 2026-11-28 the joint
    view of an env without action masks adds an automatic alive mask
    (:class:`~canter.envs.multiagent_views.JointParallelEnv`), so a run saved before cannot act in it."""
    nvec = getattr(actions, "nvec", None)
    if (isinstance(trained, gym.spaces.Box) and not isinstance(trained, MaskedBox) and isinstance(env, MaskedBox)
            and isinstance(actions, gym.spaces.MultiDiscrete) and nvec.ndim == 1 and (nvec == env.mask_width).all()
            and len(trained.shape) == 2 and len(env.shape) == 2 and env.shape[0] == trained.shape[0] == len(nvec) + 1
            and env.shape[1] == trained.shape[1] + env.mask_width):
        return ("; a QMIX run saved before 2026-11-28 on an env without action masks: its joint observations lack "
                "the alive mask canter adds now (an agent out of the episode takes action 0), so train it again")
    return ""


def spaces_mismatch(trained: tuple[gym.Space, gym.Space], env: tuple[gym.Space, gym.Space],
                    held: str = "trained on", env_name: str = "env") -> str | None:
    """None when the (observation, action) spaces ``env`` has match ``trained``'s, else
    ``"trained on OBS -> ACT, env has OBS -> ACT"`` with, where the descriptions alone are the same,
    ``"; bounds differ: action high[0] 3.0 vs 5.0"``. ``held`` and ``env_name`` replace ``"trained on"``
    and ``"env"`` (a dataset ``"holds"`` its spaces)."""
    if all(spaces_match(a, b) for a, b in zip(trained, env)):
        return None
    layout = layout_difference(trained[0], env[0])
    notes = [f"{name} {diff}" for name, a, b in zip(("observation", "action"), trained, env)
             if (diff := bounds_difference(a, b))]
    return (f"{held} {describe_space(trained[0])} -> {describe_space(trained[1])}, {env_name} has "
            f"{describe_space(env[0])} -> {describe_space(env[1])}"
            + (f"; packed observation entries differ: {layout}" if layout else "")
            + (f"; bounds differ: {', '.join(notes)}" if notes else "") + joint_alive_mask_note(trained[0], env[0], env[1]))



def check_agent_spaces(agent: Any, env_id: str, observation_space: gym.Space, action_space: gym.Space) -> None:
    """Refuse in one line (as ``canter eval`` and ``play`` say it) an env whose (observation, action) spaces are not
    those ``agent`` was trained on: ``canter.evaluate`` and :func:`canter.play.play` given another env id or
    ``env_kwargs`` acted in it without a word (a policy of 3 actions in an env of 5). An agent without spaces (any
    object with ``predict``) is not checked."""
    trained = (getattr(agent, "observation_space", None), getattr(agent, "action_space", None))
    if trained[0] is None or trained[1] is None:
        return
    mismatch = spaces_mismatch(trained, (observation_space, action_space))
    if mismatch:
        raise CanterError(f"checkpoint spaces do not match env '{env_id}': {mismatch}")
