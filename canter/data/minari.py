"""Local Minari datasets (the ``offline`` extra): read one as a :class:`~canter.data.dataset.TransitionDataset`
(``--dataset minari:ID``) and write one from it (``canter collect --out minari:ID``)."""
from __future__ import annotations

import inspect
import shutil
import warnings
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from canter.ale import registered_spec
from canter.errors import CanterError


def write_minari(dataset: Any, dataset_id: str) -> int:
    """Write ``dataset``'s complete episodes as the local Minari dataset ``dataset_id`` (Arrow format) and
    return how many transitions it holds (:meth:`TransitionDataset.to_minari`)."""
    from canter.errors import require

    minari = require("minari", "offline", "a Minari dataset")
    from minari.data_collector import EpisodeBuffer

    ends = np.flatnonzero(dataset.terminated | dataset.truncated)
    if not len(ends):
        raise CanterError("the dataset holds no complete episode to write to Minari")
    inside = np.setdiff1d(np.arange(ends[-1]), ends)  # each such row's next row continues its episode
    if not np.array_equal(dataset.next_obs[inside], dataset.obs[inside + 1]):
        raise CanterError("the dataset's transitions are not stored in episode order; Minari needs whole episodes")
    buffers, start = [], 0
    for i, end in enumerate(ends.tolist()):
        rows = slice(start, end + 1)
        buffers.append(EpisodeBuffer(
            id=i, observations=np.concatenate([dataset.obs[rows], dataset.next_obs[end:end + 1]]),
            actions=dataset.actions[rows], rewards=dataset.rewards[rows], terminations=dataset.terminated[rows],
            truncations=dataset.truncated[rows], infos={}))
        start = end + 1
    check_minari_id(dataset_id)
    env = dataset.env_spec()
    from minari.storage import get_dataset_path

    from canter.run_dirs import outermost_missing

    path = Path(get_dataset_path(dataset_id))
    made = outermost_missing(path)
    # the data's own spaces (an Atari dataset holds preprocessed [4, 84, 84] stacks, not the game's RGB
    # screens that the env spec's space describes), and image frames stored as they are: Minari JPEG-encodes
    # image observations by default, which changed every frame of an image dataset (a round trip moved
    # pixels by up to 244) and failed on channel-first stacks
    lossless = {"jpeg_encoding": False} if "jpeg_encoding" in inspect.signature(
        minari.create_dataset_from_buffers).parameters else {}  # Minari before it encoded nothing
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # Minari asks for an author, a description, ...
        try:
            algorithm = str(dataset.info.get("algorithm") or dataset.info.get("policy") or "unknown")
            minari.create_dataset_from_buffers(dataset_id, buffers, env=env, data_format="arrow",
                                               observation_space=dataset.observation_space,
                                               action_space=dataset.action_space, algorithm_name=algorithm,
                                               **lossless)
        except BaseException as exc:  # an existing id, an env Minari cannot describe, ..., or a Ctrl-C
            # during the write (most of a collect's time: ~40 s for 20k CartPole transitions): nothing
            # half-written stays, which would hold no episode and block the id
            if made is not None:
                shutil.rmtree(made, ignore_errors=True)
            if not isinstance(exc, Exception):
                raise
            raise CanterError(f"cannot write Minari dataset '{dataset_id}': {exc}") from None
    return int(sum(len(b.rewards) for b in buffers))


def _load_minari(dataset_id: str, missing_ok: bool = False) -> Any:
    """A local Minari dataset (its arrays are read lazily); None if it is missing and ``missing_ok``."""
    from canter.errors import require

    minari = require("minari", "offline", "a Minari dataset")
    check_minari_id(dataset_id)
    try:
        return minari.load_dataset(dataset_id)
    except FileNotFoundError as exc:
        if missing_ok:
            return None
        raise CanterError(f"no local Minari dataset '{dataset_id}' ({exc}); download it first: minari download "
                          f"{dataset_id}") from None
    except Exception as exc:  # minari raises ValueError and others for malformed ids and files
        raise CanterError(f"cannot read Minari dataset '{dataset_id}': {exc}") from None


def check_minari_id(dataset_id: str) -> None:
    """Refuse a malformed Minari dataset id in one line (Minari raises ValueError or TypeError)."""
    from canter.errors import require

    require("minari", "offline", "a Minari dataset")
    from minari.dataset.minari_dataset import parse_dataset_id

    try:
        parse_dataset_id(dataset_id)
    except Exception:  # noqa: BLE001 - ValueError, or TypeError for an id without a version
        raise CanterError(f"'{dataset_id}' is not a Minari dataset id: NAMESPACE/NAME-vN (the namespace is "
                          f"optional), e.g. cartpole/random-v0") from None


def minari_exists(dataset_id: str) -> bool:
    """Whether the local Minari store holds ``dataset_id`` (the ``offline`` extra is required)."""
    return _load_minari(dataset_id, missing_ok=True) is not None


def _minari_spec(data: Any) -> Any:
    """The env spec a Minari dataset evaluates on: its eval env, else the env it was collected on."""
    eval_spec = data.storage.metadata.get("eval_env_spec")  # a JSON EnvSpec, when the dataset names one
    spec = gym.envs.registration.EnvSpec.from_json(eval_spec) if isinstance(eval_spec, str) else data.spec.env_spec
    if spec is None:
        raise CanterError(f"Minari dataset '{data.spec.dataset_id}' records no env; canter evaluates on one")
    return spec


def _spec_kwargs(spec: Any) -> dict[str, Any]:
    """What a recorded env spec sets beyond its id's registered defaults (``gymnasium.make`` kwargs)."""
    try:
        registered = registered_spec(spec.id)
    except gym.error.Error:  # an env this machine does not register: everything the spec says
        return {**spec.kwargs, "max_episode_steps": spec.max_episode_steps}
    kwargs = {k: v for k, v in spec.kwargs.items() if registered.kwargs.get(k, object()) != v}
    if spec.max_episode_steps != registered.max_episode_steps:
        kwargs["max_episode_steps"] = spec.max_episode_steps
    return kwargs


def warn_dropped_wrappers(what: str, env_id: str, wrappers: list[str]) -> None:
    """Warn in one line that ``what`` (a dataset) records its env ``env_id`` wrapped in ``wrappers`` (a Minari env
    spec's ``additional_wrappers``), which the env canter makes from the id and kwargs does not apply."""
    from canter.errors import CanterWarning, warn

    warn(CanterWarning(f"{what} records its env {env_id} wrapped in {', '.join(wrappers)}; canter evaluates on "
                       f"{env_id} without them (the env's own observations, actions and rewards)"))


def from_minari(dataset_id: str) -> Any:
    """A local Minari dataset as a :class:`TransitionDataset`: each episode's ``T + 1`` observations
    become ``T`` (obs, next obs) pairs. Box or Discrete actions; Box, Discrete or structured observations (packed)."""
    from canter.data.dataset import ARRAYS, MINARI_PREFIX, TransitionDataset
    from canter.envs.packing import needs_packing

    data = _load_minari(dataset_id)
    obs_space, act_space = data.observation_space, data.action_space
    structured = needs_packing(obs_space)  # Dict (goal envs: D4RL's mazes), Tuple, ...: packed as canter's env packs them
    for what, space in (("observation", obs_space), ("action", act_space)):
        if not isinstance(space, (gym.spaces.Box, gym.spaces.Discrete)) and not (what == "observation" and structured):
            raise CanterError(f"Minari dataset '{dataset_id}' has a {type(space).__name__} {what} space; canter "
                              f"learns offline from Box or Discrete {what}s" + (
                                  ", and Dict, Tuple, MultiBinary or MultiDiscrete observations" if what == "observation" else ""))
    parts: dict[str, list[Any]] = {name: [] for name in ARRAYS}
    returns = []
    for episode in data.iterate_episodes():
        observations = _tree(np.asarray, episode.observations)
        parts["obs"].append(_tree(lambda x: x[:-1], observations))
        parts["next_obs"].append(_tree(lambda x: x[1:], observations))
        parts["actions"].append(np.asarray(episode.actions, dtype=act_space.dtype).reshape(-1, *act_space.shape))
        parts["rewards"].append(np.asarray(episode.rewards, dtype=np.float32))
        parts["terminated"].append(np.asarray(episode.terminations, dtype=bool))
        parts["truncated"].append(np.asarray(episode.truncations, dtype=bool))
        returns.append(float(np.sum(episode.rewards)))
    if not returns:
        raise CanterError(f"Minari dataset '{dataset_id}' holds no episodes")
    arrays = {name: _tree(lambda *xs: np.concatenate(xs), *chunks) for name, chunks in parts.items()}
    if not structured:  # a structured space's entries are cast as they are packed
        arrays["obs"] = arrays["obs"].astype(obs_space.dtype, copy=False)
        arrays["next_obs"] = arrays["next_obs"].astype(obs_space.dtype, copy=False)
    info = {"source": MINARI_PREFIX + dataset_id, "algorithm": data.storage.metadata.get("algorithm_name"), "episodes": len(returns),
            "mean_return": float(np.mean(returns))}
    spec = _minari_spec(data)
    wrappers = [w.name for w in getattr(spec, "additional_wrappers", None) or ()]
    if wrappers:  # canter makes the env by its id and kwargs: they were dropped without a word (a ClipReward
        # dataset evaluated on unclipped rewards)
        info["env_wrappers"] = wrappers
        warn_dropped_wrappers(f"Minari dataset '{dataset_id}'", str(spec.id), wrappers)
    try:
        return TransitionDataset(**arrays, env_id=str(spec.id), env_kwargs=_spec_kwargs(spec),
                                 observation_space=obs_space, action_space=act_space, info=info)
    except CanterError as exc:  # values the dataset refuses (NaN, a Discrete action outside the space): say where
        raise CanterError(f"{exc} (Minari dataset '{dataset_id}')") from None


def _tree(fn: Any, *trees: Any) -> Any:
    """``fn`` applied leaf by leaf to trees of one structure (Minari keeps a Dict's observations as a dict of
    arrays, a Tuple's as a tuple of them; a leaf is an array)."""
    first = trees[0]
    if isinstance(first, dict):
        return {k: _tree(fn, *(t[k] for t in trees)) for k in first}
    if isinstance(first, tuple):
        return tuple(_tree(fn, *(t[i] for t in trees)) for i in range(len(first)))
    return fn(*trees)
