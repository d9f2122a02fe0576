"""Loggers that wrap a trainer's record stream: console, parquet history, TensorBoard, W&B.

Every logger has ``start(run)``, ``log(record)`` and ``close()``. Metric names are stable:
``charts/episode_return``, ``charts/rolling_return``, ``charts/steps_per_second``,
``losses/<name>`` and ``eval/mean_return``, ``eval/std_return`` (and ``charts/success_rate``,
``eval/success_rate`` where the env reports ``info["is_success"]``).
"""
from canter.logging.base import Logger
from canter.logging.console import ConsoleLogger
from canter.logging.history import HistoryLogger
from canter.logging.tensorboard import TensorBoardLogger
from canter.logging.wandb import WandbLogger

__all__ = ["ConsoleLogger", "HistoryLogger", "Logger", "TensorBoardLogger", "WandbLogger"]
