"""What ``canter train --resume`` (and :func:`canter.api.resume_trainer`) may change besides the budgets
(``max_steps``, ``max_seconds``) and a moved offline dataset: the run settings that change nothing the run
learns, only what it writes (:data:`CHANGEABLE`). Everything else continues as the checkpoint saved it, so
the resumed run stays the uninterrupted run's exact continuation.

A setting given is written into the resumed run's config, so it is what ``config.yaml`` says once the run
starts and what its next ``last`` saves (a later resume keeps it). A changed ``checkpoint_every`` moves the
next periodic checkpoint to the new grid: the next multiple of the new value after the resumed step.
"""
from __future__ import annotations

import dataclasses
import shlex
from pathlib import Path
from typing import Any

from canter.errors import CanterError, closest

#: run key -> the ``canter train --resume`` flag that changes it: the settings that change no learning
CHANGEABLE: dict[str, str] = {
    "keep_checkpoints": "--keep-checkpoints",  # which periodic checkpoints are deleted
    "checkpoint_every": "--checkpoint-every",  # when periodic checkpoints are saved
    "wandb": "--wandb",  # whether the scalars also go to Weights & Biases
    # how long a Ray explorer may take before it is replaced (a run stopped by a limit too short for its env
    # continues with a longer one; a run with explorers is no exact continuation anyway, docs/distributed.md)
    "explorer_timeout": "--explorer-timeout",
    # the Ray cluster the explorers run on (a cluster restarted at another address, or a run started on a private
    # local Ray continued on a cluster): where the explorers act, not what the learner learns
    "ray_address": "--ray-address",
}


class _Saved:
    """The default of :func:`canter.api.resume_trainer`'s ``max_seconds``: not given, so the run keeps its saved time
    budget (``max_seconds=None`` given drops it, as ``canter train --resume RUN --max-seconds null``)."""

    def __repr__(self) -> str:
        return "SAVED"


#: ``max_seconds`` not given to a resume: the run keeps its saved budget, where ``None`` given drops it
SAVED: Any = _Saved()


def listed(names: list[str]) -> str:
    """``a, b and c``."""
    return " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)


#: the options ``canter train --resume`` takes, for its one-line errors (``--wandb``'s off switch too)
RESUME_OPTIONS = listed(["--max-steps", "--max-seconds", "--dataset",
                         *(f"{flag} / --no-wandb" if key == "wandb" else flag for key, flag in CHANGEABLE.items()),
                         "--quiet"])


def flag_for(key: str, value: Any) -> str:
    """The ``canter train --resume`` option that sets ``key`` (one of :data:`CHANGEABLE`) to ``value``, its value
    quoted for the shell (a hand-edited ``ray_address`` with a space is one argument when the hint is pasted)."""
    if key == "wandb":
        return "--wandb" if value else "--no-wandb"
    if value is None:
        return f"{CHANGEABLE[key]} {'all' if key == 'keep_checkpoints' else 'null'}"
    return f"{CHANGEABLE[key]} {shlex.quote(str(value))}"


def seconds_arg(text: str) -> float | None:
    """The value of ``--explorer-timeout``: seconds, or ``null`` (automatic); the range is the config's to check."""
    from canter.config import coerce

    try:
        return coerce(float | None, text, "value")
    except CanterError:
        import argparse

        raise argparse.ArgumentTypeError(f"invalid value: {text!r} (seconds, or null)") from None


def address_arg(text: str) -> str | None:
    """The value of ``--resume``'s ``--ray-address``: an address, or ``null`` (a private local Ray for the run);
    the form is the config's to check."""
    return None if text.strip().lower() in ("null", "none") else text


def keep_arg(text: str) -> int | None:
    """The value of ``--resume``'s ``--keep-checkpoints``: K, or ``all`` (keep every periodic checkpoint again)."""
    from canter.cli_args import int_arg

    return None if text.strip().lower() in ("all", "null") else int_arg(text)


def check_settings(settings: dict[str, Any], hparams: Any = (), run_dir: Path | None = None,
                   flags: bool = True) -> None:
    """A one-line :class:`CanterError` for a key of ``settings`` (keyword arguments of a resume) that a resume may
    not change: a run key other than those of :data:`CHANGEABLE` (the seed, ``n_envs``, the evaluations: those that
    change what the run learns, and those not yet shown not to), one of the run's ``hparams``, or no setting at all
    (naming the closest argument a resume takes). ``run_dir``: the run, whose config a new run would start from;
    ``flags``: that new run named as ``canter train``'s command, else as ``canter.train``'s call."""
    from canter.config import RunConfig

    keys = [f.name for f in dataclasses.fields(RunConfig)]
    for key in settings:
        if key in CHANGEABLE:
            continue
        if key in keys or key == "hparams" or key in hparams:
            config = f"{run_dir if run_dir is not None else 'RUN_DIR'}/config.yaml"  # canter.resume: canter.train
            new = ("canter train ALGO -f RUN_DIR/config.yaml --run-dir NEW_DIR" if flags else
                   f"canter.train(config_file={config!r}, run_dir=NEW_DIR)")
            raise CanterError(f"'{key}' cannot change when a run is resumed: it continues with its saved config, "
                              f"exactly as it would have gone on (only max_steps, max_seconds, dataset, "
                              f"{listed(list(CHANGEABLE))}, which change nothing "
                              f"it learns, may change); to train with "
                              f"other settings, start a new run: {new}")
        near = closest(key, [*CHANGEABLE, "max_steps", "max_seconds", "dataset", "quiet", "callbacks", "hooks"])
        hint = "did you mean " + " or ".join(f"'{n}'" for n in near) + "?" if near else (
            f"it takes {listed(['max_steps', 'max_seconds', 'dataset', *CHANGEABLE, 'quiet', 'callbacks', 'hooks'])}")
        raise CanterError(f"unknown resume argument '{key}'; {hint}")


def named(key: str, flags: bool, value: str = "") -> str:
    """How a resume's error names the setting ``key``: ``canter train --resume``'s option (``flags``: ``--max-steps
    N``), else ``canter.resume``'s keyword (``max_steps=N``); ``value``: the placeholder after it, if any."""
    if flags:
        return f"--{key.replace('_', '-')}{' ' + value if value else ''}"
    return f"{key}={value}" if value else key


def check_keep_has_checkpoints(settings: dict[str, Any], checkpoint_every: Any, flags: bool = True) -> None:
    """A one-line :class:`CanterError` for a resume given ``keep_checkpoints`` of a run that saves no periodic
    checkpoints (``checkpoint_every``: the value it resumes with, 0), saying what to give with it (the config's own
    check answers with ``--set``, which ``--resume`` does not take); ``flags``: named as options (:func:`named`)."""
    if settings.get("keep_checkpoints") is not None and checkpoint_every == 0:
        raise CanterError(f"{named('keep_checkpoints', flags)} keeps the newest periodic checkpoints, but this run "
                          f"saves none (checkpoint_every: 0): give {named('checkpoint_every', flags, 'N')} too")


def check_address_has_explorers(settings: dict[str, Any], explorers: Any, flags: bool = True) -> None:
    """A one-line :class:`CanterError` for a resume given ``ray_address`` of a run without Ray explorers
    (``explorers``: its saved count, 0): the config's own check advises adding ``--explorers N``, which a resume
    does not take (the explorers change what the run learns); ``flags``: named as options (:func:`named`)."""
    if settings.get("ray_address") is not None and not explorers:
        address = named("ray_address", flags)
        raise CanterError(f"{address} names the Ray cluster of a run's explorers, but this run has none "
                          f"(explorers: 0), and a resume cannot add them: drop {address}")


def resumed_metadata(meta: dict[str, Any], settings: dict[str, Any], checkpoint_every: int) -> dict[str, Any]:
    """``meta`` (``last``'s JSON) as the resumed :class:`~canter.run.Run` takes it: where ``settings`` change
    ``checkpoint_every`` (the run's value now: ``checkpoint_every``), no periodic checkpoint is due on the old
    grid any more (the run computes the next one on the new grid; with 0, none)."""
    if "checkpoint_every" not in settings or meta["config"].get("checkpoint_every") == checkpoint_every:
        return meta
    return {**meta, "next_checkpoint": None}


def spent_budget(meta: dict[str, Any]) -> str | None:
    """The budget the run of ``meta`` (``last``'s JSON) has used up by its counters, whatever its ``stop_reason``
    says: ``"max_steps"`` (its steps reach its saved ``max_steps``), ``"max_seconds"`` (its training wall time
    reaches its saved ``max_seconds``), else None."""
    config, counters = meta.get("config") or {}, meta.get("trainer") or {}
    max_steps, max_seconds = config.get("max_steps"), config.get("max_seconds")
    if isinstance(max_steps, int) and int(meta["step"]) >= max_steps:
        return "max_steps"
    wall = counters.get("wall_time")
    if isinstance(max_seconds, (int, float)) and isinstance(wall, (int, float)) and wall >= max_seconds:
        return "max_seconds"
    return None


def check_continues(run_dir: Path, meta: dict[str, Any], run: Any, max_steps: int | None,
                    max_seconds: float | None, flags: bool = True) -> None:
    """A one-line :class:`CanterError` when the run in ``run_dir`` (``meta``: its ``last``'s JSON; ``run``: the
    resumed :class:`~canter.config.RunConfig`, with the budgets given) has nothing left to train: it finished,
    and ``max_steps`` / ``max_seconds`` do not extend it (or ``max_steps`` is not above its steps); ``flags``: the
    budgets named as ``canter train --resume``'s options, else as ``canter.resume``'s keywords."""
    reason, step = meta.get("stop_reason"), int(meta["step"])
    if reason in (None, "interrupted"):  # a 'last' not saying it finished (older runs): the counters may
        reason = spent_budget(meta) or reason  # (the trainer would take one more iteration past its budget)
    extended = (reason == "max_steps" and run.max_steps > step) or (
        reason == "max_seconds" and (run.max_seconds is None or run.max_seconds > meta["trainer"]["wall_time"]))
    if reason not in (None, "interrupted") and not extended:
        drop = f" (or {named('max_seconds', flags, 'null' if flags else 'None')} to drop the time budget)"
        hint = {"max_steps": f"; pass {named('max_steps', flags, 'N')} to extend it",
                "max_seconds": f"; pass {named('max_seconds', flags, 'S')} to extend it{drop}"}.get(reason, "")
        if reason == "max_steps" and max_steps is not None:  # run's budgets: validated ('512' is 512, as in train)
            hint = f"; {named('max_steps', flags)} must be more than its {step} steps to extend it, got {run.max_steps}"
        elif reason == "max_seconds" and max_seconds is not None:
            hint = (f"; {named('max_seconds', flags)} must be more than its {meta['trainer']['wall_time']:.1f} s to "
                    f"extend it, got {run.max_seconds:g}{drop}")
        if not hint:  # the target, early stopping or a callback stopped it: no budget trains it on
            hint = _train_on_hint(run_dir, reason, flags)
        raise CanterError(f"run '{run_dir}' already finished (stop reason: {reason}); nothing to resume{hint}")
    if max_steps is not None and run.max_steps <= step:
        raise CanterError(f"{named('max_steps', flags)} must be more than the {step} steps run '{run_dir}' has taken, "
                          f"got {run.max_steps}")


def _train_on_hint(run_dir: Path, reason: str, flags: bool) -> str:
    """How to train on from a run that its target, early stopping or a callback stopped (which a larger budget does
    not resume: the stop would stop it again): a new run from its agent (``init_from``), without that stop."""
    drop = {"target_reward": ("--target-reward null", "target_reward=None"),
            "early_stopping": ("--set early_stopping=null", "early_stopping=None")}.get(reason)
    if flags:
        without = f" {drop[0]}" if drop else ""
        # quoted for the shell where it must be (a run directory with a space)
        return (f"; to train on from its agent, start a new run from it: canter train -f "
                f"{shlex.quote(f'{run_dir}/config.yaml')} --set {shlex.quote(f'init_from={run_dir}')}{without} "
                f"--run-dir NEW_DIR")
    without = f", {drop[1]}" if drop else ""
    config = f"{run_dir}/config.yaml"
    return (f"; to train on from its agent, start a new run from it: canter.train(config_file={config!r}, "
            f"init_from={str(run_dir)!r}{without}, run_dir=NEW_DIR)")
