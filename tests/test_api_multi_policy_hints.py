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
    agent = canter.train("ppo", env="pettingzoo:tests.mixed_agents", policies="type", max_steps=64, n_envs=2,
                         n_steps=16, eval_episodes=0, run_dir=tmp_path / "run")
    loaded = canter.load(tmp_path / "run")
    for got, fn in ((agent, canter.train), (loaded, canter.load)):
        assert isinstance(got, MultiPolicyAgent)
        assert isinstance(got, typing.get_args(typing.get_type_hints(fn)["return"]))
