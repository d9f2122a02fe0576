"""summary.json's numbers belong to one moment: an error inside an iteration writes the last record's."""
from __future__ import annotations

import json
import time

import pyarrow.parquet as pq
import pytest

import canter


def test_an_error_inside_an_iteration_writes_the_last_records_wall_time(tmp_path):
    """A hook that raised in the iteration after step 512 left summary.json with the steps, episodes and
    evaluations of the last record (512) but the wall time of the moment it raised, an iteration (and here the
    hook's 0.3 s) later: steps / wall_seconds (the report's steps/s) was too low."""
    def slow_then_boom(trainer, losses):
        if trainer.step > 512:
            time.sleep(0.3)
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        canter.train("ppo", "CartPole-v1", n_envs=2, n_steps=256, max_steps=4096, eval_episodes=1, eval_every=0,
                     tensorboard=False, run_dir=tmp_path / "run", hooks={"after_update": slow_then_boom})
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    last = pq.read_table(tmp_path / "run" / "updates.parquet").to_pylist()[-1]
    assert summary["error"] == "RuntimeError: boom" and summary["steps"] == last["step"] == 512
    assert summary["wall_seconds"] == pytest.approx(last["wall_time"], abs=0.05), (summary, last)
