"""The loggers a run directory gets by default (:func:`default_loggers`): history always; TensorBoard, W&B, videos
and the console as the run's config says."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from canter.config import RunConfig
from canter.envs.make import eval_env_kwargs
from canter.envs.opponents import run_snapshots, with_snapshots


def default_loggers(run: RunConfig, config: dict[str, Any], run_dir: str | Path, quiet: bool,
                    snapshots: dict[str, str] | None = None, resumed: bool = False) -> list[Any]:
    """History always; TensorBoard and W&B as configured; the console unless ``quiet``. Videos play the run's
    opponent ``snapshots`` (a new run's staged ones; else its run directory's). ``resumed``: a resumed run that logged to W&B
    already, whose missing wandb is named with the way on without it (``--no-wandb``)."""
    from canter.logging.history import HistoryLogger

    # the loggers that can fail for a missing extra (or an env that cannot render) come first: nothing
    # may be written to the run directory before such an error
    video = None
    if run.record_every:
        from canter.tools.video import VideoRecorder

        files = run_snapshots(run_dir) if snapshots is None else snapshots
        video = VideoRecorder(run_dir, run.env, run.record_every, with_snapshots(eval_env_kwargs(run), files), run.seed,
                              run.vectorization)
    if run.wandb:
        from canter.logging.wandb import require_wandb

        require_wandb(resumed)
    loggers: list[Any] = [HistoryLogger(run_dir)]
    if run.tensorboard:
        from canter.logging.tensorboard import TensorBoardLogger

        loggers.append(TensorBoardLogger(run_dir))
    if run.wandb:
        from canter.logging.wandb import WandbLogger

        # the directory's own name, also where it was given as '.' or '..' (whose Path.name is '' or '..')
        name = Path(os.path.abspath(run_dir)).name
        loggers.append(WandbLogger(run_dir, run.wandb_project, config, name=name))
    if video is not None:
        loggers.append(video)
    if not quiet:  # rich, imported with the console's module, only where the console is shown
        from canter.logging.console import ConsoleLogger

        loggers.append(ConsoleLogger(run.max_steps, f"{run.algo} {run.env}"))
    return loggers
