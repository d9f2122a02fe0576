"""What :func:`canter.api.resume_trainer` checks before it touches a run: the checkpoint's metadata has
the types resuming reads, and ``config.yaml`` was not edited since the run wrote it."""
from __future__ import annotations

import contextlib
import os
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from canter.errors import CanterError, CanterWarning, warn, shown


def _differing_key(found: Any, saved: Any, prefix: str = "") -> str | None:
    """The first (dotted) key at which ``found`` and ``saved`` differ, or None when they are equal."""
    if isinstance(found, dict) and isinstance(saved, dict):
        for key in [*saved, *(k for k in found if k not in saved)]:
            if key not in found or key not in saved:
                return f"{prefix}{key}"
            inner = _differing_key(found[key], saved[key], f"{prefix}{key}.")
            if inner is not None:
                return inner
        return None
    if isinstance(found, list) and isinstance(saved, list) and len(found) == len(saved):
        # entry by entry, so that an earlier canter's unquoted '1e-3' inside a list (a callback's arguments in
        # 'callbacks', env_kwargs' lists) counts as unchanged, as it does outside one; a difference names the list
        same = all(_differing_key(f, s) is None for f, s in zip(found, saved))
        return None if same else prefix.rstrip(".") or "the whole file"
    if found == saved:
        return None
    from canter.yaml_io import written_unquoted_as

    if isinstance(saved, str) and isinstance(found, float) and written_unquoted_as(saved) == found:
        return None  # '1e5', written unquoted by an earlier canter, reads back as a number now
    return prefix.rstrip(".") or "the whole file"


def as_numbers_now(callbacks: list[Any]) -> list[Any]:
    """A saved config's ``callbacks`` with each string argument of canter's own callbacks that an earlier canter
    read from YAML as a string but that reads as a number now (``min_delta: 1e-3``) as that number: they took
    such strings through ``float()``, and refuse a string now (a run saved before would not resume). A user's
    callback keeps what it was given."""
    from canter.yaml_io import written_unquoted_as

    def own(path: Any) -> bool:
        return isinstance(path, str) and path.split(":", 1)[0].split(".", 1)[0] == "canter"

    return [{path: {k: written_unquoted_as(v) if isinstance(v, str) else v for k, v in kwargs.items()}
             for path, kwargs in entry.items()}
            if isinstance(entry, dict) and len(entry) == 1 and own(next(iter(entry)))
            and isinstance(next(iter(entry.values())), dict) else entry for entry in callbacks]


def _written_config(path: Path, flags: bool = True) -> dict[str, Any] | None:
    """The mapping in ``path`` (a run's ``config.yaml``), or None when it is missing (``--resume`` writes it again
    from ``checkpoints/last``). One that cannot be read as a config mapping (a hand edit with a YAML error, a
    damaged or emptied file) is a one-line :class:`CanterError` naming it: rewriting it would lose it (``flags``: the
    resume named as ``--resume``, else as ``canter.resume``)."""
    from canter.yaml_io import load_yaml

    if not os.path.lexists(path):
        return None
    hint = (f"{'--resume' if flags else 'canter.resume'} would replace it with the config saved in checkpoints/last: "
            f"repair it, or delete it to have it written again from there")
    try:
        found = load_yaml(path)
    except CanterError as exc:
        raise CanterError(f"{exc}; {hint}") from None
    if not found:
        raise CanterError(f"{path} is empty, not the config the run wrote; {hint}")
    return found


def check_same_run(run_dir: Path, saved: dict[str, Any], base: Path, flags: bool = True) -> None:
    """A one-line :class:`CanterError` when ``checkpoints/last`` and ``config.yaml`` name another algorithm, env or
    seed: the checkpoint was copied from another run (its history files then disagree too, which said only that
    a file had too few rows). Checked before the history files; a missing file is left as above (``flags``: as
    :func:`check_config_unedited`'s)."""
    found = _written_config(run_dir / "config.yaml", flags)
    if found is None:
        return

    def run_of(config: dict[str, Any]) -> str:
        return f"{config.get('algo')} on {config.get('env')}, seed {config.get('seed')}"

    if any(found.get(k) != saved.get(k) for k in ("algo", "env", "seed")):
        raise CanterError(f"checkpoint {base} ({run_of(saved)}) and {run_dir / 'config.yaml'} ({run_of(found)}) are "
                          f"of different runs: put back this run's checkpoints/last (or undo the edit to config.yaml)")


def check_config_unedited(run_dir: Path, saved: dict[str, Any], given: tuple[str, ...] = (),
                          resolved: dict[str, Any] | None = None, flags: bool = True) -> None:
    """A one-line :class:`CanterError` when ``run_dir/config.yaml`` was edited since the run wrote it: resuming
    continues with the config saved in ``checkpoints/last`` and rewrites the file, so the edit would be ignored
    and lost without a word. ``max_steps`` and ``max_seconds`` (which ``--resume`` may change) are not compared,
    nor the keys ``given`` to this resume (``dataset``: a moved dataset's path, and the settings of
    :data:`~canter.resume_settings.CHANGEABLE`, which a resumed run killed before its next ``last`` has written to
    the file already: one of those not given again is refused with the flag that gives it); a missing file is
    written again. A key (or hyperparameter) that the saved config predates counts as saved with its value in
    ``resolved``, the config that resuming builds from it (and writes to the file when it starts, before its next
    ``last``). ``flags``: the setting to give again is named as ``canter train --resume``'s option, else as
    ``canter.resume``'s keyword."""
    path = run_dir / "config.yaml"
    found = _written_config(path, flags)
    if found is None:
        return
    if resolved is not None:  # (a file without the key, as the old run wrote it, is no edit either)
        saved = {**{k: resolved[k] for k in found if k not in saved and k in resolved}, **saved}
        inner = [d.get("hparams") for d in (found, saved, resolved)]
        if all(isinstance(d, dict) for d in inner):
            saved["hparams"] = {**{k: inner[2][k] for k in inner[0] if k not in inner[1] and k in inner[2]}, **inner[1]}
    resumable = ("max_steps", "max_seconds", *given)
    key = _differing_key({k: v for k, v in found.items() if k not in resumable},
                         {k: v for k, v in saved.items() if k not in resumable})
    from canter.resume_settings import CHANGEABLE, flag_for, listed, named

    if key in CHANGEABLE and key in found:  # a hand edit, or a resume given it that was killed before its next 'last'
        again = (f"canter train --resume {shlex.quote(str(run_dir))} {flag_for(key, found.get(key))}" if flags else
                 f"canter.resume({str(run_dir)!r}, {key}={found.get(key)!r})")
        raise CanterError(f"{path} says {key}: {_json(found.get(key))}, the run's checkpoints/last {key}: "
                          f"{_json(saved.get(key))}; {'--resume' if flags else 'canter.resume'} continues with the saved "
                          f"value unless it is given "
                          f"again: {again} (or undo the edit)")
    if key is not None:
        may = listed([named(k, flags) for k in ("max_steps", "max_seconds")] + [f"a moved dataset's "
                     f"{named('dataset', flags)}", *(CHANGEABLE.values() if flags else CHANGEABLE)])
        new = (f"canter train {saved.get('algo')} -f {shlex.quote(str(path))} --run-dir NEW_DIR" if flags else
               f"canter.train(config_file={str(path)!r}, run_dir=NEW_DIR)")
        raise CanterError(f"{path} was edited since the run wrote it ('{key}' differs from the config saved in "
                          f"checkpoints/last); {'--resume' if flags else 'canter.resume'} continues a run with its "
                          f"saved config (only {may} may change): undo the edit, or start a new run with that "
                          f"config: {new}")


def _json(value: Any) -> str:
    """``value`` shown as the JSON file has it (``null``, not ``None``)."""
    return "null" if value is None else shown(value)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _is_numbers(v: Any) -> bool:
    return hasattr(v, "__len__") and not isinstance(v, (str, dict)) and all(_is_number(x) for x in list(v))


#: the fields of a resumable checkpoint that resuming reads as it finds them: (path under the JSON, whether the
#: value fits, what it must be); ``?`` ends a path that may be missing, ``*`` takes every value of a mapping
_FIELDS: list[tuple[str, Any, str]] = [
    ("trainer?", lambda v: isinstance(v, dict), "a mapping"),
    ("stop_reason?", lambda v: v is None or isinstance(v, str), "a string or null"),
    ("history_rows?.*", lambda v: _is_int(v) and v >= 0, "a row count"),
    ("trainer?.best_eval_return?", lambda v: v is None or _is_number(v), "a number or null"),
    ("state.trainer.counters", lambda v: isinstance(v, dict), "a mapping"),
    *((f"state.trainer.counters.{k}?", lambda v: v is None or _is_number(v), "a number or null")
      for k in ("best_eval_return", "last_eval_return", "best_rolling_return")),
    ("state.trainer.counters.next_eval?", lambda v: v is None or _is_int(v), "an integer or null"),
    ("state.trainer.recent_returns", _is_numbers, "a list of numbers"),
    ("state.trainer.recent_successes?", _is_numbers, "a list of numbers"),
    ("state.trainer.last_eval?", lambda v: v is None or (isinstance(v, dict) and _is_number(v.get("mean_return"))
                                                          and _is_number(v.get("std_return"))
                                                          and _is_numbers(v.get("returns"))
                                                          and _is_numbers(v.get("lengths"))), "an evaluation or null"),
    *((f"state.trainer.{k}", lambda v: isinstance(v, dict), "a mapping") for k in ("hooks", "lr", "guard", "rng")),
    ("state.trainer.hooks.*", lambda v: isinstance(v, dict), "a mapping"),
    ("state.trainer.lr.scale?", _is_number, "a number"),  # optional: a multi-policy run keeps one per policy
    *((f"state.trainer.lr.{k}?", lambda v: isinstance(v, dict) and all(map(_is_number, v.values())),
       "a mapping of numbers") for k in ("raw", "written")),
    ("state.trainer.guard.restores?", _is_int, "an integer"),
    ("state.trainer.guard.events?", lambda v: isinstance(v, list) and all(isinstance(e, dict) for e in v),
     "a list of mappings"),
    ("state.trainer.env?", lambda v: v is None or isinstance(v, dict), "a mapping or null"),
    ("trainer?.opponents?.*", lambda v: isinstance(v, str), "a checkpoint id"),
    ("state.trainer.rng.python", lambda v: isinstance(v, list) and len(v) == 3 and isinstance(v[1], list),
     "Python's random state"),
    ("state.trainer.rng.numpy", lambda v: isinstance(v, dict), "NumPy's random state"),
    ("state.trainer.rng.torch", lambda v: type(v).__name__ == "Tensor", "torch's random state (a tensor)"),
    ("state.trainer.rollout?", lambda v: isinstance(v, dict) and _is_int(v.get("pos")), "a rollout's state"),
]


def _values(tree: Any, path: str) -> list[tuple[str, Any]]:
    """``(name, value)`` of what ``path`` (a :data:`_FIELDS` path) names in ``tree``; a ValueError naming a value
    that is not a mapping where the path goes on (a KeyError naming a field that is missing)."""
    found = [("", tree)]
    for part in path.split("."):
        optional, part = part.endswith("?"), part.rstrip("?")
        step = []
        for name, node in found:
            if node is None and part == "*":  # an empty mapping written as null
                continue
            if not isinstance(node, dict):
                raise ValueError(f"'{name}' must be a mapping, got {_json(node)}")
            if part == "*":
                step += [(f"{name}.{k}".lstrip("."), v) for k, v in node.items()]
            elif part in node:
                step.append((f"{name}.{part}".lstrip("."), node[part]))
            elif not optional:
                raise KeyError(f"{name}.{part}".lstrip("."))
        found = step
    return found


def check_resume_metadata(meta: dict[str, Any], state: Any, base: Path) -> None:
    """A one-line :class:`CanterError` naming the first field of a hand-edited ``last`` (``meta`` its JSON,
    ``state`` what it holds) that has not the type resuming reads (checked before anything of the run is touched;
    the sha256 covers the tensors, not the JSON)."""
    try:
        if not isinstance(meta.get("config"), dict) or not isinstance(meta["config"].get("hparams", {}), dict):
            raise ValueError("'config' is not a mapping")
        for path, fits, what in _FIELDS:
            for name, value in _values({**meta, "state": state}, path):
                if not fits(value):
                    raise ValueError(f"'{name}' must be {what}, got {_json(value)}")
        counters = state["trainer"]["counters"]  # a mapping: checked above
        every = meta["config"].get("eval_every")
        if counters.get("next_eval") is not None and not (_is_int(every) and every > 0):  # it would never be passed
            raise ValueError(f"'state.trainer.counters.next_eval' must be null for a run with eval_every {every}")
        numbers = [("step", meta["step"], int), ("resumes", meta.get("resumes", 0), int),
                   ("trainer.wall_time", meta.get("trainer", {}).get("wall_time", 0.0), float),
                   ("next_checkpoint", meta.get("next_checkpoint") or 0, int),
                   ("state.trainer.counters.wall_time", counters.get("wall_time", 0.0), float),
                   *((f"state.trainer.counters.{k}", counters.get(k), int)
                     for k in ("step", "iteration", "episodes", "evaluations"))]
        for name, value, kind in numbers:  # as resuming converts them (a '5' written by hand is 5)
            try:
                kind(value)
            except (TypeError, ValueError, OverflowError):
                raise ValueError(f"'{name}' must be a number, got {_json(value)}") from None
    except KeyError as exc:
        raise CanterError(f"checkpoint {base} cannot be resumed: its metadata was edited or is corrupt "
                          f"('{exc.args[0]}' is missing)") from None
    except (TypeError, ValueError, AttributeError) as exc:
        raise CanterError(f"checkpoint {base} cannot be resumed: its metadata was edited or is corrupt "
                          f"({exc})") from None


@contextlib.contextmanager
def restoring(base: Any) -> Iterator[None]:
    """Turn an error while a resumed trainer restores the checkpoint ``base``'s state (one deeper than
    :func:`check_resume_metadata` looks: an env's or a buffer's own fields) into a one-line :class:`CanterError`
    naming the file."""
    try:
        yield
    except CanterError as exc:  # a field it names ('state.trainer.env.env.state'), or a callback's state
        if base is None:
            raise
        raise CanterError(f"checkpoint {base} cannot be resumed: {exc}") from None
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, RuntimeError) as exc:
        if base is None:
            raise
        raise CanterError(f"checkpoint {base} cannot be resumed: its trainer state was edited or is corrupt "
                          f"({type(exc).__name__}: {exc})") from None


def check_writable(run_dir: Path) -> None:
    """A one-line :class:`CanterError` when ``run_dir`` or its ``checkpoints/`` cannot be written (a read-only
    file system or permissions): the resumed run would train up to its first checkpoint and then fail to save it."""
    for directory in (run_dir, run_dir / "checkpoints"):
        if directory.is_dir() and not os.access(directory, os.W_OK | os.X_OK):
            raise CanterError(f"cannot resume '{run_dir}': '{directory}' is not writable")


def resume_dataset(run_dir: Path, cfg: dict[str, Any], trainer_state: dict[str, Any], dataset: Any,
                   flags: bool = True) -> None:
    """Check the dataset an offline run continues on, before anything is written. ``dataset`` (``--resume RUN
    --dataset PATH``: the run's dataset moved or copied) replaces ``cfg["dataset"]`` once it is found to be the
    data the run was trained on: the dataset's ``checkpoint_id``, which the run recorded, a random id in its JSON
    and its safetensors header that loading checks against each other and the tensors' sha256. One-line errors:
    ``dataset`` for a run without one, another dataset, the run's dataset gone (pass ``--dataset``) or rewritten
    (a Minari dataset, which has no id: holding another number of transitions). ``flags``: ``dataset`` named as
    ``canter train --resume``'s option, else as ``canter.resume``'s keyword (:func:`canter.resume_settings.named`)."""
    from canter.data.dataset import MINARI_PREFIX, dataset_missing, read_dataset_metadata
    from canter.resume_settings import named

    recorded, used = cfg.get("dataset"), trainer_state["counters"].get("dataset_id")
    given = named("dataset", flags)
    fix = (f"canter train --resume {shlex.quote(str(run_dir))} --dataset NEW_PATH" if flags else  # (a space)
           f"canter.resume({str(run_dir)!r}, dataset=NEW_PATH)")
    if dataset is not None:
        if not isinstance(dataset, (str, os.PathLike)) or not str(dataset).strip():
            raise CanterError(f"{given} needs the path the run's dataset was moved to, got {dataset!r}: {fix}")
        if not recorded:
            raise CanterError(f"{given} is for runs of offline algorithms (bc, cql, td3bc); run '{run_dir}' "
                              f"({cfg.get('algo')}) learns from its env: drop {given}")
        if str(recorded).startswith(MINARI_PREFIX) or str(dataset).startswith(MINARI_PREFIX):
            raise CanterError(f"run '{run_dir}' learns from '{recorded}'; {given} gives a moved dataset file, not "
                              f"another source ('{dataset}'): drop {given}")
        if used is None:
            raise CanterError(f"run '{run_dir}' recorded no id of its dataset (an older canter), so '{dataset}' "
                              f"cannot be checked to be the data it was trained on; put it back at '{recorded}'")
        found = read_dataset_metadata(dataset).get("checkpoint_id")  # one-line errors: not there, not a dataset
        if found != used:
            raise CanterError(f"cannot resume: dataset '{dataset}' is not the one run '{run_dir}' was trained on "
                              f"('{recorded}': dataset id {used}, this one {found}); give that dataset's new path")
        cfg["dataset"] = str(Path(dataset).absolute())  # recorded as the run's: later resumes find it there
        return
    if recorded and str(recorded).startswith(MINARI_PREFIX):  # no save id: its size, at least (it resumed on
        # another dataset saved under the id since, saying resume_exact: true)
        from canter.data.minari import _load_minari

        minari_id, held = str(recorded)[len(MINARI_PREFIX):], trainer_state["counters"].get("dataset_transitions")
        now = int(_load_minari(minari_id).total_steps)  # one-line errors: gone, not readable
        if held is not None and now != int(held):
            raise CanterError(f"cannot resume: Minari dataset '{minari_id}' holds {now:,} transitions, the run was "
                              f"trained on {int(held):,}: it was replaced since this run started; an exact "
                              f"continuation needs the dataset it was trained on")
        return
    if recorded and dataset_missing(recorded):
        raise CanterError(f"cannot resume: the dataset of run '{run_dir}', '{recorded}', is not there any more; "
                          f"if it was moved, give its new path: {fix}")
    if recorded and used is not None and read_dataset_metadata(recorded).get("checkpoint_id") != used:
        raise CanterError(f"cannot resume: dataset '{recorded}' was rewritten since this run started; "
                          f"an exact continuation needs the dataset it was trained on")


def check_opponents(meta: dict[str, Any], trainer: Any) -> None:
    """Warn, in one line, when a frozen opponent of a turn-based game (a run directory or checkpoint) loads as
    another checkpoint than the one the run played until its ``last`` (``meta``; that run trained further), and
    mark the resume not exact (``resume_exact: false``): the resumed ``trainer`` plays the opponent as it is now."""
    recorded = (meta.get("trainer") or {}).get("opponents") or {}
    changed = [spec for spec, cid in recorded.items() if trainer.opponents.get(spec, cid) != cid]
    if changed:
        warn(CanterWarning(
            f"resume: opponent '{changed[0]}' has saved another checkpoint since this run last saved (trained "
            f"further?); the run goes on against it as it is now, so it does not continue exactly (resume_exact: "
            f"false){'; so have ' + ', '.join(changed[1:]) if changed[1:] else ''}"))
        trainer.opponents_changed = changed


def check_image_layout_kept(observation_space: Any, whose: str = "this run's model",
                            env_layout: str | None = None) -> None:
    """Refuse (one line) to resume a run whose checkpoint reads its image observations as canter did before
    2026-11-27 (:func:`canter.models.cnn.former_image_layout`): the trainer's model, built from the env's space,
    would read them as they are read now, and the saved weights do not fit it. ``canter.load``, eval and play
    keep the checkpoint's reading. A multi-policy run's space (a Dict, policy -> space) is checked policy by
    policy (it was a state_dict RuntimeError traceback). ``env_layout``: the layout the run's env gives its
    images whatever their shape (:func:`canter.envs.make.given_image_layout`; the Atari stacks' ``"chw"``), which
    the trainer's model reads them as: a checkpoint that read them so resumes (it was refused as if the shape
    rule applied)."""
    import gymnasium as gym

    from canter.models.cnn import image_layout

    if isinstance(observation_space, gym.spaces.Dict):  # packed observations are Boxes: these are policies
        for policy, space in observation_space.spaces.items():
            check_image_layout_kept(space, f"policy '{policy}'")
        return
    if getattr(observation_space, "saved_image_layouts", None):
        raise CanterError(f"cannot resume: {whose} reads the images of its observations "
                          f"{observation_space} as canter did before 2026-11-27; canter now reads them otherwise "
                          f"(the smallest axis is the channels), so its weights fit no new model. canter.load, eval "
                          f"and play still run it; train a new run to continue")
    saved = getattr(observation_space, "saved_image_layout", None)
    if saved is None:
        return
    del observation_space.saved_image_layout
    now = image_layout(observation_space) if env_layout is None else env_layout
    observation_space.saved_image_layout = saved
    if (now or "") == saved:  # the env gives its images as the checkpoint read them
        return
    names = _LAYOUT_NAMES
    raise CanterError(f"cannot resume: {whose} reads its {tuple(observation_space.shape)} image "
                      f"observations as {names[saved]}, as canter did before 2026-11-27; canter now reads them as "
                      f"{names[now]} (the smallest axis is the channels), so its weights fit no new model. "
                      f"canter.load, eval and play still run it; train a new run to continue")


def keep_best_on_disk(run_dir: Path, trainer_state: dict[str, Any]) -> float | None:
    """Raise the best evaluation return that a resumed run starts from (``trainer_state``'s counters, from its
    ``last`` checkpoint) to the one its ``checkpoints/best`` was saved at, where that is higher; returns it (None
    where unchanged). A run stopped inside an iteration (an error raised there, a kill) after a new best keeps
    that ``best`` on disk, while ``last`` is older and does not know the evaluation: resumed from it, the run had
    replaced ``best`` with the first evaluation that beat the older score, a worse policy (and reported its
    return as the run's best). A ``best`` that cannot be read is left to be replaced, as before."""
    from canter.checkpoint import checkpoint_present, read_metadata

    base = run_dir / "checkpoints" / "best"
    counters = trainer_state.get("counters") or {}
    if not checkpoint_present(base):
        return None
    try:
        saved = (read_metadata(base).get("trainer") or {}).get("best_eval_return")
    except CanterError:
        return None
    known = counters.get("best_eval_return")
    if not _is_number(saved) or saved != saved or abs(saved) == float("inf") or (known is not None and saved <= known):
        return None
    counters["best_eval_return"] = float(saved)
    return float(saved)


_LAYOUT_NAMES = {"": "a vector (flat encoder)", "chw": "channels-first [C, H, W]", "hwc": "channels-last [H, W, C]",
                 "hw": "one channel [H, W]", "shwc": "a stack of channels-last frames [S, H, W, C]",
                 "schw": "a stack of channels-first frames [S, C, H, W]", None: "a vector (flat encoder)"}


def check_env_layout_kept(saved: Any, env_space: Any) -> None:
    """Refuse (one line) to resume a run whose checkpoint reads its image observations otherwise than the trainer's
    model, built from the env's space ``env_space``, reads them: an Atari run with frame stacks whose shape reads as
    channels-last (``[12, 10, 10]``: RGB frames of a small screen, ``[12, 8, 8]``), saved before the Atari envs gave
    their layout (2026-11-27), was read so, and its weights fit no model of the stacks read channels-first (a
    state_dict RuntimeError traceback). Likewise the image entries of packed ``Dict`` / ``Tuple`` observations
    (:func:`packed_reading_difference`), and each policy's space of a multi-policy run."""
    import gymnasium as gym

    from canter.models.cnn import image_layout

    if isinstance(saved, gym.spaces.Dict) and isinstance(env_space, gym.spaces.Dict):  # policy -> space
        for policy in saved.spaces.keys() & env_space.spaces.keys():
            check_env_layout_kept(saved[policy], env_space[policy])
        return
    difference = packed_reading_difference(saved, env_space)
    if difference:
        raise CanterError(f"cannot resume: this run's model reads {difference}, so its weights fit no new model. "
                          f"canter.load, eval and play still run it; train a new run to continue")
    was, now = image_layout(saved), image_layout(env_space)
    if was == now:
        return
    raise CanterError(f"cannot resume: this run's model reads its {tuple(saved.shape)} image observations as "
                      f"{_LAYOUT_NAMES[was]}, as canter did before 2026-11-27; the env gives them as "
                      f"{_LAYOUT_NAMES[now]} (Atari frame stacks), so its weights fit no new model. canter.load, eval "
                      f"and play still run it; train a new run to continue")


def packed_reading_difference(saved: Any, env_space: Any) -> str:
    """``""``, or where two packed spaces' (:class:`canter.envs.packing.PackedBox`) networks read an image entry
    otherwise, as ``"its (12, 10, 10) image entry as channels-last [H, W, C]; the env gives it as channels-first
    [C, H, W]"``: an entry its env marks (:func:`canter.models.cnn.mark_image_layout`) that a checkpoint written
    before packed spaces kept marks (2026-11-28) read by its shape, or the reverse. Spaces of other image entries
    are not compared here (:func:`canter.envs.spaces.read_alike` tells them apart)."""
    from canter.envs.packing import PackedBox
    from canter.envs.spaces import packed_image_layouts

    if not (isinstance(saved, PackedBox) and isinstance(env_space, PackedBox)) or saved.images != env_space.images:
        return ""
    for (o, shape), was, now in zip(saved.images, packed_image_layouts(saved), packed_image_layouts(env_space)):
        if was != now:
            why = ("marks it so (models.cnn.mark_image_layout), where canter read such an entry by its shape until "
                   "2026-11-28" if o in env_space.given_image_layouts else "does not mark it (read by its shape)")
            return f"its {shape} image entry as {_LAYOUT_NAMES[was]}; the env gives it as {_LAYOUT_NAMES[now]}: it {why}"
    return ""


def check_given_layout_kept(saved: Any, env_layout: str | None) -> None:
    """:func:`check_env_layout_kept` before the trainer is built (its envs made; with explorers, Ray started): the
    env's space taken as the checkpoint's shape (the resume refuses another after the build), read as ``env_layout``
    (:func:`canter.envs.make.given_image_layout`: ``"chw"`` for an Atari id's stacks) or, without one, by its shape."""
    import copy

    import gymnasium as gym

    from canter.models.cnn import mark_image_layout

    if not isinstance(saved, gym.spaces.Box):
        return
    env_space = copy.deepcopy(saved)
    for attr in ("saved_image_layout", "saved_image_layouts"):  # the checkpoint's reading, not the env's
        env_space.__dict__.pop(attr, None)
    if env_layout is not None:
        mark_image_layout(env_space, env_layout)
    check_env_layout_kept(saved, env_space)
