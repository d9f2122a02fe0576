"""The one-line refusal of an algorithm that does not apply action masks names only algorithms that would take the
env: it named every masking algorithm, qmix and mappo (parallel multi-agent envs only, qmix on joint MultiDiscrete
actions) and the offline cql for an online run among them, each of which the user would then see refused."""
from __future__ import annotations

import re

import gymnasium as gym
import numpy as np
import pytest

from canter.envs.masks import MaskedBox
from canter.errors import CanterError
from canter.registry import lookup


def _refusal(algo: str, space: gym.Space) -> str:
    """The one-line refusal of masked observations by ``algo`` acting in ``space``."""
    obs = MaskedBox(np.zeros(5, np.float32), np.ones(5, np.float32), 3)
    with pytest.raises(CanterError, match="carry an action mask") as err:
        lookup("algorithm", algo).check_spaces(obs, space)
    return str(err.value)


def _named(algo: str, space: gym.Space) -> set[str]:
    found = re.search(r"algorithms that do: ([^;(]*?)(?: \(on a PettingZoo parallel env also [^)]*\))?$",
                      _refusal(algo, space))
    return set(found[1].split(", ")) if found else set()


def _parallel(algo: str, space: gym.Space) -> set[str]:
    """The algorithms the refusal names for a PettingZoo parallel env (qmix, mappo), apart from the others."""
    found = re.search(r"on a PettingZoo parallel env(?: also|:) ([^)]*)\)?$", _refusal(algo, space))
    return set(found[1].split(", ")) if found else set()


def test_an_online_algorithm_is_pointed_to_online_single_agent_ones():
    named = _named("sac_discrete", gym.spaces.Discrete(3))
    assert {"dqn", "ppo", "a2c", "c51", "qrdqn"} <= named
    assert not named & {"qmix", "mappo", "cql", "bc"}


def test_an_offline_algorithm_is_pointed_to_offline_ones():
    assert _named("bc", gym.spaces.Discrete(3)) == {"cql"}


def test_mappo_and_qmix_are_named_for_parallel_envs_apart_from_the_others():
    """They train on a PettingZoo parallel env whose Discrete agents' observations carry masks (sac_discrete on
    pettingzoo:tests.match_agents with masked=true), where 170ec26 dropped them from the refusal; named apart,
    as the env may be a turn-based game or a single-agent one, where they are refused."""
    assert _parallel("sac_discrete", gym.spaces.Discrete(3)) == {"mappo", "qmix"}
    assert _parallel("acer", gym.spaces.Discrete(3)) == {"mappo", "qmix"}
    assert not _parallel("bc", gym.spaces.Discrete(3))  # offline: cql only
