"""A resumed run's TensorBoard points as every TensorBoard loader reads them: the killed process's points after
the checkpoint hidden, the resumed run's in their place."""
from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest


def _log(run_dir: Path, steps: range, value: float, resumed_step: int | None = None, pid: int = 1) -> None:
    """A TensorBoard logger's file with one steps/s point of ``value`` at each of ``steps``, named as a process
    ``pid``'s (so two parts of a run have a file each, as two processes do)."""
    from canter.logging.tensorboard import TensorBoardLogger
    from canter.trainers import TrainRecord

    logger = TensorBoardLogger(run_dir)
    logger.start(SimpleNamespace(resumed_step=resumed_step))
    for i, step in enumerate(steps):
        logger.log(TrainRecord(step=step, iteration=i, wall_time=float(i), steps_per_second=value))
    logger.close()
    path = logger.writer.path
    time_, host = path.name.split(".")[3:5]
    os.replace(path, path.with_name(f"events.out.tfevents.{int(time_) - 10 + pid}.{host}.{pid}.0"))


def _points(run_dir: Path, loader: str) -> list[tuple[int, float]]:
    if loader == "plugin":  # what `tensorboard --load_fast=false` serves
        from tensorboard.backend.event_processing import plugin_event_accumulator as pea
        from tensorboard.util import tensor_util

        acc = pea.EventAccumulator(str(run_dir), size_guidance={"tensors": 0})
        acc.Reload()
        return [(e.step, float(tensor_util.make_ndarray(e.tensor_proto))) for e in acc.Tensors("charts/steps_per_second")]
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(run_dir), size_guidance={"scalars": 0})
    acc.Reload()
    return [(e.step, e.value) for e in acc.Scalars("charts/steps_per_second")]


@pytest.mark.parametrize("loader", ["plugin", "legacy"])
def test_a_killed_runs_points_after_its_checkpoint_are_hidden_in_every_loader(tmp_path, loader):
    """A run killed at step 500 after its checkpoint at 300, resumed: TensorBoard's Python loader (the
    plugin_event_accumulator of `tensorboard --load_fast=false`) showed the killed process's 400 and 500 beside
    the resumed run's (a PPO CartPole run resumed after a kill -9: 7 steps/s points twice, its steps going back),
    as it takes a run's first SessionLog START as the run's start, and canter's first file had none."""
    _log(tmp_path, range(100, 501, 100), 1.0)
    _log(tmp_path, range(400, 601, 100), 2.0, resumed_step=300, pid=2)
    assert _points(tmp_path, loader) == [(100, 1.0), (200, 1.0), (300, 1.0), (400, 2.0), (500, 2.0), (600, 2.0)]


def test_a_run_whose_first_file_has_no_start_is_purged_too(tmp_path):
    """A run directory written before its first file had a START (2026-11-27): the resumed run's START, written
    twice, is a restart to the Python loader all the same."""
    from canter.logging.tensorboard import EventFileWriter

    writer = EventFileWriter(tmp_path)  # the old first file: file version, then points
    for step in range(100, 501, 100):
        writer.add_scalar("charts/steps_per_second", 1.0, step)
    writer.close()
    os.replace(writer.path, writer.path.with_name("events.out.tfevents.1000000000.host.1.0"))
    _log(tmp_path, range(400, 501, 100), 2.0, resumed_step=300, pid=2)
    assert _points(tmp_path, "plugin") == [(100, 1.0), (200, 1.0), (300, 1.0), (400, 2.0), (500, 2.0)]
