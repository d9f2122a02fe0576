"""Checks of the values a :class:`~canter.data.dataset.TransitionDataset` is built from (one-line errors)."""
from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from canter.errors import CanterError


def numeric_array(values: Any, name: str) -> np.ndarray:
    """``values`` (an array, or a list of rows) as an array of numbers or booleans, else a one-line error."""
    try:
        array = np.asarray(values)
    except (ValueError, TypeError) as exc:  # rows of different lengths
        raise CanterError(f"dataset {name} are not an array of numbers ({exc})") from None
    if not (np.issubdtype(array.dtype, np.number) or array.dtype == bool):
        raise CanterError(f"dataset {name} hold values of dtype {array.dtype}; a dataset holds numbers (rows of one "
                          f"shape)")
    return array


def json_info(info: dict[str, Any]) -> dict[str, Any]:
    """``info`` as JSON values: NumPy scalars and arrays (``np.float32(0.5)``, a step count from an array) become
    Python numbers and lists; anything else that JSON cannot hold is a one-line :class:`CanterError` (it was
    ``json``'s TypeError traceback, with nothing saved)."""
    def plain(value: Any) -> Any:
        if isinstance(value, (np.generic, np.ndarray)):
            return value.tolist()
        raise TypeError(f"dataset info holds {value!r:.60} (type {type(value).__name__}); it is saved as JSON: use "
                        f"strings, numbers, lists and mappings")

    try:
        return json.loads(json.dumps(info, default=plain, allow_nan=True))
    except (TypeError, ValueError) as exc:
        raise CanterError(str(exc)) from None


def check_discrete(values: np.ndarray, space: gym.Space, name: str, what: str, how: str = "are ") -> None:
    """Refuse, in one line, ``values`` outside a Discrete ``space`` (not integers from ``start`` to
    ``start + n - 1``), naming the first row; any other space is not checked."""
    if not isinstance(space, gym.spaces.Discrete):
        return
    start, n = int(space.start), int(space.n)
    values = np.asarray(values)
    bad = np.flatnonzero((values < start) | (values >= start + n) | (values != np.round(values)))
    if len(bad):
        raise CanterError(f"dataset {name} {values[bad[0]].item()} (row {bad[0]}, one of {len(bad)}) is not in the "
                          f"{what} space {space}: Discrete {what}s {how}integers from {start} to {start + n - 1}")


def metadata_problem(meta: dict[str, Any]) -> str | None:
    """What is wrong with a dataset's JSON metadata, where its env id is not a non-empty string or its
    ``env_kwargs`` or ``info`` are not mappings (they were a ValueError or TypeError traceback when the run's
    config took them); None where nothing is."""
    env = meta.get("env")
    if not isinstance(env, str) or not env.strip():
        return f"its JSON holds no env id ('env': {env!r})"
    for key in ("env_kwargs", "info"):
        value = meta.get(key)
        if value is not None and not isinstance(value, dict):
            return f"its JSON's '{key}' is {value!r:.60} ({type(value).__name__}), not a mapping"
    count = meta.get("transitions")  # compared with the arrays when they are loaded
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
        return f"its JSON's 'transitions' is {count!r:.60}, not a whole number of transitions >= 1"
    return None


def not_dataset_problem(path: Any, meta: dict[str, Any]) -> str:
    """Why the canter file pair ``path`` (its JSON ``meta``) is not a dataset: a checkpoint (no ``kind``: an agent or a
    run saved it), or a JSON whose ``kind`` is something else (edited, or another tool's), named as it is."""
    from canter.data.dataset import KIND

    kind = meta.get("kind")
    if kind is None:
        return f"'{path}' is a canter checkpoint, not a dataset (write one with canter collect)"
    return (f"'{path}' is not a canter dataset: its JSON's 'kind' is {kind!r:.60}, not '{KIND}' (was it edited? "
            f"restore it, or write the dataset again with canter collect)")


def check_flags(values: np.ndarray, name: str) -> np.ndarray:
    """A dataset's ``terminated`` or ``truncated`` column as booleans: booleans, or 0 and 1 in any dtype (d3rlpy's
    and D4RL's float columns); any other value (NaN, 0.5, -1) is refused in one line naming the first row (it
    became a set flag, silently: a NaN termination stopped the bootstrap)."""
    if values.dtype == bool:
        return values
    bad = np.flatnonzero((values != 0) & (values != 1))
    if len(bad):
        raise CanterError(f"dataset {name} {values[bad[0]].item()!r} (row {bad[0]}, one of {len(bad)}) is not a flag: "
                          f"{name} holds booleans, or 0 and 1")
    return values.astype(bool)


def replay_checkpoint(run_dir: str | Path) -> Path:
    """The checkpoint whose replay buffer :func:`~canter.data.dataset_replay.from_replay` reads: the ``last`` of a run
    directory (or of its ``checkpoints`` folder), or the checkpoint ``run_dir`` names."""
    from canter.checkpoint import find_checkpoint

    p = Path(run_dir)
    if not p.is_dir():
        return find_checkpoint(p)  # a checkpoint path, or a clear error
    folder = p / "checkpoints" if (p / "checkpoints").is_dir() else p
    if not any((folder / f"last{ext}").exists() for ext in (".json", ".safetensors")):
        # a clear error for a directory that is not a run or has no checkpoint yet; not where step-N checkpoints
        # are left, which find_checkpoint names to pass (they keep no replay buffer)
        if not any(folder.glob("step-*.safetensors")):
            find_checkpoint(p)
        raise CanterError(f"run '{run_dir}' has no checkpoints/last, the checkpoint that keeps the replay buffer "
                          f"(its best and step-N checkpoints keep none)")
    return folder / "last"


def missing_replay_error(run_dir: Any, base: Any, state: dict[str, Any], meta: dict[str, Any]) -> CanterError:
    """Why :func:`~canter.data.dataset.from_replay` finds no replay buffer in checkpoint ``base`` (its ``state`` and
    ``meta``): not a run's ``last``, an ACER run (a replay of whole segments) or a run that keeps none."""
    if base.name != "last":
        return CanterError(f"checkpoint '{base}' holds no replay buffer: only a run's checkpoints/last keeps one "
                           f"(give the run directory)")
    from canter.config_values import _a

    algo = meta.get("algorithm")
    a_run = _a(f"{algo} run") if isinstance(algo, str) and algo else "this run"  # 'an a2c run', not 'a a2c run'
    instead = f"collect with its policy instead: canter collect {shlex.quote(str(run_dir))} --out PATH"
    if "segment_replay" in (state.get("trainer") or {}):  # ACER: whole on-policy segments, for Retrace
        return CanterError(f"run '{run_dir}' is {a_run}, whose replay keeps whole rollout segments, not the "
                           f"transition replay buffer of an off-policy run that --from-replay reads; {instead}")
    return CanterError(f"run '{run_dir}' kept no replay buffer in checkpoints/last (off-policy runs that collect "
                       f"their own data do, such as dqn, sac or td3; {a_run} keeps none); {instead}")
