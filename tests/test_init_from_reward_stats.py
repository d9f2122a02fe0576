"""init_from carries the reward-normalisation statistics (normalize_reward) of its source, as rl-zoo3 keeps the
VecNormalize statistics of a trained agent it continues: they restarted at var 1 while the critic had learned on
rewards scaled by the source's. Each env's running return is not carried."""
from __future__ import annotations

import numpy as np
import pytest

import canter

TINY = dict(env="CartPole-v1", n_envs=2, n_steps=32, batch_size=64, n_epochs=1, eval_episodes=1, eval_every=0,
            target_reward=None, seed=0)


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("reward_stats") / "source"
    agent = canter.train("ppo", run_dir=run_dir, max_steps=64, normalize_reward=True, quiet=True, **TINY)
    assert agent.ret_rms.var > 10 and np.abs(agent._returns).sum() > 0  # moved away from (0, 1); episodes under way
    return run_dir, agent


def test_init_from_starts_with_the_sources_reward_statistics(source):
    run_dir, agent = source
    with canter.make_trainer("ppo", init_from=str(run_dir), max_steps=64, normalize_reward=True, **TINY) as t:
        got, want = t.agent.ret_rms.state_dict(), agent.ret_rms.state_dict()
        assert {k: float(v) for k, v in got.items()} == {k: float(v) for k, v in want.items()}
        np.testing.assert_array_equal(t.agent._returns, 0.0)  # the running returns start with the new run's envs


def test_a_run_without_reward_normalisation_is_refused(source, tmp_path):
    """A run without normalize_reward took the source's networks without a word (and no statistics): its critic had
    learned on rewards scaled by them. Refused in one line, as normalize_obs and normalize_value mismatches are, and
    before the run directory is written."""
    run_dir, _ = source
    with pytest.raises(canter.CanterError, match=r"^init_from '.*': its run scaled rewards \(normalize_reward\), and "
                                                 r"its critic learned on them so: set normalize_reward=true$"):
        canter.train("ppo", init_from=str(run_dir), run_dir=tmp_path / "run", max_steps=64, **TINY)
    assert not (tmp_path / "run").exists()


def test_a_source_without_reward_normalisation_is_refused_where_the_run_scales_them(tmp_path):
    canter.train("ppo", run_dir=tmp_path / "plain", max_steps=64, quiet=True, **TINY)
    with pytest.raises(canter.CanterError, match=r"its run did not scale rewards \(normalize_reward\), .*: set "
                                                 r"normalize_reward=false$"):
        canter.make_trainer("ppo", init_from=str(tmp_path / "plain"), max_steps=64, normalize_reward=True, **TINY)
