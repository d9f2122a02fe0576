"""Snapshots of a turn-based run's frozen opponents, kept in its run directory (``RUN_DIR/opponents/``).

A run against another run's policy (``env_kwargs={opponent: runs/x}``, a checkpoint, or such specs in a pool or
in ``eval_env_kwargs``) copies each opponent's policy when it starts: :class:`Snapshots` reads every such
checkpoint once (its agent state and its agent metadata, not a ``last``'s trainer state or replay buffer) and
stages it in a temporary folder before the run's envs are made, so every env copy, the evaluation env and the
explorers play the same weights; the run writes them to ``RUN_DIR/opponents/NAME.{safetensors,json}`` with
``opponents.json`` (spec -> file, the source checkpoint and its ``checkpoint_id``) when it starts writing its
directory. From then on training, ``--resume``, ``canter eval``, ``play``, ``collect`` and
:func:`canter.evaluate` of the run play the snapshot (:func:`run_snapshots`): the opponent's run may train
further, prune its checkpoints or be deleted, and the run directory may move to another machine. The recorded
``env_kwargs`` keep the opponents' paths as given (made absolute); the env learns where each spec's weights
are through the adapter's own key :data:`SNAPSHOTS_KEY`, which is added when envs are made and never recorded.

A run directory without ``opponents/opponents.json`` (written before snapshots existed) loads its opponents
from their paths, as it did (``--resume`` warns when one has saved another checkpoint since).
"""
from __future__ import annotations

import json
import re
import shutil
import tempfile
import weakref
from pathlib import Path
from typing import Any

from canter.errors import CanterError, check_version

#: the run directory's folder of opponent snapshots, and its index
SNAPSHOT_DIR = "opponents"
INDEX_NAME = "opponents.json"
#: the ``env_kwargs`` key (the adapter's own, never recorded) mapping an opponent spec to its snapshot's path
SNAPSHOTS_KEY = "opponent_snapshots"
_INDEX_FORMAT = "canter-opponents"


def frozen_specs(env_id: str, *kwargs: dict[str, Any] | None) -> list[str]:
    """The run directories and checkpoints among a turn-based game's opponents in each of ``kwargs`` (a run's
    ``env_kwargs`` and ``eval_env_kwargs``), each once, in order; empty for other envs."""
    from canter.envs.turns import OPPONENTS, is_turn_based, split_kwargs

    if not any(k and "opponent" in k for k in kwargs) or not is_turn_based(env_id):
        return []
    specs: list[str] = []
    for given in kwargs:
        if given and "opponent" in given:
            specs += [s for s in split_kwargs({"opponent": given["opponent"]})[0] if s not in OPPONENTS and s not in specs]
    return specs


def _file_name(base: Path, taken: set[str]) -> str:
    """A readable file name for the snapshot of checkpoint ``base`` (its run's name and its own), unique in ``taken``."""
    run = base.parent.parent.name if base.parent.name == "checkpoints" else base.parent.name
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{run}-{base.name}".strip("-")) or "opponent"
    name, i = stem, 2
    while name in taken:
        name, i = f"{stem}-{i}", i + 1
    return name


class Snapshots:
    """A new run's opponent snapshots, staged in a temporary folder (removed when this object goes) before the run's
    envs are made, and written to its run directory by :meth:`write` (module docstring). Several specs naming the
    same checkpoint (a pool that lists it twice, ``runs/x`` and ``runs/x/checkpoints/best``) share one snapshot."""

    def __init__(self, specs: list[str]) -> None:
        from canter.checkpoint import AGENT_METADATA, find_checkpoint, load_checkpoint, save_checkpoint
        from canter.envs.turns import check_opponent_path

        self.folder = Path(tempfile.mkdtemp(prefix="canter-opponents-"))
        weakref.finalize(self, shutil.rmtree, str(self.folder), True)
        #: spec -> {"file": NAME, "source": the checkpoint read, "checkpoint_id": its id}
        self.index: dict[str, dict[str, str]] = {}
        by_source: dict[Path, dict[str, str]] = {}
        for spec in specs:
            check_opponent_path(spec)
            base = find_checkpoint(spec)
            entry = by_source.get(base.resolve())
            if entry is None:
                state, meta = load_checkpoint(base)
                if not isinstance(state, dict) or "agent" not in state:
                    raise CanterError(f"opponent '{spec}': checkpoint {base} holds no agent")
                name = _file_name(base, {e["file"] for e in by_source.values()})
                entry = {"file": name, "source": str(base.resolve()), "checkpoint_id": str(meta.get("checkpoint_id"))}
                kept = {k: meta[k] for k in AGENT_METADATA if k in meta}
                save_checkpoint(self.folder / name, {"agent": state["agent"]}, {**kept, "snapshot_of": dict(entry)})
                by_source[base.resolve()] = entry
            self.index[spec] = dict(entry)

    def files(self) -> dict[str, str]:
        """Spec -> the staged snapshot's path (what the envs of the run's first process load)."""
        return {spec: str(self.folder / entry["file"]) for spec, entry in self.index.items()}

    def write(self, run_dir: Path) -> None:
        """Copy the snapshots into ``run_dir/opponents/`` and write its index (the index last: a run directory with an
        index has every file it names)."""
        folder = Path(run_dir) / SNAPSHOT_DIR
        folder.mkdir(exist_ok=True)
        for name in sorted({entry["file"] for entry in self.index.values()}):
            for suffix in (".safetensors", ".json"):
                shutil.copyfile(self.folder / f"{name}{suffix}", folder / f"{name}{suffix}")
        from canter.atomic import atomic_write

        index = {"format": _INDEX_FORMAT, "version": 1, "opponents": self.index}
        atomic_write(folder / INDEX_NAME, json.dumps(index, indent=1).encode())


def read_index(run_dir: str | Path | None) -> dict[str, dict[str, str]]:
    """``RUN_DIR/opponents/opponents.json``'s entries (spec -> file, source, checkpoint_id); empty for a run
    directory without one (no frozen opponent, or saved before snapshots existed) or no run directory."""
    if run_dir is None:
        return {}
    path = Path(run_dir) / SNAPSHOT_DIR / INDEX_NAME
    if not path.exists():
        return {}
    try:
        index = json.loads(path.read_text())
    except (OSError, ValueError):
        index = None
    entries = index.get("opponents") if isinstance(index, dict) and index.get("format") == _INDEX_FORMAT else None
    version = index.get("version", 1) if entries is not None else 1
    check_version(version, 1, str(path), "version", "an opponents index", "; restore it from a copy of the run")
    if not isinstance(entries, dict) or not all(
            isinstance(e, dict) and isinstance(e.get("file"), str) and e["file"] not in ("", ".", "..")
            and "/" not in e["file"] and "\\" not in e["file"] and isinstance(e.get("checkpoint_id"), str)
            for e in entries.values()):
        raise CanterError(f"{path} is not an opponents index canter wrote (edited by hand?); restore it from a copy "
                          f"of the run")
    return entries


def run_snapshots(run_dir: str | Path | None) -> dict[str, str]:
    """Spec -> the path of its snapshot in ``run_dir`` (see :func:`read_index`); a snapshot the index names that
    is gone is a one-line error."""
    from canter.checkpoint import checkpoint_present

    folder = Path(run_dir or ".") / SNAPSHOT_DIR
    files = {spec: folder / entry["file"] for spec, entry in read_index(run_dir).items()}
    for spec, base in files.items():
        if not checkpoint_present(base):
            raise CanterError(f"the run's snapshot of opponent '{spec}', {base}, is missing; restore the run "
                              f"directory's {SNAPSHOT_DIR}/ folder from a copy of the run")
    return {spec: str(base.absolute()) for spec, base in files.items()}


def with_snapshots(env_kwargs: dict[str, Any] | None, files: dict[str, str]) -> dict[str, Any]:
    """``env_kwargs`` with :data:`SNAPSHOTS_KEY` set to ``files`` (spec -> snapshot path) where there are any."""
    kwargs = dict(env_kwargs or {})
    if files:
        kwargs[SNAPSHOTS_KEY] = dict(files)
    return kwargs


def run_env_kwargs(env_id: str, own: dict[str, Any], given: dict[str, Any] | None, run_dir: Any) -> dict[str, Any]:
    """The env kwargs of a command that acts with a trained run (``canter eval``, ``play``, ``collect``,
    :func:`canter.evaluate`): the run's ``own`` kwargs with ``given`` merged over them, playing the run's opponent
    snapshots (``run_dir``'s) unless ``given`` names another opponent."""
    kwargs = {**own, **(given or {})}
    if "opponent" in (given or {}) or not frozen_specs(env_id, own):
        return kwargs
    return with_snapshots(kwargs, run_snapshots(run_dir))
