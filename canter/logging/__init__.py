"""Loggers that wrap a trainer's record stream: console, parquet history, TensorBoard, W&B.

Every logger has ``start(run)``, ``log(record)`` and ``close()``. Metric names are stable:
``charts/episode_return``, ``charts/rolling_return``, ``charts/steps_per_second``,
``losses/<name>`` and ``eval/mean_return``, ``eval/std_return`` (and ``charts/success_rate``,
``eval/success_rate`` where the env reports ``info["is_success"]``).

Each logger's module is imported when its name is first used: a quiet run, or a trainer without a run
directory, does not import rich (the console's, 0.1 s) or the loggers it does not use.
"""
from __future__ import annotations

import importlib
from typing import Any

#: each logger and the module that defines it
_MODULES = {"ConsoleLogger": "console", "HistoryLogger": "history", "Logger": "base",
            "TensorBoardLogger": "tensorboard", "WandbLogger": "wandb"}

__all__ = ["ConsoleLogger", "HistoryLogger", "Logger", "TensorBoardLogger", "WandbLogger"]


def __getattr__(name: str) -> Any:
    if name not in _MODULES:
        raise AttributeError(f"module 'canter.logging' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"canter.logging.{_MODULES[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
