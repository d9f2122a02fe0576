"""TensorBoard event files in the run directory."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from canter.logging.base import scalars
from canter.trainers.base import TrainRecord


class TensorBoardLogger:
    """Writes scalars with ``torch.utils.tensorboard.SummaryWriter``."""

    def __init__(self, run_dir: str | Path) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(log_dir=str(run_dir), flush_secs=30)

    def start(self, run: Any) -> None:  # noqa: D102
        pass

    def log(self, record: TrainRecord) -> None:  # noqa: D102
        for ep in record.episodes:
            self.writer.add_scalar("charts/episode_return", ep.episode_return, ep.step)
            self.writer.add_scalar("charts/episode_length", ep.episode_length, ep.step)
        for k, v in scalars(record).items():
            self.writer.add_scalar(k, v, record.step)

    def close(self) -> None:  # noqa: D102
        self.writer.close()
