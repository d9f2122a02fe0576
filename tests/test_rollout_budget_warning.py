"""A budget below one on-policy rollout takes the whole rollout (as Stable-Baselines3 does), and the warning says how
to make one fit: ``canter train ppo --env pettingzoo:tests.match_agents --max-steps 512`` took 32,768 steps (n_steps
2048 x 8 copies x 2 agents) and its warning called the 16 agent rows '16 envs' and named no setting to lower."""
from __future__ import annotations

import warnings

import pytest

import canter
from canter.errors import CanterWarning
from canter.trainers.on_policy import rollout_budget_message


def _rollout_warnings(**kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer = canter.make_trainer("ppo", eval_episodes=0, **kwargs)
    return trainer, [str(w.message) for w in caught if "less than one rollout" in str(w.message)]


def test_the_message_names_the_rollout_and_the_n_steps_that_fits():
    assert rollout_budget_message(512, 2048, 8, 8) == (
        "max_steps (512) is less than one rollout (n_steps 2048 x 8 envs = 16,384 steps; --set n_steps=64 makes one "
        "fit): the run takes 16,384 steps")
    agents = rollout_budget_message(512, 2048, 16, 8)
    assert "n_steps 2048 x 16 agent rows (8 env copies x 2 agents) = 32,768 steps; --set n_steps=32 makes" in agents
    assert "x 2 agent rows (1 env copy x 2 agents)" in rollout_budget_message(10, 64, 2, 1)
    assert "fewer envs (--n-envs) and n_steps 1 make one fit" in rollout_budget_message(10, 2048, 16, 8)


def test_a_multi_agent_runs_warning_counts_agent_rows_and_its_n_steps_fits():
    with pytest.warns(CanterWarning, match=r"n_steps 64 x 4 agent rows \(2 env copies x 2 agents\) = 256 steps; "
                                           r"--set n_steps=25 makes one fit\): the run takes 256 steps$"):
        trainer = canter.make_trainer("ppo", "pettingzoo:tests.match_agents", n_envs=2, n_steps=64, max_steps=100,
                                      eval_episodes=0)
    trainer.close()
    trainer, said = _rollout_warnings(env="pettingzoo:tests.match_agents", n_envs=2, n_steps=25, batch_size=50,
                                      max_steps=100)
    assert not said, said
    with trainer:
        assert [record.step for record in trainer()][-1] == 100


def test_a_policys_warning_names_the_n_steps_that_fits_the_runs_budget():
    """A policy's warning is of its share of the steps (its 1 or 2 of the 3 agent rows): the n_steps it names is the
    run's (100 // 3 = 33), with which no policy's rollout exceeds its share."""
    trainer, said = _rollout_warnings(env="pettingzoo:tests.mixed_agents", policies="type", n_envs=1, n_steps=64,
                                      max_steps=100)
    trainer.close()
    assert len(said) == 2 and all("--set n_steps=33 makes one fit" in m for m in said), said
    trainer, said = _rollout_warnings(env="pettingzoo:tests.mixed_agents", policies="type", n_envs=1, n_steps=33,
                                      batch_size=33, max_steps=99)
    assert not said, said
    with trainer:
        assert [record.step for record in trainer()][-1] == 99


def test_the_patience_warning_counts_a_multi_agent_rollout_as_agent_rows():
    """warn_idle_patience's 'is one rollout' said '4 envs' for 2 copies of a 2-agent env, as the budget warning did."""
    with pytest.warns(CanterWarning, match=r"max_steps \(256\) is one rollout \(n_steps 64 x 4 agent rows \(2 env copies "
                                           r"x 2 agents\) = 256 steps\)"):
        trainer = canter.make_trainer("ppo", "pettingzoo:tests.match_agents", n_envs=2, n_steps=64, batch_size=64,
                                      max_steps=256, early_stopping=3, eval_episodes=1)
    trainer.close()


def test_a_policy_of_one_agent_per_copy_is_told_in_agent_rows():
    """With --n-envs 2, mixed_agents' speaker (one per copy) was 'n_steps 64 x 2 envs', its listener '4 agent rows'."""
    assert "x 2 agent rows (2 env copies x 1 agent) = 128 steps" in rollout_budget_message(34, 64, 2, 2, agents=True)
    trainer, said = _rollout_warnings(env="pettingzoo:tests.mixed_agents", policies="type", n_envs=2, n_steps=64,
                                      max_steps=100)
    trainer.close()
    speaker = [m for m in said if m.startswith("policy 'speaker'")]
    assert len(speaker) == 1 and "n_steps 64 x 2 agent rows (2 env copies x 1 agent) = 128 steps" in speaker[0], said
