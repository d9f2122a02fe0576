"""keep_checkpoints on a resumed run whose 'last' is older than a periodic checkpoint (a process killed between
saving step-N and saving last): that checkpoint is not counted among the newest K, and once the resumed run has
passed its step without saving it again (another --checkpoint-every), it is deleted (canter/checkpoint_keep.py)."""
from __future__ import annotations

import shutil

import canter
from canter.checkpoint_keep import periodic_checkpoints, prune_periodic
from test_keep_checkpoints import PPO, _fake_checkpoints, _steps


def _stale_copy(run_dir, src: int, dst: int) -> None:
    folder = run_dir / "checkpoints"
    for suffix in (".json", ".safetensors"):
        shutil.copy(folder / f"step-{src:09d}{suffix}", folder / f"step-{dst:09d}{suffix}")


def test_a_stale_checkpoint_does_not_push_out_the_resumed_runs_own(tmp_path):
    """Resumed at 128 on a 128-step grid, the killed process's step-192 was never saved again: at 256 it
    counted among the newest 2 and step-128 went instead."""
    run_dir = tmp_path / "run"
    canter.train("ppo", "CartPole-v1", run_dir=run_dir, max_steps=128, keep_checkpoints=2, **PPO)
    _stale_copy(run_dir, 128, 192)
    assert _steps(run_dir) == [64, 128, 192]
    canter.resume(run_dir, max_steps=256, checkpoint_every=128)
    assert _steps(run_dir) == [128, 256]


def test_a_stale_checkpoint_saved_again_counts_as_the_runs_own(tmp_path):
    """On the same grid the resumed run saves step-192 again: it is its own, one of the newest K."""
    run_dir = tmp_path / "run"
    canter.train("ppo", "CartPole-v1", run_dir=run_dir, max_steps=128, keep_checkpoints=2, **PPO)
    _stale_copy(run_dir, 128, 192)
    canter.resume(run_dir, max_steps=256)
    assert _steps(run_dir) == [192, 256]


def test_prune_deletes_stale_checkpoints_up_to_the_step_saved_without_counting_them(tmp_path):
    _fake_checkpoints(tmp_path, [f"step-{s:09d}" for s in (100, 200, 250, 300, 900)])
    assert prune_periodic(tmp_path, 2, 300, stale={250, 900}) == ["step-000000100", "step-000000250"]
    assert sorted(periodic_checkpoints(tmp_path)) == [200, 300, 900]
