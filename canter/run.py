"""A run directory around a trainer: config, loggers, checkpoints (best/last/periodic), summary.

``Run(trainer, run_dir, config)()`` yields exactly the trainer's records while writing::

    RUN_DIR/config.yaml            fully resolved config
    RUN_DIR/history.parquet        one row per finished training episode
    RUN_DIR/updates.parquet        update statistics; evaluations.parquet: evaluations
    RUN_DIR/events.out.tfevents.*  TensorBoard
    RUN_DIR/checkpoints/           best, last, step-000050000 (.safetensors + .json)
    RUN_DIR/summary.json           written at the end (also after Ctrl-C)
"""
from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from canter.checkpoint import atomic_write, save_checkpoint
from canter.envs.spaces import space_to_dict
from canter.errors import CanterError
from canter.trainers.base import Trainer, TrainRecord
from canter.utils import canter_version, git_commit


def new_run_dir(algo: str, env: str, base: str | Path = "runs") -> Path:
    """``runs/<algo>-<env>-<timestamp>-<gitsha8>``, made unique if it exists."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    name = f"{algo.replace(':', '-')}-{env.replace('/', '-').replace(':', '-')}-{stamp}-{git_commit() or 'nogit'}"
    path = Path(base) / name
    i = 1
    while path.exists():
        path = Path(base) / f"{name}-{i}"
        i += 1
    return path


def check_new_run_dir(path: str | Path) -> Path:
    """Refuse to write into a directory that already holds files (nothing is overwritten)."""
    path = Path(path)
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise CanterError(f"run directory '{path}' already exists and is not empty; choose another --run-dir")
    return path


class Run:
    """Wraps a trainer's generator with the run directory's loggers and checkpoints."""

    def __init__(self, trainer: Trainer, run_dir: str | Path, config: dict[str, Any], loggers: list[Any] = (),
                 checkpoint_every: int = 0) -> None:
        self.trainer = trainer
        self.dir = Path(run_dir)
        self.config = config
        self.loggers = list(loggers)
        self.checkpoint_every = checkpoint_every
        self.summary: dict[str, Any] | None = None
        self.last_record: TrainRecord | None = None

    @property
    def agent(self) -> Any:
        """The trained agent."""
        return self.trainer.agent

    def close(self) -> None:
        """Close the trainer's envs."""
        self.trainer.close()

    def metadata(self) -> dict[str, Any]:
        """Checkpoint metadata: what produced it and for which spaces."""
        agent = self.trainer.agent
        return {
            "algorithm": self.config["algo"], "env": self.config["env"], "step": self.trainer.step,
            "observation_space": space_to_dict(agent.observation_space),
            "action_space": space_to_dict(agent.action_space),
            "canter_version": canter_version(), "git_commit": git_commit(), "config": self.config,
            "trainer": self.trainer.state(),
        }

    def save(self, name: str) -> Path:
        """Save a checkpoint named ``name`` under ``checkpoints/``."""
        state = {"agent": self.trainer.agent.state_dict()}
        return save_checkpoint(self.dir / "checkpoints" / name, state, self.metadata())

    def _write_summary(self, interrupted: bool) -> None:
        t = self.trainer
        target = self.config.get("target_reward")
        last = None if t.last_eval is None else t.last_eval.mean_return
        self.summary = {
            "algorithm": self.config["algo"], "env": self.config["env"], "seed": self.config["seed"],
            "steps": t.step, "episodes": t.episode_count, "updates": t.algorithm.updates,
            "wall_seconds": round(t.wall_time(), 3), "best_eval_return": t.best_eval_return,
            "last_eval_return": last, "target_reward": target,
            "solved": bool(target is not None and t.best_eval_return is not None and t.best_eval_return >= target),
            "stop_reason": "interrupted" if interrupted else getattr(self.last_record, "stop_reason", None),
            "canter_version": canter_version(), "git_commit": git_commit(),
        }
        atomic_write(self.dir / "summary.json", json.dumps(self.summary, indent=2).encode())

    def __call__(self) -> Iterator[TrainRecord]:
        """Run training, writing the run directory; yields the trainer's records."""
        self.dir.mkdir(parents=True, exist_ok=True)
        atomic_write(self.dir / "config.yaml", yaml.safe_dump(self.config, sort_keys=False).encode())
        for lg in self.loggers:
            lg.start(self)
        next_ckpt = self.checkpoint_every or None
        interrupted = True
        try:
            for record in self.trainer():
                self.last_record = record
                for lg in self.loggers:
                    lg.log(record)
                if record.new_best:
                    self.save("best")
                if next_ckpt is not None and record.step >= next_ckpt:
                    self.save(f"step-{record.step:09d}")
                    while next_ckpt <= record.step:
                        next_ckpt += self.checkpoint_every
                yield record
            interrupted = False
        finally:
            try:
                if self.trainer.wall_start:
                    self.save("last")
                    self._write_summary(interrupted)
            finally:
                for lg in self.loggers:
                    lg.close()
