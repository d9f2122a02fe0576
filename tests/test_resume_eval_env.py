"""The evaluation env across a resume: an env keeping state across its episodes (a wrapper's running observation
statistics) evaluates a resumed run as it evaluates the uninterrupted one."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pyarrow.parquet as pq
import pytest

import canter


@canter.register("env", "CanterTestNormCartPole-v0")
def _norm_cartpole(render_mode=None, **kw):
    """CartPole behind gymnasium's NormalizeObservation: its statistics go on across episodes and evaluations."""
    return gym.wrappers.NormalizeObservation(gym.make("CartPole-v1", render_mode=render_mode, **kw))


KW = dict(n_envs=2, n_steps=32, batch_size=64, n_epochs=1, eval_every=128, eval_episodes=1, eval_envs=1,
          tensorboard=False, seed=3, quiet=True)


def _obs_rms(trainer):
    return trainer.eval_env.env.envs[0].obs_rms


def test_the_eval_envs_state_is_saved_and_restored():
    """The evaluation env was not in the resume state: a resumed run evaluated on a new one."""
    trainer = canter.make_trainer("ppo", "CanterTestNormCartPole-v0", max_steps=128, **KW)
    list(trainer())
    state = trainer.resume_state()
    assert _obs_rms(trainer).count > 1 and state["eval_env"] is not None
    other = canter.make_trainer("ppo", "CanterTestNormCartPole-v0", max_steps=128, **KW)
    other.setup()
    other.obs = other.env.reset(seed=3)
    other.load_resume_state(state)
    assert _obs_rms(other).count == _obs_rms(trainer).count
    np.testing.assert_array_equal(_obs_rms(other).mean, _obs_rms(trainer).mean)
    trainer.close()
    other.close()


@pytest.mark.slow
def test_a_resumed_run_evaluates_as_the_uninterrupted_one(tmp_path):
    def interrupt(trainer, losses):
        if trainer.step >= 200 and trainer.resume_exact is None and trainer.stop_requested is None:
            trainer.stop_requested = "interrupted"

    canter.train("ppo", "CanterTestNormCartPole-v0", max_steps=640, run_dir=tmp_path / "whole", **KW)
    canter.train("ppo", "CanterTestNormCartPole-v0", max_steps=640, run_dir=tmp_path / "part",
                 hooks={"after_update": interrupt}, **KW)
    canter.resume(tmp_path / "part")
    whole, part = (pq.read_table(tmp_path / d / "evaluations.parquet").drop(["wall_time"]).to_pylist()
                   for d in ("whole", "part"))
    assert len(whole) == 5 and part == whole
