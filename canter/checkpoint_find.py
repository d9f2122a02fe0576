"""Finding a checkpoint from what a user typed: a run directory, its ``checkpoints`` folder, a checkpoint path or
a canter tune output, and the one-line errors (with the closest names) where none is there."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

from canter.errors import CanterError, CanterWarning, warn
from canter.run_dirs import closest_run_dirs


def find_checkpoint(path: str | Path) -> Path:
    """A run directory or its ``checkpoints`` folder (the ``best``, else the ``last`` checkpoint; a ``best`` whose
    ``.safetensors`` is missing falls back to ``last``, with a warning) or a checkpoint path -> checkpoint base."""
    from canter.checkpoint import checkpoint_base, checkpoint_present  # here: canter.checkpoint imports this module

    if not isinstance(path, (str, os.PathLike)):
        raise CanterError(f"expected a run directory or checkpoint path (a str or pathlib.Path), got {path!r}")
    p = Path(path).expanduser()  # canter.load('~/x') looked for a folder named '~'
    if p.is_dir():
        partial = None  # a best whose .json is there without its .safetensors: last, where it is whole, instead
        for name in ("best", "last"):
            for base in (p / "checkpoints" / name, p / name):  # a run directory, or its checkpoints/ folder
                if checkpoint_present(base):
                    whole = base.with_name(base.name + ".safetensors").exists()
                    if not whole and (name == "best" or partial is not None):  # a partial last is no fallback
                        partial = partial or base
                        continue
                    if partial is not None:
                        warn(CanterWarning(f"{partial}.safetensors is missing (its {partial.name}.json is there); "
                                           f"using the last checkpoint {base} instead"))
                    return base
        if partial is not None:  # no whole last either: loading best says which file is missing
            return partial
        # best and last gone (deleted, or a process killed between saves): 'no checkpoint yet' was wrong; of a run
        # directory or of its checkpoints/ folder (which has no config.yaml)
        periodic = sorted((q.with_suffix("") for d in (p / "checkpoints", p) for q in d.glob("step-*.safetensors")
                           if checkpoint_present(q.with_suffix(""))), key=lambda q: (len(q.name), q.name))
        if periodic:
            where = f"run directory '{p}'" if (p / "config.yaml").exists() else f"'{p}'"
            raise CanterError(f"{where} has no checkpoints/best or checkpoints/last; pass one of its periodic "
                              f"checkpoints, e.g. '{periodic[-1]}'")
        if not (p / "config.yaml").exists():
            # canter tune's OUT (or OUT/agents): the best trial's agent, OUT/agents/trial-N, is what to pass
            from canter.run_dirs import held_count, not_a_run_dir, runs_held, tune_agents

            kept = sorted(tune_agents(p), key=_trial_number)
            if kept:
                which = (f"the agent it kept: '{kept[0].with_suffix('')}'" if len(kept) == 1 else
                         f"an agent it kept, e.g. '{kept[-1].with_suffix('')}' (best.yaml's header names the best)")
                raise CanterError(f"'{p}' is a canter tune output, not a run directory; pass {which}")

            held = runs_held(p)  # `canter eval runs`: their parent
            if held:
                raise CanterError(f"'{p}' is not a canter run directory (no config.yaml or checkpoints/); it holds "
                                  f"{held_count(held)}, such as '{held[0]}': pass one of them")
            raise not_a_run_dir(p)
        raise CanterError(f"run directory '{p}' has no checkpoint yet (checkpoints/best or checkpoints/last)")
    base = checkpoint_base(p)
    if not checkpoint_present(base):
        if p.exists():  # a file of a run (config.yaml, summary.json, ...): name what to pass instead
            raise CanterError(f"'{path}' is neither a run directory nor a checkpoint; {run_dir_hint(p)} (or a "
                              f"checkpoint such as RUN_DIR/checkpoints/best)")
        raise CanterError(f"no such run directory or checkpoint: '{path}'{_closest_checkpoints(base)}")
    if is_dataset(base):  # else "has no valid 'config'", after reading all its tensors
        raise CanterError(f"'{path}' {DATASET_NOT_RUN} {base}")
    return base


def _trial_number(path: Path) -> int:
    """N of a tune agent's file ``trial-N.safetensors`` (-1 if N is not a number)."""
    number = path.name[len("trial-"):-len(".safetensors")]
    return int(number) if number.isdigit() else -1


#: the end of the error for a dataset given where a run directory or checkpoint is expected (then its path)
DATASET_NOT_RUN = ("is a dataset (transitions that canter collect wrote), not a run directory or checkpoint; an "
                   "offline algorithm learns from it: canter train bc|cql|td3bc --dataset")


def is_dataset(base: Path) -> bool:
    """Whether the file pair ``base`` is an offline dataset (its JSON says ``kind: canter-dataset``); only its small
    JSON is read, and a missing or unreadable one is not a dataset here."""
    try:
        meta = json.loads(base.with_name(base.name + ".json").read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        return False
    from canter.data.dataset import KIND

    return isinstance(meta, dict) and meta.get("kind") == KIND


def _closest_checkpoints(base: Path) -> str:
    """``"; did you mean ..."`` naming the checkpoints beside the missing ``base`` that look most like it (its step
    number, zero-padded as the run writes it: ``step-1024`` is ``step-000001024``), or ``""`` when there are none.
    Where the run directory's name is mistyped too (``runs/rnu/checkpoints/bset``, ``runs/rnu/chekpoints/best``), the
    run directories like it are searched for the checkpoint like ``base``'s name."""
    from canter.errors import closest

    folder = base.parent
    if not folder.is_dir() and folder.parent.is_dir():  # RUN/checkpoint/best: the folder's name mistyped
        dirs = closest(folder.name, [d.name for d in folder.parent.iterdir() if d.is_dir()])
        folder = next((folder.parent / d for d in dirs if (folder.parent / d).is_dir()), folder)
    near = [str(folder / n) for n in _near_names(folder, base.name)] or closest_run_dirs(base)  # else a run's name
    # the run directory: RUN/checkpoints/best, RUN/chekpoints/best (that folder's name mistyped as well) or RUN/best
    below = base.parent.name == "checkpoints" or (not base.parent.is_dir() and closest(base.parent.name,
                                                                                       ["checkpoints"]))
    run = base.parent.parent if below else base.parent
    if not near and not run.is_dir():  # RUN/best with RUN mistyped: the run directories like RUN
        near = [n for r in closest_run_dirs(run) for n in _in_run(Path(r), base.name)]
    return ("; did you mean " + " or ".join(f"'{n}'" for n in near) + "?") if near else ""


def _near_names(folder: Path, name: str) -> list[str]:
    """The names of the checkpoints in ``folder`` that look most like ``name`` (not datasets): ``name`` itself where
    it is there, the steps saved nearest a ``step-N``, else the closest names (``best`` and ``last`` for a step of a
    run that kept none); [] where none does or there is no such folder."""
    from canter.errors import closest

    names = sorted({f.name.rsplit(".", 1)[0] for f in folder.glob("*.json")} |
                   {f.name.rsplit(".", 1)[0] for f in folder.glob("*.safetensors")}) if folder.is_dir() else []
    names = [n for n in names if not is_dataset(folder / n)]  # data/cartpole: what eval and --init-from refuse
    step = re.fullmatch(r"step-0*(\d+)", name)
    steps = sorted(int(n[5:]) for n in names if re.fullmatch(r"step-\d+", n))
    if step and steps:  # the checkpoints saved nearest that step: the one at or before it, and the one after
        n = int(step.group(1))
        near = [f"step-{k:09d}" for k in ([k for k in steps if k <= n][-1:] + [k for k in steps if k > n][:1])
                if f"step-{k:09d}" in names]
        return near[:1] if near and near[0] == f"step-{n:09d}" else near
    # a step-N of a run that kept none (checkpoint_every past its steps): the checkpoints it has
    return [name] if name in names else closest(name, [n for n in names if n[:1] != "."]) or (
        [n for n in ("best", "last") if n in names] if step else [])


def _in_run(run: Path, name: str) -> list[str]:
    """Checkpoint ``name`` of run directory ``run`` (``RUN/checkpoints/best``) where it has one; else, for a mistyped
    name (not ``best`` or ``last``, which the run directory itself stands for), the run's checkpoints most like it
    (:func:`_near_names`); else ``run``."""
    from canter.checkpoint import checkpoint_present

    present = [base for base in (run / "checkpoints" / name, run / name) if checkpoint_present(base)]
    if present:
        return [str(present[0])]
    near = [] if name in ("best", "last") else [str(run / "checkpoints" / n)
                                                 for n in _near_names(run / "checkpoints", name)]
    return near or [str(run)]


def run_dir_hint(path: Path) -> str:
    """What to pass instead of ``path``, a file where a run directory is expected: the run directory
    it lies in (``config.yaml``'s, or the one above ``checkpoints/``), when it is in one."""
    run = next((d for d in (path.parent, path.parent.parent) if (d / "config.yaml").is_file()
                or (d / "checkpoints").is_dir()), None)
    return f"pass its run directory '{run}'" if run is not None else "pass a run directory"


def no_run_dir(path: str | Path) -> CanterError:
    """The error for ``path`` where a run directory is expected and none is: a file or a checkpoint's name names
    the run directory to pass (``canter plot RUN_DIR/config.yaml``, ``--resume RUN_DIR/checkpoints/last``), a
    missing path is 'no such run directory'."""
    from canter.checkpoint import checkpoint_base, checkpoint_present  # here: canter.checkpoint imports this module

    base = checkpoint_base(Path(path))
    if checkpoint_present(base) and is_dataset(base):  # PATH, PATH.json or PATH.safetensors of a dataset
        return CanterError(f"'{path}' {DATASET_NOT_RUN} {base}")
    if Path(path).exists():
        return CanterError(f"'{path}' is not a run directory; {run_dir_hint(Path(path))}")
    if checkpoint_present(base):  # RUN_DIR/checkpoints/last: a checkpoint's name, whose files exist
        return CanterError(f"'{path}' is a checkpoint, not a run directory; {run_dir_hint(base)}")
    near = closest_run_dirs(path)
    return CanterError(f"no such run directory: '{path}'" + ("; did you mean " + " or ".join(f"'{n}'" for n in near)
                                                            + "?" if near else ""))
