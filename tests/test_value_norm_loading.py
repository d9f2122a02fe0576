"""PPO's value normalisation statistics (``normalize_value``, on by default for MAPPO) belong to its critic: the
critic outputs returns standardised by them, so an agent loaded for its weights (``canter.load``, ``init_from``)
needs them as much as the weights."""
from __future__ import annotations

import numpy as np
import pytest
import canter
from canter.errors import CanterError

TINY = dict(env="CartPole-v1", n_envs=2, n_steps=32, batch_size=64, n_epochs=1, eval_episodes=1, eval_every=0,
            target_reward=None, seed=0)
OBS = np.array([[0.0, 0.0, 0.0, 0.0], [0.1, -0.2, 0.05, 0.3]], np.float32)


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """A tiny PPO run with value normalisation, and its agent."""
    run_dir = tmp_path_factory.mktemp("value_norm") / "source"
    agent = canter.train("ppo", run_dir=run_dir, max_steps=64, normalize_value=True, **TINY)
    assert abs(float(agent.algorithm.value_rms.mean)) > 1  # the statistics moved away from (0, 1)
    return run_dir, agent


def test_a_loaded_agent_has_the_critics_value_statistics(source):
    """canter.load (weights only) left value_rms at mean 0, var 1: agent.value gave the critic's standardised
    outputs (about 0) where the trained agent gave returns (about 10 on CartPole)."""
    run_dir, agent = source
    loaded = canter.load(run_dir)
    assert loaded.algorithm.value_rms.state_dict() == agent.algorithm.value_rms.state_dict()
    np.testing.assert_array_equal(loaded.value(OBS).numpy(), agent.value(OBS).numpy())


def test_init_from_starts_with_the_critics_value_statistics(source):
    run_dir, agent = source
    with canter.make_trainer("ppo", init_from=str(run_dir), max_steps=64, normalize_value=True, **TINY) as t:
        np.testing.assert_array_equal(t.agent.value(OBS).numpy(), agent.value(OBS).numpy())


@pytest.mark.parametrize("theirs, ours", [(True, False), (False, True)])
def test_init_from_refuses_another_normalize_value(source, tmp_path, theirs, ours):
    """A critic trained on standardised returns read as raw ones (or the other way round) was loaded silently."""
    run_dir = source[0] if theirs else tmp_path / "plain"
    if not theirs:
        canter.train("ppo", run_dir=run_dir, max_steps=64, **TINY)
    with pytest.raises(CanterError) as exc:
        canter.make_trainer("ppo", init_from=str(run_dir), max_steps=64, normalize_value=ours, **TINY)
    message = str(exc.value)
    assert f"set normalize_value={str(theirs).lower()}" in message and "\n" not in message
