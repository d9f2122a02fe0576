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

        self.run_dir = str(run_dir)
        self.writer: SummaryWriter | None = None

    def start(self, run: Any) -> None:
        """Open the event file; a resumed run purges events logged after its checkpoint's step."""
        from torch.utils.tensorboard import SummaryWriter

        purge = getattr(run, "resumed_step", None)
        self.writer = SummaryWriter(log_dir=self.run_dir, flush_secs=30, purge_step=purge)

    def log(self, record: TrainRecord) -> None:  # noqa: D102
        for ep in record.episodes:
            self.writer.add_scalar("charts/episode_return", ep.episode_return, ep.step)
            self.writer.add_scalar("charts/episode_length", ep.episode_length, ep.step)
        for k, v in scalars(record).items():
            self.writer.add_scalar(k, v, record.step)

    def close(self) -> None:  # noqa: D102
        if self.writer is not None:
            self.writer.close()
