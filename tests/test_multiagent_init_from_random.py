"""``init_from`` a multi-policy run where a policy acts at random, here or in the source: the observation
normalisation check (init_from._check_normalisation) leaves it alone, as a random policy has no networks to feed."""
from __future__ import annotations

import pytest

pytest.importorskip("pettingzoo")

import canter  # noqa: E402
from support import MIXED  # noqa: E402

SHORT = dict(env=MIXED, policies="type", seed=3, target_reward=None, n_envs=1, n_steps=32, batch_size=32, n_epochs=1,
             eval_every=0, max_steps=96, quiet=True, normalize_obs=True)
RANDOM_LISTENER = {"listener": {"algo": "random"}}


def test_a_random_policy_here_takes_a_normalised_sources_run(tmp_path):
    """A listener acting at random over a source whose listener normalised observations was refused ('set
    policy_hparams.listener.normalize_obs=true', which it was): it loaded before the per-policy check, and loads."""
    canter.train("ppo", run_dir=tmp_path / "source", **SHORT)
    agent = canter.train("ppo", run_dir=tmp_path / "run", init_from=str(tmp_path / "source"),
                         policy_hparams=RANDOM_LISTENER, **SHORT)
    assert agent.agents["speaker"].obs_rms is not None


def test_a_random_policy_of_the_source_is_named_as_random(tmp_path):
    """A source whose listener acted at random was refused for its normalisation ('did not normalise observations'),
    not for what it is: a policy without networks to load."""
    canter.train("ppo", run_dir=tmp_path / "source", policy_hparams=RANDOM_LISTENER, **SHORT)
    with pytest.raises(canter.CanterError, match=r"its policy 'listener' acted at random \(algo: random\)"):
        canter.train("ppo", run_dir=tmp_path / "run", init_from=str(tmp_path / "source"), **SHORT)
