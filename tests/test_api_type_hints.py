"""The public API's type hints say what it takes and returns at run time: ``agent.predict`` of one observation of a
Discrete action space returns a NumPy integer (its hint said ``np.ndarray``), and takes lists, tensors and dicts (its
hint said ``np.ndarray``); ``canter.load`` takes a ``torch.device`` (its hint said ``str | None``)."""
from __future__ import annotations

import typing

import gymnasium as gym
import numpy as np
import torch

import canter
from canter.agents.agent import Agent
from canter.agents.fixed import RandomPolicy
from canter.agents.recurrent import RecurrentAgent
from canter.config import resolve_config


def _is(value, hint) -> bool:
    """Whether ``value`` is of ``hint`` (a class or a union of classes; Any: anything)."""
    if hint is typing.Any:
        return True
    return isinstance(value, typing.get_args(hint) or hint)


def test_predict_and_explore_hints_hold_for_one_discrete_observation():
    run, cfg = resolve_config("dqn", "CartPole-v1", None, [])
    agent = canter.make_agent(run, cfg, gym.spaces.Box(-5, 5, (4,), np.float32), gym.spaces.Discrete(2))
    obs = [0.0, 0.1, 0.0, -0.1]  # a list, as README says predict takes
    for cls in (Agent, RecurrentAgent, RandomPolicy):
        for name in ("predict", "explore"):
            hints = typing.get_type_hints(getattr(cls, name))
            assert hints["obs"] is typing.Any, (cls, name, hints["obs"])
            assert _is(getattr(agent, name)(obs), hints["return"]), (cls, name, hints["return"])


def test_load_takes_a_torch_device_as_its_hint_says(tmp_path):
    run, cfg = resolve_config("dqn", "CartPole-v1", None, [])
    canter.make_agent(run, cfg, gym.spaces.Box(-5, 5, (4,), np.float32), gym.spaces.Discrete(2)).save(tmp_path / "a")
    device = torch.device("cpu")
    assert _is(device, typing.get_type_hints(canter.load)["device"])
    assert canter.load(tmp_path / "a", device=device).device == device


def test_each_acting_method_returns_what_its_own_hint_says():
    """Each class's own method called (the test above calls a plain Agent's for all three hints), and the recurrent
    agent's predict_with_state, whose hint still said obs: np.ndarray -> (np.ndarray, memory) where one observation
    gives a NumPy integer."""
    obs_space, act_space = gym.spaces.Box(-5, 5, (4,), np.float32), gym.spaces.Discrete(2)
    run, cfg = resolve_config("recurrent_ppo", "CartPole-v1", None, [])
    recurrent = canter.make_agent(run, cfg, obs_space, act_space)
    agents = {RecurrentAgent: recurrent, RandomPolicy: RandomPolicy(obs_space, act_space, 0)}
    obs = [0.0, 0.1, 0.0, -0.1]
    for cls, agent in agents.items():
        assert isinstance(agent, cls)
        for name in ("predict", "explore"):
            assert _is(getattr(agent, name)(obs), typing.get_type_hints(getattr(cls, name))["return"]), (cls, name)
    hints = typing.get_type_hints(RecurrentAgent.predict_with_state)
    action, _ = recurrent.predict_with_state(obs)
    assert hints["obs"] is typing.Any and _is(action, typing.get_args(hints["return"])[0])
