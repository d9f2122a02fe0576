"""The value a rollout bootstraps from is of its last observations normalised as Stable-Baselines3's
``VecNormalize`` returned them: with statistics that have taken them in (as every other row of the rollout was)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import canter
from canter.data.rollout import RolloutBuffer

RunningMeanStd = pytest.importorskip("stable_baselines3.common.running_mean_std").RunningMeanStd


@pytest.mark.parametrize("algo", ["ppo", "a2c", "recurrent_ppo"])
def test_the_bootstrap_value_sees_the_last_observations_as_sb3s_vecnormalize_returns_them(algo, monkeypatch):
    """canter normalised the rollout's last observations with statistics that had not taken them in yet (the next
    rollout's first step does), where SB3's VecNormalize folds each observation it returns into its statistics
    first: after the first rollout of 8 vector steps of 2 envs the bootstrap values were -0.059 where -0.027."""
    seen: list[np.ndarray] = []
    got: dict[str, torch.Tensor] = {}

    def record(trainer, step):
        seen.append(np.array(step.obs, dtype=np.float32))
        got["next"] = np.array(step.next_obs, dtype=np.float32)

    trainer = canter.make_trainer(algo, "CartPole-v1", n_envs=2, n_steps=8, max_steps=16,
                                  normalize_obs=True, eval_every=0, eval_episodes=1, seed=3,
                                  hooks={"on_env_step": record})
    agent = trainer.agent

    def capture(finish):
        def wrapped(self, last_values, *args, **kwargs):
            if "last" not in got:
                rms = RunningMeanStd(shape=(4,))  # SB3's: every observation acted on, in turn, then the last
                for obs in [*seen, got["next"]]:
                    rms.update(obs)
                x = np.clip((got["next"] - rms.mean) / np.sqrt(rms.var + 1e-8), -10, 10).astype(np.float32)
                got["last"], got["expected"] = last_values.clone(), _value(agent, x)
                got["count"] = agent.obs_rms.count
            return finish(self, last_values, *args, **kwargs)
        return wrapped

    monkeypatch.setattr(RolloutBuffer, "finish", capture(RolloutBuffer.finish))
    monkeypatch.setattr(RolloutBuffer, "finish_sequences", capture(RolloutBuffer.finish_sequences))
    list(trainer())
    trainer.close()
    assert got["count"] == pytest.approx(16, abs=1e-3)  # the statistics themselves are left for the next rollout's first step
    np.testing.assert_allclose(got["last"].numpy(), got["expected"].numpy(), rtol=1e-5, atol=1e-6)


def _value(agent, x: np.ndarray) -> torch.Tensor:
    """The critic's values of observations normalised already (the recurrent agent: from its training memory)."""
    with torch.inference_mode():
        if hasattr(agent.algorithm, "value_recurrent"):
            return agent.algorithm.value_recurrent(torch.from_numpy(x), agent.memory["sample"])
        return agent.algorithm.value(torch.from_numpy(x))
