"""``canter.train``, ``load``, ``resume`` and ``make_agent`` say in their return hints that a run with several policies
(``policies: type``) gives a :class:`MultiPolicyAgent`, which is no :class:`Agent` (their hints said ``-> Agent``)."""
from __future__ import annotations

import typing

import pytest

import canter
from canter.agents.multi import MultiPolicyAgent


@pytest.mark.parametrize("fn", ["train", "load", "resume", "make_agent"])
def test_the_return_hint_names_multi_policy_agents(fn):
    assert MultiPolicyAgent in typing.get_args(typing.get_type_hints(getattr(canter, fn))["return"])


def test_a_multi_policy_run_returns_what_the_hints_say(tmp_path):
    agent = canter.train("ppo", env="pettingzoo:tests.mixed_agents", policies="type", max_steps=96, n_envs=2,
                         n_steps=16, batch_size=16, eval_episodes=0, run_dir=tmp_path / "run")
    loaded = canter.load(tmp_path / "run")
    for got, fn in ((agent, canter.train), (loaded, canter.load)):
        assert isinstance(got, MultiPolicyAgent)
        assert isinstance(got, typing.get_args(typing.get_type_hints(fn)["return"]))


def test_a_multi_policy_agents_predict_of_one_observation_each_returns_what_its_hint_says():
    """732379a4 gave Agent.predict ``obs: Any -> np.ndarray | np.generic`` (one observation of a Discrete space gives a
    NumPy integer); MultiPolicyAgent.predict still said ``dict[str, np.ndarray] -> dict[str, np.ndarray]``, and gives
    each policy's NumPy integer the same way."""
    trainer = canter.make_trainer("ppo", "pettingzoo:tests.mixed_agents", policies="type", max_steps=96, n_envs=1,
                                  n_steps=16, batch_size=16, eval_episodes=0)
    with trainer:
        agent = trainer.agent
        actions = agent.predict({p: member.observation_space.sample() for p, member in agent.agents.items()})
    hints = typing.get_type_hints(MultiPolicyAgent.predict)
    value_hint = typing.get_args(hints["return"])[1]
    assert all(isinstance(a, typing.get_args(value_hint) or value_hint) for a in actions.values()), actions
    assert typing.get_args(hints["obs"])[1] is typing.Any
