"""Observation statistics leave out a finished episode's final observation, as Stable-Baselines3's VecNormalize
does (it returns the reset observation and keeps the final one in info["terminal_observation"], unfolded): canter's
next-step autoreset acts on the final observation once more, at the step that only resets the sub-env, and folded
it in there (9 extra observations in 256 CartPole steps)."""
from __future__ import annotations

import numpy as np
import pytest

import canter

RunningMeanStd = pytest.importorskip("stable_baselines3.common.running_mean_std").RunningMeanStd


@pytest.mark.parametrize("algo", ["ppo", "dqn"])
def test_observation_statistics_match_sb3s_on_a_cartpole_stream(algo):
    steps: list[tuple[np.ndarray, np.ndarray]] = []

    def record(trainer, step):
        steps.append((np.array(step.obs, np.float32), np.array(step.terminated | step.truncated)))

    hp = dict(n_steps=64) if algo == "ppo" else dict(learning_starts=1000)
    t = canter.make_trainer(algo, "CartPole-v1", n_envs=2, max_steps=256, normalize_obs=True, eval_every=0,
                            eval_episodes=1, seed=3, hooks={"on_env_step": record}, **hp)
    list(t())
    t.close()
    sb3 = RunningMeanStd(shape=(4,))
    after_done = np.zeros(2, bool)
    for obs, done in steps:  # the observations acted on, but not a final one acted on by the reset-only step
        if (~after_done).any():
            sb3.update(obs[~after_done])
        after_done = done
    assert sum(d.sum() for _, d in steps) > 3  # episodes ended
    assert t.agent.obs_rms.count == pytest.approx(sb3.count)
    np.testing.assert_allclose(t.agent.obs_rms.mean, sb3.mean, rtol=1e-9)
    np.testing.assert_allclose(t.agent.obs_rms.var, sb3.var, rtol=1e-9)
