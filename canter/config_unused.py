"""Run settings that act only together with another one, warned about where a run gives them without it: they were
taken without a word and never acted (``plateau_factor`` without ``plateau_patience``, ``lr_decay_final`` with the
constant ``lr_decay``, ``divergence_lr_factor`` without ``divergence_guard: restore``, ...)."""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from canter.errors import CanterWarning, warn


def _patience(run: Any) -> bool:
    return run.early_stopping is not None or run.plateau_patience is not None


#: setting -> (whether it acts in a run, what it needs to act)
DEPENDENT: dict[str, tuple[Callable[[Any], bool], str]] = {
    "plateau_factor": (lambda run: run.plateau_patience is not None, "plateau_patience"),
    "min_delta": (_patience, "early_stopping or plateau_patience"),
    "monitor": (_patience, "early_stopping or plateau_patience (the best checkpoint follows the evaluation return)"),
    "lr_decay_final": (lambda run: run.lr_decay in ("linear", "cosine"), "lr_decay: linear or cosine"),
    "lr_decay_every": (lambda run: run.lr_decay == "step", "lr_decay: step"),
    "lr_decay_factor": (lambda run: run.lr_decay == "step", "lr_decay: step"),
    "divergence_lr_factor": (lambda run: run.divergence_guard == "restore", "divergence_guard: restore"),
    "divergence_max_restores": (lambda run: run.divergence_guard == "restore", "divergence_guard: restore"),
}


def unused_settings(run: Any) -> list[str]:
    """One line for each setting of ``run`` (a :class:`~canter.config.RunConfig`) given another value than its
    default that acts only together with a setting the run lacks (:data:`DEPENDENT`)."""
    defaults = {f.name: f.default for f in dataclasses.fields(run)}
    return [f"{key} {getattr(run, key)} acts only with {needs}, which this run does not set: it is ignored"
            for key, (acts, needs) in DEPENDENT.items() if getattr(run, key) != defaults[key] and not acts(run)]


def warn_unused_settings(run: Any) -> None:
    """Warn (:class:`~canter.errors.CanterWarning`) about each of :func:`unused_settings`."""
    for line in unused_settings(run):
        warn(CanterWarning(line))
