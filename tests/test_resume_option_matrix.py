"""Exact resume with the options that carry state across a checkpoint (normalisation statistics, prioritized and
n-step replay, LR schedules, plateau and early-stopping counters, sampled evaluations, gSDE, OU noise): a run
stopped after an update and resumed ends with the uninterrupted run's weights and the same history, update and
evaluation rows, bit for bit. ``test_determinism`` checks every algorithm with its default options and weights only."""
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import torch

import canter
from canter.checkpoint import flatten_state
from test_determinism import SMALL, _env_for, offline_kwargs

CASES = {
    "ppo": ({"normalize_obs": True, "normalize_reward": True, "lr_schedule": "linear", "clip_schedule": "linear"},
            {"plateau_patience": 1, "early_stopping": 50, "eval_deterministic": False}),
    "recurrent_ppo": ({"normalize_obs": True, "normalize_reward": True}, {"lr_decay": "cosine", "log_every": 3}),
    "dqn": ({"prioritized": True, "n_step": 3, "noisy": True, "normalize_obs": True},
            {"lr_decay": "step", "lr_decay_every": 150, "plateau_patience": 1, "monitor": "rolling", "reward_window": 5}),
    "sac": ({"prioritized": True, "n_step": 3, "use_sde": True, "sde_sample_freq": 4, "normalize_reward": True},
            {"eval_deterministic": False, "checkpoint_every": 100, "keep_checkpoints": 2}),
    "td3": ({"action_noise": "ou", "train_freq": 1, "train_freq_unit": "episode"}, {"lr_decay": "cosine"}),
    "cql": ({"normalize_obs": True}, {"plateau_patience": 1, "log_every": 3}),
}


def _rows(run_dir: Path) -> dict:
    """Every parquet file's columns, the wall-clock ones left out."""
    out = {}
    for path in sorted(run_dir.glob("*.parquet")):
        table = pq.read_table(path)
        out[path.name] = {c: table.column(c).to_pylist() for c in table.column_names
                          if c not in ("wall_time", "steps_per_second")}
    return out


@pytest.mark.slow
@pytest.mark.parametrize("algo", sorted(CASES))
def test_a_run_with_stateful_options_resumes_exactly(algo, tmp_path):
    hparams, run_options = CASES[algo]
    env_id = _env_for(algo)
    common = dict(env=env_id, seed=5, n_envs=2, max_steps=800, eval_every=200, eval_episodes=2, quiet=True,
                  tensorboard=False, target_reward=None, **{**SMALL.get(algo, {}), **hparams}, **run_options,
                  **offline_kwargs(algo, env_id))
    whole = canter.train(algo, run_dir=tmp_path / "whole", **common)

    def interrupt(trainer, losses):
        if trainer.step >= 400 and trainer.stop_requested is None:
            trainer.stop_requested = "interrupted"

    canter.train(algo, run_dir=tmp_path / "part", hooks={"after_update": interrupt}, **common)
    assert _rows(tmp_path / "part") != _rows(tmp_path / "whole")  # it did stop short
    resumed = canter.resume(tmp_path / "part")
    (skeleton_a, a), (skeleton_b, b) = flatten_state(whole.state_dict()), flatten_state(resumed.state_dict())
    assert skeleton_a == skeleton_b and [k for k in a if not torch.equal(a[k], b[k])] == []
    assert _rows(tmp_path / "part") == _rows(tmp_path / "whole")
    # periodic checkpoints (sac's checkpoint_every, keep_checkpoints): the same step-N files kept (rows do not show them)
    names = [sorted(p.name for p in (tmp_path / run / "checkpoints").iterdir()) for run in ("part", "whole")]
    assert names[0] == names[1], names
