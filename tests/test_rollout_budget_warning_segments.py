"""A budget below one segment (ACER) or one rollout (IMPALA, APPO in one process) is warned about, as the on-policy
trainers' rollouts are: ``canter train acer --env CartPole-v1 --max-steps 10`` (n_steps 20 x 8 envs) took 160 steps
and ``impala`` 256 without a word. The batch_size warning of a multi-agent env's rollout calls its agent rows
agent rows (MAPPO's '2 transitions: hparams.n_steps 1 x 2 envs' was one env copy of 2 agents)."""
from __future__ import annotations

import warnings

import pytest

import canter
from canter.errors import CanterWarning


def _budget_warnings(algo: str, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer = canter.make_trainer(algo, "CartPole-v1", eval_episodes=0, **kwargs)
    trainer.close()
    return [str(w.message) for w in caught if "less than one rollout" in str(w.message)]


@pytest.mark.parametrize("algo", ["acer", "impala", "appo"])
def test_a_budget_below_one_rollout_is_warned_about(algo):
    said = _budget_warnings(algo, n_envs=2, n_steps=20, max_steps=10)
    assert said == ["max_steps (10) is less than one rollout (n_steps 20 x 2 envs = 40 steps; --set n_steps=5 makes "
                    "one fit): the run takes 40 steps"], said
    assert _budget_warnings(algo, n_envs=2, n_steps=5, max_steps=10) == []


def test_the_acer_run_takes_the_whole_segment_it_warned_of():
    with pytest.warns(CanterWarning, match=r"the run takes 40 steps$"):
        trainer = canter.make_trainer("acer", "CartPole-v1", n_envs=2, n_steps=20, max_steps=10, eval_episodes=0)
    with trainer:
        assert [record.step for record in trainer()][-1] == 40


def test_a_multi_agent_minibatch_warning_counts_agent_rows():
    with pytest.warns(CanterWarning, match=r"is larger than one rollout \(2 transitions: hparams.n_steps 1 x 2 agent "
                                           r"rows \(1 env copy x 2 agents\)\)"):
        trainer = canter.make_trainer("mappo", "pettingzoo:tests.match_agents", n_envs=1, n_steps=1, batch_size=64,
                                      max_steps=10, eval_episodes=0)
    trainer.close()


def test_acers_never_replays_warning_counts_agent_rows():
    """ACER's never-replays warning called one env copy of 2 agents '2 envs' (the sibling of the minibatch warning's
    wording above), and said '1 whole segments'."""
    with pytest.warns(CanterWarning, match=r"holds 1 whole segment of n_steps 4 x 2 agent rows \(1 env copy x 2 agents\)"
                                           r" = 8 transitions, fewer than hparams.replay_start 100"):
        trainer = canter.make_trainer("acer", "pettingzoo:tests.match_agents", n_envs=1, n_steps=4, buffer_size=8,
                                      replay_start=100, max_steps=100, eval_episodes=0)
        trainer.setup()
    trainer.close()


def test_ppos_rollout_memory_error_counts_agent_rows():
    """PPO's rollout-buffer memory error called one env copy of 2 agents '2 envs' (MAPPO, n_steps 1e18), where its
    warnings and ACER's memory error say '2 agent rows (1 env copy x 2 agents)'."""
    with pytest.warns(CanterWarning, match="less than one rollout"):
        trainer = canter.make_trainer("mappo", "pettingzoo:tests.match_agents", n_envs=1, n_steps=10**18,
                                      max_steps=10, eval_episodes=0)
    with pytest.raises(canter.errors.CanterError, match=r"the rollout buffer does not fit in memory \(hparams.n_steps "
                       r"1,000,000,000,000,000,000 x 2 agent rows \(1 env copy x 2 agents\) = 2,000,000,000,000,000,000 "
                       r"steps"):
        trainer.setup()
    trainer.close()
