"""A multi-agent env whose close() raises: a one-line warning naming the env, and every copy closed, with one policy
per agent type or per agent as with a shared one.

VecEnv.close warned (20922fb) but a multi-policy run's MultiPolicyVecEnv.close was the env's traceback at the end of a
finished run, and the multi-agent vector env closed no copy after the one that raised.
"""
from __future__ import annotations

import pytest

from tests import mixed_agents_close_raises as agents
from canter.envs import make_vec_env
from support import closing_warnings

ENV = "pettingzoo:tests.mixed_agents_close_raises"


@pytest.mark.parametrize("policies", ["type", "agent"])
def test_multi_policy_close_that_raises_warns_and_closes_every_copy(policies):
    env = make_vec_env(ENV, 3, "sync", policies=policies)
    env.reset(seed=0)
    before = agents.CLOSED[0]
    said = closing_warnings(env)
    assert agents.CLOSED[0] - before == 3  # every copy was asked, not only the first
    assert len(said) == 1 and ENV in said[0] and "licence server" in said[0], said
