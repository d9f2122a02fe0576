"""Run directories: a new run's name (``runs/<algo>-<env>-<time>-<gitsha8>``), the checks before one is
written, and the part of a path that does not exist yet (removed again when a new run fails)."""
from __future__ import annotations

import os
import re
import shlex
import time
from pathlib import Path

from canter.errors import CanterError, shown_path
from canter.utils import git_commit


#: the directories :func:`new_run_dir` has handed out in this process (a run writes its directory only
#: when it starts, so two trainers made in the same second would otherwise get the same one)
_HANDED_OUT: set[Path] = set()


def new_run_dir(algo: str, env: str, base: str | Path = "runs") -> Path:
    """``runs/<algo>-<env>-<timestamp>-<gitsha8>``, made unique if it exists or was handed out before."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    name = f"{algo.replace(':', '-')}-{env.replace('/', '-').replace(':', '-')}-{stamp}-{git_commit() or 'nogit'}"
    path = Path(base) / name
    i = 1
    while path.exists() or path.absolute() in _HANDED_OUT:
        path = Path(base) / f"{name}-{i}"
        i += 1
    _HANDED_OUT.add(path.absolute())
    return path


def check_new_run_dir(path: str | Path) -> Path:
    """Refuse to write into a directory that already holds files (nothing is overwritten), one
    that cannot be created (a file in its path, a parent that is not writable), or one whose path is not UTF-8."""
    if not str(path).strip():  # Path('') is the current directory
        raise CanterError(f"run_dir needs a directory path, got {str(path)!r}; give 'auto' for runs/<algo>-<env>-<time>")
    try:  # bytes that are not UTF-8 (os.fsdecode's surrogates): safetensors and pyarrow could not read the run back
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        raise CanterError(f"run directory '{shown_path(path)}' is not valid UTF-8: its checkpoints and tables could not be "
                          f"read back (canter eval, play, plot, --resume); choose another --run-dir") from None
    path = _as_created(Path(path))
    if path.exists() and not path.is_dir():
        raise CanterError(f"run directory '{path}' is a file; choose another --run-dir")
    if path.exists() and any(path.iterdir()) and not killed_as_it_started(path):
        stopped = stopped_before_checkpoint(path)
        raise CanterError(f"run directory '{path}' already exists and is not empty; "
                          + (f"it holds a run that {stopped}" if stopped else "choose another --run-dir"))
    parent = path if path.exists() else path.absolute().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise CanterError(f"cannot create run directory '{path}': '{parent}' is not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise CanterError(f"cannot create run directory '{path}': '{parent}' is not writable")
    return path


def _as_created(path: Path) -> Path:
    """``path`` as it reads once its missing directories are made: a ``..`` after a directory that
    does not exist yet cancels it (``new/../old`` is ``old``, an existing directory whose files
    :func:`check_new_run_dir` must see, and which a failed run's cleanup would otherwise remove).
    The part that exists is left to the file system (a symlink's ``..`` is its target's parent)."""
    parts = path.parts
    i = len(parts)
    while i > 0 and not Path(*parts[:i]).exists():
        i -= 1
    if ".." not in parts[i:]:
        return path
    return Path(*parts[:i]) / os.path.normpath(Path(*parts[i:])) if i else Path(os.path.normpath(path))


def outermost_missing(path: str | Path) -> Path | None:
    """The outermost directory of ``path`` (absolute) that does not exist yet; None if ``path`` exists."""
    made, missing = None, Path(path).absolute()
    while not missing.exists() and missing != missing.parent:
        made, missing = missing, missing.parent
    return made


#: what a run killed as it started leaves in its directory, before its ``config.yaml``: its lock (once its process
#: is gone, stale), the lock's temp file (``run_lock``) and the temp files of the lock or ``config.yaml`` written
#: atomically (``atomic``: ``.NAME.<random>.tmp``)
_START_LEFTOVERS = re.compile(r"\.canter\.lock|\.{1,2}canter\.lock\.[a-z0-9_]+\.tmp|\.config\.yaml\.[a-z0-9_]+\.tmp")


def killed_as_it_started(run_dir: Path) -> bool:
    """Whether ``run_dir`` holds nothing but what a run killed as it started leaves (a kill between taking the
    directory's lock and writing its ``config.yaml``), with no process writing it: nothing of a run, so a new run
    may train into it (it then looked empty to ``ls`` yet was refused as not empty, and ``--resume`` of it said
    only that it had no checkpoint)."""
    from canter.run_lock import holder

    try:
        names = [p.name for p in Path(run_dir).iterdir()]
    except OSError:
        return False
    return bool(names) and all(_START_LEFTOVERS.fullmatch(n) for n in names) and holder(run_dir) is None


def stopped_before_checkpoint(run_dir: Path) -> str | None:
    """Where ``run_dir`` holds a run that stopped (a kill, a crash) before it saved its first checkpoint (its
    ``config.yaml``, no checkpoint, no live process writing it), the rest of a sentence saying so and what to do
    (nothing is deleted here); None otherwise."""
    from canter.run_lock import holder

    config = run_dir / "config.yaml"
    saved = (run_dir / "checkpoints").is_dir() and any((run_dir / "checkpoints").iterdir())
    if not config.is_file() or saved or holder(run_dir) is not None:
        return None
    try:
        import yaml

        algo = yaml.safe_load(config.read_text()).get("algo")
    except Exception:  # a damaged config.yaml: the command is still the one to give
        algo = None
    algo = algo if isinstance(algo, str) and algo.strip() else "ALGO"
    return (f"stopped before its first checkpoint, so there is nothing to resume: start it again with "
            f"canter train {algo} -f {shlex.quote(str(config))} --run-dir NEW_DIR, or delete '{run_dir}' and train into it "
            f"again")  # the command unquoted around: its path is quoted for the shell (a space), as a whole it was not


def tune_agents(path: Path) -> list[Path]:
    """The agents a canter tune output keeps (``OUT/agents/trial-N.safetensors``), of ``path`` given as ``OUT`` or
    as ``OUT/agents``; [] for any other folder."""
    return [q for d in (path / "agents", path) for q in d.glob("trial-*.safetensors")]


#: the header of the trials.csv canter tune writes (:func:`canter.tools.tune_agents.trial_rows`' first columns)
TUNE_TRIALS_HEADER = "number,state,value,steps,seconds"


def is_tune_output(path: Path) -> bool:
    """Whether the folder ``path`` (no run directory: it has no ``config.yaml``) is a canter tune output: its
    ``best.yaml``, the agents it keeps (:func:`tune_agents`, also of ``OUT/agents``), its ``study.db`` (tune's default
    storage: all a study stopped before any trial finished holds), or its ``trials.csv``, which a study whose trials
    all failed writes without the others."""
    if (path / "config.yaml").exists():
        return False
    if (path / "best.yaml").is_file() or tune_agents(path) or (path / "study.db").is_file():
        return True
    try:
        with open(path / "trials.csv", encoding="utf-8") as f:
            return f.readline().startswith(TUNE_TRIALS_HEADER)
    except (OSError, UnicodeDecodeError):
        return False


def not_a_run_dir(path: Path) -> CanterError:
    """The error for a folder given where a run directory or checkpoint is expected, with no config.yaml, no
    checkpoints and no tune agents in it: a tune output that kept no agent (stopped before any trial finished:
    only its study.db; or every trial failed) is named as one."""
    if is_tune_output(path):  # was 'not a canter run directory (no config.yaml or checkpoints/)'
        why = ("its trials.csv lists the trials it ran, which kept none" if (path / "trials.csv").is_file() else
               "no trial finished")  # trials that all failed finished: 'no trial finished' was wrong there
        return CanterError(f"'{path}' is a canter tune output that has kept no agent yet ({why}), not a run "
                           f"directory; its study continues when the same canter tune command runs again")
    return CanterError(f"'{path}' is not a canter run directory (no config.yaml or checkpoints/)")


def nothing_to_resume(run_dir: Path) -> CanterError:
    """The error for resuming ``run_dir``, which has no ``checkpoints/last``: what to do where its run stopped
    before its first checkpoint (a one-line error of its own where a process is writing it: a run still starting)."""
    from canter.run_lock import check_free

    check_free(run_dir)
    if is_tune_output(run_dir):  # was 'has no checkpoints/last to resume from'; OUT/agents too, as canter eval names it
        return CanterError(f"'{run_dir}' is a canter tune output, not a run directory: its study continues when the "
                           f"same canter tune command runs again (the same --out, or --storage and --study)")
    stopped = stopped_before_checkpoint(run_dir)
    if stopped is None and killed_as_it_started(run_dir):
        stopped = (f"was killed as it started, before it wrote its config.yaml, so there is nothing to resume: "
                   f"train a new run into '{run_dir}' (canter train ALGO --run-dir {shlex.quote(str(run_dir))})")
    return CanterError(f"'{run_dir}' has no checkpoints/last to resume from" + (f": its run {stopped}" if stopped else ""))


def closest_run_dirs(path: str | Path) -> list[str]:
    """The run directories beside the missing ``path`` (folders with a ``config.yaml`` or ``checkpoints/``) whose
    names look most like its name (``runs/ppo-CartPole-v1-2026...`` mistyped), as paths; [] when none does."""
    from canter.errors import closest

    folder = Path(path).parent
    try:
        runs = [d.name for d in folder.iterdir() if d.is_dir() and not d.name.startswith(".")
                and ((d / "config.yaml").is_file() or (d / "checkpoints").is_dir())]
    except OSError:  # no such folder, or one that cannot be listed: nothing to suggest
        return []
    return [str(folder / name) for name in closest(Path(path).name, runs)]


def runs_held(folder: Path) -> list[Path]:
    """The run directories (with a ``config.yaml``) directly inside ``folder``, sorted: a folder of runs (``runs``, a
    benchmark's ``OUT/runs``) given where one run directory is expected."""
    try:
        return sorted(d for d in folder.iterdir() if (d / "config.yaml").is_file())
    except OSError:  # unreadable: nothing to name
        return []


def held_count(held: list[Path]) -> str:
    """'1 run directory' or 'N run directories'."""
    return f"{len(held)} run director{'y' if len(held) == 1 else 'ies'}"
