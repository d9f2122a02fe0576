"""Learning-rate control for every optimizer an algorithm owns: decay schedules and reductions.

An algorithm may run its own schedule inside ``set_progress`` (PPO's ``lr_schedule: linear``).
:class:`LRControl` works on top of it: after each ``set_progress`` it takes the learning rate the
algorithm left in each param group (its *raw* rate) and writes ``raw * decay(step) * scale``,
where ``decay`` is the run's ``lr_decay`` schedule and ``scale`` collects plateau and
divergence reductions, bounded below by ``min_lr`` (or by the raw rate itself where that is lower:
the bound limits these reductions and never raises a rate). A group's raw rate is re-read whenever
the algorithm wrote a new value (it differs from what was written last), so both schedules compose.
Optimizers are reached only through ``algorithm.optimizers()`` and ``param_groups[i]["lr"]``;
nothing else is assumed.
"""
from __future__ import annotations

import math
from typing import Any


def lr_decay(kind: str, step: int, total_steps: int, final: float = 0.0, every: int = 1, factor: float = 0.5) -> float:
    """The ``lr_decay`` multiplier at env step ``step`` of ``total_steps``.

    ``constant``: 1. ``linear``: from 1 to ``final``. ``cosine``: half a cosine from 1 to
    ``final``. ``step``: ``factor ** (step // every)``.
    """
    progress = min(1.0, step / max(1, total_steps))
    if kind == "constant":
        return 1.0
    if kind == "linear":
        return 1.0 - (1.0 - final) * progress
    if kind == "cosine":
        return final + (1.0 - final) * 0.5 * (1.0 + math.cos(math.pi * progress))
    if kind == "step":
        return factor ** (step // max(1, every))
    raise ValueError(f"unknown lr_decay {kind!r}")


class LRControl:
    """Applies ``lr_decay``, plateau and divergence reductions to all of an algorithm's optimizers."""

    def __init__(self, algorithm: Any, run: Any) -> None:
        self.algorithm, self.run = algorithm, run
        self.kind = run.lr_decay
        self.scale = 1.0
        self.min_lr = run.min_lr
        self._raw: dict[str, float] = {}
        self._written: dict[str, float] = {}

    @property
    def active(self) -> bool:
        """False while nothing would change a learning rate (then :meth:`apply` costs nothing)."""
        return self.kind != "constant" or self.scale != 1.0 or self.min_lr > 0

    def multiplier(self, step: int) -> float:
        """``decay(step) * scale``."""
        r = self.run
        return lr_decay(self.kind, step, r.max_steps, r.lr_decay_final, r.lr_decay_every, r.lr_decay_factor) * self.scale

    def apply(self, step: int) -> None:
        """Write the controlled learning rates (call after ``algorithm.set_progress``)."""
        if not self.active:
            return
        mult = self.multiplier(step)
        for name, opt in self.algorithm.optimizers().items():
            for i, group in enumerate(opt.param_groups):
                key = f"{name}.{i}"
                current = float(group["lr"])
                if key not in self._written or current != self._written[key]:
                    self._raw[key] = current  # the algorithm set a new rate
                raw = self._raw[key]
                # min_lr bounds what this controller lowers; it never raises a rate the algorithm set
                # below it (torch's ReduceLROnPlateau does not either)
                lr = max(raw * mult, min(raw, self.min_lr))
                group["lr"] = lr
                self._written[key] = lr

    def reduce(self, factor: float) -> None:
        """Multiply every learning rate by ``factor`` from now on (bounded below by ``min_lr``)."""
        self.scale *= factor

    def at_min_lr(self) -> bool:
        """True when every rate is at ``min_lr`` (or below it, an algorithm's own rate this never raises): a
        reduction would lower none, so a plateau makes none (as Keras's ``ReduceLROnPlateau`` stops at its
        ``min_lr``)."""
        return all(lr <= self.min_lr for lr in self.current().values())

    def current(self) -> dict[str, float]:
        """The learning rate of every param group, ``optimizer.index -> lr``."""
        return {f"{name}.{i}": float(g["lr"]) for name, opt in self.algorithm.optimizers().items()
                for i, g in enumerate(opt.param_groups)}

    def state_dict(self) -> dict[str, Any]:
        """The scale and the last raw and written rates, for exact resume."""
        return {"scale": self.scale, "raw": dict(self._raw), "written": dict(self._written)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` saved."""
        self.scale = float(state["scale"])
        self._raw = {k: float(v) for k, v in state["raw"].items()}
        self._written = {k: float(v) for k, v in state["written"].items()}
