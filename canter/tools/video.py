"""``canter train --record-every N``: record an evaluation episode as MP4 every N env steps.

:class:`VideoRecorder` is a logger (``start`` / ``log`` / ``close``, like the others in
:mod:`canter.logging`), so the trainer loop and the run wrapper are unchanged. Every ``every``
env steps, and once more at the end of training, it plays one episode with the deterministic
policy (``agent.predict``, as evaluation does) on a separate rendering env, through gymnasium's
``RecordVideo``, and keeps it as ``RUN_DIR/videos/step-000010000.mp4``. ``videos/index.json`` lists
the files with their step and episode return. Recording changes no training state: it uses its own
env and ``predict`` neither samples nor updates observation statistics.
"""
from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from canter.checkpoint import atomic_write
from canter.errors import require
from canter.trainers.base import TrainRecord


def check_video_support(env_id: str, env_kwargs: dict[str, Any] | None = None) -> None:
    """Raise a CanterError now (before training) if moviepy or rendering ``env_id`` is unavailable."""
    from canter.play import make_render_env

    require("moviepy", "video", "--record-every")
    make_render_env(env_id, "rgb_array", 0, env_kwargs).close()


def video_index(run_dir: str | Path) -> list[dict[str, Any]]:
    """Entries of ``videos/index.json`` whose file exists (file, step, return), oldest first."""
    path = Path(run_dir) / "videos" / "index.json"
    if not path.exists():
        return []
    entries = json.loads(path.read_text())
    return [e for e in entries if (path.parent / e["file"]).exists()]


class VideoRecorder:
    """Logger that records one deterministic episode every ``every`` env steps and at the end."""

    def __init__(self, run_dir: str | Path, env_id: str, every: int, env_kwargs: dict[str, Any] | None = None,
                 seed: int = 0) -> None:
        check_video_support(env_id, env_kwargs)
        self.dir = Path(run_dir) / "videos"
        self.env_id, self.every, self.env_kwargs, self.seed = env_id, every, dict(env_kwargs or {}), seed
        self.next_step = every
        self.last_step: int | None = None
        self.entries: list[dict[str, Any]] = []
        self.agent: Any = None

    def start(self, run: Any) -> None:
        """Remember the run's agent."""
        self.agent = run.agent

    def log(self, record: TrainRecord) -> None:
        """Record when ``record.step`` has passed the next multiple of ``every``, or training is done."""
        if record.step >= self.next_step or (record.done and record.step != self.last_step):
            self.record(record.step)
            while self.next_step <= record.step:
                self.next_step += self.every

    def record(self, step: int) -> Path:
        """Play one episode now and save it as ``videos/step-NNNNNNNNN.mp4``."""
        from canter.play import play

        self.dir.mkdir(parents=True, exist_ok=True)
        target = self.dir / f"step-{step:09d}.mp4"
        with tempfile.TemporaryDirectory(dir=self.dir, prefix=".rec-") as tmp:
            folder = Path(tmp) / "video"
            (ret,) = play(self.agent, self.env_id, 1, video_dir=str(folder), seed=self.seed + 10_007 + len(self.entries),
                          env_kwargs=self.env_kwargs)
            (mp4,) = folder.glob("*.mp4")
            mp4.replace(target)
        self.last_step = step
        self.entries.append({"file": target.name, "step": step, "return": ret})
        atomic_write(self.dir / "index.json", json.dumps(self.entries, indent=1).encode())
        return target

    def close(self) -> None:
        """Nothing to release: each recording closes its env."""
