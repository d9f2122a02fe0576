"""The training clock across a stop and resume: a run's ``last`` keeps the wall time of its last record,
so the resumed run's first ``steps_per_second`` is the rate between the two records' ``step`` and ``wall_time``."""
from __future__ import annotations

import json
import time

import pyarrow.parquet as pq
import pytest

import canter
from canter.api import resume_trainer
from canter.checkpoint import read_metadata

PPO = dict(n_envs=2, n_steps=64, batch_size=64, n_epochs=1, eval_episodes=0, tensorboard=False,
           sets=["target_reward=null"])


def test_the_time_after_a_runs_last_record_is_not_on_its_resumed_clock(tmp_path):
    """Saving 'last' and the summary after the final record (here a slow consumer of that record) ran on
    the clock that the checkpoint kept: the resumed run's wall times went on from past the last record, and its
    first steps_per_second (timed from the resume) disagreed with the tables' step and wall-time differences."""
    run_dir = tmp_path / "run"
    with canter.make_trainer("ppo", "CartPole-v1", run_dir=run_dir, max_steps=256, seed=1, **PPO) as run:
        for record in run():
            if record.done:
                time.sleep(0.3)  # a logger or the caller's own work on the last record: not training
    assert read_metadata(run_dir / "checkpoints" / "last")["trainer"]["wall_time"] == record.wall_time
    assert json.loads((run_dir / "summary.json").read_text())["wall_seconds"] == round(record.wall_time, 3)
    last = record
    with resume_trainer(run_dir, max_steps=512) as resumed:
        first = next(iter(resumed()))
        rate = (first.step - last.step) / (first.wall_time - last.wall_time)
        assert first.steps_per_second == pytest.approx(rate, rel=1e-3)
    rows = pq.read_table(run_dir / "updates.parquet").to_pydict()
    assert rows["wall_time"][rows["step"].index(first.step)] == first.wall_time


def test_a_periodic_last_keeps_the_wall_time_of_its_record(tmp_path):
    """'last' saved at a periodic checkpoint (what a killed run resumes from) kept the clock at its save, after
    the record was logged: the resumed run went on from there, past the record its tables end at."""
    run_dir = tmp_path / "run"
    run = canter.make_trainer("ppo", "CartPole-v1", run_dir=run_dir, max_steps=512, seed=1, checkpoint_every=256,
                              hooks={"on_checkpoint": lambda trainer, path: time.sleep(0.1)}, **PPO)
    with run:
        for record in run():
            if record.step == 256:
                assert read_metadata(run_dir / "checkpoints" / "last")["trainer"]["wall_time"] == record.wall_time
                break
