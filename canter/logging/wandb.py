"""Weights & Biases logging (the ``wandb`` extra). Offline unless ``WANDB_MODE`` says otherwise."""
from __future__ import annotations

import os
import re
import secrets
from pathlib import Path
from types import ModuleType
from typing import Any

from canter.errors import CanterError, require
from canter.logging.base import made_by_stop, scalars
from canter.trainers.base import TrainRecord

#: the oldest wandb that takes what :meth:`WandbLogger.start` passes: ``reinit="create_new"`` (wandb 0.19.10)
#: and the ``x_disable_stats`` setting
MIN_WANDB = (0, 19, 10)


def require_wandb() -> ModuleType:
    """Import wandb, or a one-line :class:`~canter.errors.CanterError` when it is missing or older than
    :data:`MIN_WANDB` (which failed only when training started, inside ``wandb.init``)."""
    wandb = require("wandb", "wandb", "--wandb")
    found = re.match(r"(\d+)\.(\d+)\.(\d+)", str(getattr(wandb, "__version__", "")))
    if found and tuple(map(int, found.groups())) < MIN_WANDB:
        raise CanterError(f"--wandb needs wandb>={'.'.join(map(str, MIN_WANDB))}, found {wandb.__version__}; "
                          f"upgrade it with: pip install -U 'canter[wandb]'")
    return wandb


class WandbLogger:
    """Logs the same scalars as TensorBoard to a W&B run stored in the run directory."""

    def __init__(self, run_dir: str | Path, project: str = "canter", config: dict[str, Any] | None = None,
                 name: str | None = None) -> None:
        require_wandb()
        self.run_dir, self.project, self.config, self.name = str(run_dir), project, config or {}, name
        self.run: Any = None
        #: the :class:`~canter.run.Run` being logged (its error or divergence marks the W&B run failed)
        self.owner: Any = None
        self.log_every = 1

    #: the W&B run id, kept in ``RUN_DIR/wandb`` so a resumed run logs to the same W&B run
    ID_FILE = "canter-run-id"

    def start(self, run: Any) -> None:
        """Start the W&B run (its files go to ``RUN_DIR/wandb``) when training begins, so that a trainer
        that is built and never run leaves nothing in the run directory. A resumed run (``canter train
        --resume``) continues the W&B run its first part started (same id, ``resume="allow"``), as
        SB3 users do by hand."""
        import wandb

        self.owner = run
        self.log_every = int(getattr(getattr(getattr(run, "trainer", None), "run", None), "log_every", 1))
        id_file = Path(self.run_dir) / "wandb" / self.ID_FILE
        run_id = id_file.read_text().strip() if id_file.is_file() else ""
        if not run_id:
            run_id = secrets.token_hex(4)  # 8 lowercase characters, as W&B's own ids
            id_file.parent.mkdir(parents=True, exist_ok=True)
            id_file.write_text(run_id + "\n")
        self.run = wandb.init(
            project=self.project, dir=self.run_dir, config=self.config, name=self.name, id=run_id, resume="allow",
            mode=os.environ.get("WANDB_MODE", "offline"), reinit="create_new",
            settings=wandb.Settings(silent=True, console="off", x_disable_stats=True),
        )

    def log(self, record: TrainRecord) -> None:
        """Send ``record``'s scalars and its last episode's return to the W&B run."""
        data = {} if made_by_stop(record, self.log_every) else scalars(record)  # (no point of the uninterrupted run)
        if record.episodes:
            data["charts/episode_return"] = record.episodes[-1].episode_return
        if data:
            self.run.log(data, step=record.step)

    def close(self) -> None:
        """Finish the W&B run: exit code 1 (W&B shows it failed) when training ended in an error, a divergence
        or a second Ctrl-C, else 0 (also after a first Ctrl-C, which saves a resumable run)."""
        if self.run is not None:
            owner = self.owner
            failed = owner is not None and bool(getattr(owner, "error", None) or getattr(owner, "divergence", None)
                                                or getattr(owner, "_abort", False))
            self.run.finish(exit_code=1 if failed else 0)
