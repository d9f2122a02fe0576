"""``canter train --record-every N``: record an evaluation episode as MP4 every N env steps.

:class:`VideoRecorder` is a logger (``start`` / ``log`` / ``close``, like the others in
:mod:`canter.logging`), so the trainer loop and the run wrapper are unchanged. Every ``every``
env steps, and once more at the end of training, it plays one episode with the policy the run's evaluations play
(``agent.predict``, or with ``eval_deterministic: false`` the policy's samples from a generator seeded with the
recording's seed) on a separate rendering env, through gymnasium's
``RecordVideo`` (:class:`canter.play_video.StreamingRecordVideo`: each frame is written as it comes), and keeps it as ``RUN_DIR/videos/step-000010000.mp4``. ``videos/index.json`` lists
the files with their step and episode return. Recording changes no training state: it uses its own
env, and neither ``predict`` nor the seeded samples draw from the training streams or update observation
statistics.

A resumed run (``canter train --resume``) keeps the index's entries up to the resumed checkpoint's
step and continues the grid (the next multiple of ``every`` after that step), so its videos are
those of an uninterrupted run. The episode seed of a recording is derived from its place on the
grid, not from the number of videos so far, so it is also the uninterrupted run's.
"""
from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from canter.atomic import atomic_write
from canter.errors import CanterError, require
from canter.trainers.base import TrainRecord
from canter.utils import global_rngs_kept


def check_video_support(env_id: str, env_kwargs: dict[str, Any] | None = None, vectorization: str = "sync") -> None:
    """Raise a CanterError now (before training) if moviepy or rendering ``env_id`` is unavailable."""
    from canter.play import make_render_env

    require("moviepy", "video", "--record-every")
    make_render_env(env_id, "rgb_array", 0, env_kwargs, vectorization).close()


def read_video_index(path: Path) -> list[dict[str, Any]]:
    """Every entry of the index file ``path`` (``[]`` if there is none); a CanterError naming the file
    if it is not a JSON list of ``{"file": str, "step": int, "return": number}`` mappings."""
    if not path.exists():
        return []
    try:
        entries = json.loads(path.read_text())
    except (OSError, ValueError) as exc:  # ValueError: JSONDecodeError and UnicodeDecodeError
        raise CanterError(f"cannot read '{path}': {str(exc).splitlines()[0]}") from None
    if not isinstance(entries, list) or not all(
            isinstance(e, dict) and isinstance(e.get("file"), str) and isinstance(e.get("step"), int)
            and isinstance(e.get("return"), (int, float)) for e in entries):
        raise CanterError(f"'{path}' is damaged: expected a list of {{file, step, return}} entries")
    return entries


def video_index(run_dir: str | Path) -> list[dict[str, Any]]:
    """Entries of ``videos/index.json`` whose file exists (file, step, return), oldest first."""
    path = Path(run_dir) / "videos" / "index.json"
    return [e for e in read_video_index(path) if (path.parent / e["file"]).exists()]


class VideoRecorder:
    """Logger that records one evaluation episode every ``every`` env steps and at the end, on the run's
    own env path (``vectorization``, the run's: an Atari run trained on ale-py's native env is recorded there)."""

    def __init__(self, run_dir: str | Path, env_id: str, every: int, env_kwargs: dict[str, Any] | None = None,
                 seed: int = 0, vectorization: str = "auto") -> None:
        from canter.envs.make import inherited_vectorization

        self.vectorization = inherited_vectorization(vectorization, env_id, env_kwargs)
        check_video_support(env_id, env_kwargs, self.vectorization)
        self.dir = Path(run_dir) / "videos"
        self.env_id, self.every, self.env_kwargs, self.seed = env_id, every, dict(env_kwargs or {}), seed
        self.next_step = every
        self.last_step: int | None = None
        self.entries: list[dict[str, Any]] = []
        self.agent: Any = None
        # a resumed run's index, read now so that a damaged one is refused before anything is written
        self._stored = read_video_index(self.dir / "index.json")

    def start(self, run: Any) -> None:
        """Remember the run's agent and remove the temporary folders of recordings a killed process left;
        on a resumed run, reload the index up to the resumed step and continue the grid after it."""
        self.agent = run.agent
        for stale in self.dir.glob(".rec-*"):  # the temporary folder of a recording its process was killed in
            shutil.rmtree(stale, ignore_errors=True)
        step = getattr(run, "resumed_step", None)
        if step is not None:
            self.entries = [e for e in self._stored if e["step"] <= step]
            self.last_step = self.entries[-1]["step"] if self.entries else None
            # the grid goes on after the last recording (a stop that recorded nothing left its point due)
            self.next_step = (self.last_step // self.every + 1) * self.every if self.entries else self.every

    def log(self, record: TrainRecord) -> None:
        """Record when ``record.step`` has passed the next multiple of ``every``, or training is done.

        A Ctrl-C / SIGTERM stop (``interrupted``) is not the end of training, and a record that only the
        stop made (between two logged iterations) is not one of an uninterrupted run's: neither records,
        so a resumed run's videos are the uninterrupted run's."""
        interrupted = record.stop_reason == "interrupted"
        if (record.step >= self.next_step and not record.stop_only) or (
                record.done and not interrupted and record.step != self.last_step):
            self.record(record.step)
            while self.next_step <= record.step:
                self.next_step += self.every

    def record(self, step: int) -> Path | None:
        """Play one episode now and save it as ``videos/step-NNNNNNNNN.mp4`` (None, nothing saved, where the env
        stopped returning frames during the episode: :class:`canter.play_video.StreamingRecordVideo` keeps no cut video).

        The episode's seed is ``seed + 10_007 + k`` where ``next_step`` is the ``(k + 1)``-th multiple of
        ``every`` (so the recordings of an uninterrupted run get ``k`` = 0, 1, 2, ... and a resumed run
        the same ``k`` at the same steps; a recording at the end of training, between two multiples,
        takes the ``k`` of the next one). The global random streams (Python's, NumPy's, torch's) are put back as
        they were: an env drawing from them (``np.random.rand``) changed the training after a recording.
        """
        from canter.play import play

        self.dir.mkdir(parents=True, exist_ok=True)
        target = self.dir / f"step-{step:09d}.mp4"
        seed = self.seed + 10_007 + self.next_step // self.every - 1
        with global_rngs_kept(), tempfile.TemporaryDirectory(dir=self.dir, prefix=".rec-") as tmp:
            folder = Path(tmp) / "video"
            (ret,) = play(self.agent, self.env_id, 1, video_dir=str(folder), seed=seed, env_kwargs=self.env_kwargs,
                          vectorization=self.vectorization)
            found = list(folder.glob("*.mp4"))
            if not found:  # (its warning said why)
                return None
            found[0].replace(target)
        self.last_step = step
        self.entries.append({"file": target.name, "step": step, "return": ret})
        atomic_write(self.dir / "index.json", json.dumps(self.entries, indent=1).encode())
        return target

    def close(self) -> None:
        """Nothing to release: each recording closes its env."""
