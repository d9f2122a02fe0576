"""Keeping only the newest periodic checkpoints (``RunConfig.keep_checkpoints``).

A run saves ``checkpoints/step-NNNNNNNNN`` every ``checkpoint_every`` steps (:class:`canter.run.Run`). With
``keep_checkpoints: K`` it calls :func:`prune_periodic` right after each one is completely written (both files
renamed into place), which deletes the periodic checkpoints beyond the newest K. Only names the run itself
writes (``step-`` and 9 or more digits) are periodic: ``best``, ``last`` and any other name (``step-1000`` saved
by hand, an agent saved with ``agent.save``) are never deleted.

A kill at any point leaves checkpoints that load: the new checkpoint's files are flushed (and the directory
synced) before an old one goes; each old one loses its ``.json`` first, then its ``.safetensors``, and a
``.safetensors`` alone is a complete checkpoint (its header carries the JSON), which the next prune deletes.
Checkpoints after the step just saved (a resumed run's, saved by the killed process after the ``last`` it
resumes from) are left alone: the resumed run saves them again when it gets there. Where it does not (it resumed
with another ``checkpoint_every``, so its grid misses that step), such a checkpoint is ``stale``: once the run has
passed its step it is deleted rather than counted among the newest K (it counted, pushing out one of the resumed
run's own, and being newer than them it outlived them).
"""
from __future__ import annotations

import os
import re
from collections.abc import Collection
from pathlib import Path

from canter.errors import CanterWarning, warn

#: a periodic checkpoint's name, as the run writes it: ``step-`` and the step, zero-padded to 9 digits
PERIODIC_NAME = re.compile(r"step-(\d{9,})")


def periodic_checkpoints(directory: str | Path) -> dict[int, str]:
    """The periodic checkpoints in ``directory``: step -> name, for every name with a ``.json`` or a
    ``.safetensors`` file (one file left by a killed prune counts too)."""
    found: dict[int, str] = {}
    folder = Path(directory)
    if not folder.is_dir():
        return found
    for p in folder.iterdir():
        name, dot, suffix = p.name.rpartition(".")
        match = PERIODIC_NAME.fullmatch(name) if dot and suffix in ("json", "safetensors") else None
        if match:
            found[int(match.group(1))] = name
    return found


def _sync_directory(directory: Path) -> None:
    """fsync ``directory``, so that the renames that completed the newest checkpoint are on disk before an older
    one's files are deleted (where the platform can sync a directory)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def prune_periodic(directory: str | Path, keep: int, upto: int, stale: Collection[int] = ()) -> list[str]:
    """Delete the periodic checkpoints in ``directory`` at steps up to ``upto`` (the one just saved) other than
    the newest ``keep`` of them; returns the names deleted. Call it only once the checkpoint at ``upto`` is
    completely written. ``stale``: steps of checkpoints that a killed process saved after the ``last`` this run
    resumed from and this run has not saved again: those up to ``upto`` are deleted, and not counted among the
    newest ``keep``. A file that cannot be deleted is warned about (:class:`CanterWarning`), and the run goes on:
    the next prune tries again."""
    if keep < 1:
        raise ValueError(f"keep must be >= 1, got {keep}")
    folder = Path(directory)
    names = periodic_checkpoints(folder)
    steps = sorted(step for step in names if step <= upto and step not in stale)
    gone = set(steps[:-keep]) | {step for step in stale if step in names and step <= upto}
    old = [names[step] for step in sorted(gone)]
    if not old:
        return []
    _sync_directory(folder)
    deleted = []
    for name in old:
        try:
            for suffix in (".json", ".safetensors"):  # the JSON first: a .safetensors alone still loads
                (folder / f"{name}{suffix}").unlink(missing_ok=True)
        except OSError as exc:
            warn(CanterWarning(f"keep_checkpoints: could not delete the old checkpoint {folder / name}: "
                               f"{exc.strerror or exc}"))
            continue
        deleted.append(name)
    return deleted
