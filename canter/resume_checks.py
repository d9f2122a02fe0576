"""What :func:`canter.api.resume_trainer` checks before it touches a run: the checkpoint's metadata has
the types resuming reads, and ``config.yaml`` was not edited since the run wrote it."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from canter.errors import CanterError


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


def _written_config(path: Path) -> dict[str, Any] | None:
    """The mapping in ``path`` (a run's ``config.yaml``), or None when it is missing or unreadable."""
    from canter.yaml_io import load_yaml

    try:
        found = load_yaml(path)
    except CanterError:
        return None
    return found if isinstance(found, dict) else None


def check_same_run(run_dir: Path, saved: dict[str, Any], base: Path) -> None:
    """A one-line :class:`CanterError` when ``checkpoints/last`` and ``config.yaml`` name another algorithm, env or
    seed: the checkpoint was copied from another run (its history files then disagree too, which said only that
    a file had too few rows). Checked before the history files; a missing or unreadable file is left as above."""
    found = _written_config(run_dir / "config.yaml")
    if found is None:
        return

    def run_of(config: dict[str, Any]) -> str:
        return f"{config.get('algo')} on {config.get('env')}, seed {config.get('seed')}"

    if any(found.get(k) != saved.get(k) for k in ("algo", "env", "seed")):
        raise CanterError(f"checkpoint {base} ({run_of(saved)}) and {run_dir / 'config.yaml'} ({run_of(found)}) are "
                          f"of different runs: put back this run's checkpoints/last (or undo the edit to config.yaml)")


def check_config_unedited(run_dir: Path, saved: dict[str, Any], given: tuple[str, ...] = ()) -> None:
    """A one-line :class:`CanterError` when ``run_dir/config.yaml`` was edited since the run wrote it: resuming
    continues with the config saved in ``checkpoints/last`` and rewrites the file, so the edit would be ignored
    and lost without a word. ``max_steps`` and ``max_seconds`` (which ``--resume`` may change) are not compared,
    nor the keys ``given`` to this resume (``dataset``: a moved dataset's path, which a resumed run killed
    before its next ``last`` has written to the file already); a missing or unreadable file is left to be
    rewritten as before."""
    path = run_dir / "config.yaml"
    found = _written_config(path)
    if found is None:
        return
    resumable = ("max_steps", "max_seconds", *given)
    key = _differing_key({k: v for k, v in found.items() if k not in resumable},
                         {k: v for k, v in saved.items() if k not in resumable})
    if key is not None:
        raise CanterError(f"{path} was edited since the run wrote it ('{key}' differs from the config saved in "
                          f"checkpoints/last); --resume continues a run with its saved config (only --max-steps, "
                          f"--max-seconds and a moved dataset's --dataset may change): undo the edit, or start a new "
                          f"run with that config: canter train {saved.get('algo')} -f {path} --run-dir NEW_DIR")


def check_resume_metadata(meta: dict[str, Any], trainer_state: Any, base: Path) -> None:
    """A one-line :class:`CanterError` for a hand-edited ``last`` whose counters or trainer state do not
    have the types resuming reads (checked before anything of the run is touched; the sha256 covers
    the tensors, not the JSON)."""
    try:
        if not isinstance(meta.get("config"), dict) or not isinstance(meta["config"].get("hparams", {}), dict):
            raise ValueError("'config' is not a mapping")
        int(meta["step"])
        int(meta.get("resumes", 0))
        float(meta.get("trainer", {}).get("wall_time", 0.0))
        dict(meta.get("history_rows") or {})
        if meta.get("next_checkpoint") is not None:
            int(meta["next_checkpoint"])
        counters = trainer_state["counters"]
        for key in ("step", "iteration", "episodes", "evaluations"):
            int(counters[key])
        float(counters.get("wall_time", 0.0))
        [float(r) for r in trainer_state["recent_returns"]]
        if len(trainer_state["rng"]["python"]) != 3 or not {"numpy", "torch"} <= set(trainer_state["rng"]):
            raise ValueError("the saved random states are incomplete")
        missing = [k for k in ("hooks", "lr", "guard") if k not in trainer_state]
        if missing:
            raise KeyError(missing[0])
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CanterError(f"checkpoint {base} cannot be resumed: its metadata was edited or is corrupt "
                          f"({type(exc).__name__}: {exc})") from None


def check_writable(run_dir: Path) -> None:
    """A one-line :class:`CanterError` when ``run_dir`` or its ``checkpoints/`` cannot be written (a read-only
    file system or permissions): the resumed run would train up to its first checkpoint and then fail to save it."""
    for directory in (run_dir, run_dir / "checkpoints"):
        if directory.is_dir() and not os.access(directory, os.W_OK | os.X_OK):
            raise CanterError(f"cannot resume '{run_dir}': '{directory}' is not writable")


def resume_dataset(run_dir: Path, cfg: dict[str, Any], trainer_state: dict[str, Any], dataset: Any) -> None:
    """Check the dataset an offline run continues on, before anything is written. ``dataset`` (``--resume RUN
    --dataset PATH``: the run's dataset moved or copied) replaces ``cfg["dataset"]`` once it is found to be the
    data the run was trained on: the dataset's ``checkpoint_id``, which the run recorded, a random id in its JSON
    and its safetensors header that loading checks against each other and the tensors' sha256. One-line errors:
    ``dataset`` for a run without one, another dataset, the run's dataset gone (pass ``--dataset``) or rewritten."""
    from canter.data.dataset import MINARI_PREFIX, dataset_missing, read_dataset_metadata

    recorded, used = cfg.get("dataset"), trainer_state["counters"].get("dataset_id")
    fix = f"canter train --resume {run_dir} --dataset NEW_PATH"
    if dataset is not None:
        if not isinstance(dataset, (str, os.PathLike)) or not str(dataset).strip():
            raise CanterError(f"--dataset needs the path the run's dataset was moved to, got {dataset!r}: {fix}")
        if not recorded:
            raise CanterError(f"--dataset is for runs of offline algorithms (bc, cql, td3bc); run '{run_dir}' "
                              f"({cfg.get('algo')}) learns from its env: drop --dataset")
        if str(recorded).startswith(MINARI_PREFIX) or str(dataset).startswith(MINARI_PREFIX):
            raise CanterError(f"run '{run_dir}' learns from '{recorded}'; --dataset gives a moved dataset file, not "
                              f"another source ('{dataset}'): drop --dataset")
        if used is None:
            raise CanterError(f"run '{run_dir}' recorded no id of its dataset (an older canter), so '{dataset}' "
                              f"cannot be checked to be the data it was trained on; put it back at '{recorded}'")
        found = read_dataset_metadata(dataset).get("checkpoint_id")  # one-line errors: not there, not a dataset
        if found != used:
            raise CanterError(f"cannot resume: dataset '{dataset}' is not the one run '{run_dir}' was trained on "
                              f"('{recorded}': dataset id {used}, this one {found}); give that dataset's new path")
        cfg["dataset"] = str(Path(dataset).absolute())  # recorded as the run's: later resumes find it there
        return
    if recorded and dataset_missing(recorded):
        raise CanterError(f"cannot resume: the dataset of run '{run_dir}', '{recorded}', is not there any more; "
                          f"if it was moved, give its new path: {fix}")
    if recorded and used is not None and read_dataset_metadata(recorded).get("checkpoint_id") != used:
        raise CanterError(f"cannot resume: dataset '{recorded}' was rewritten since this run started; "
                          f"an exact continuation needs the dataset it was trained on")
