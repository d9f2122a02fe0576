"""The refusal of a wrong action space names the algorithms for PettingZoo parallel envs too, apart: it left out
mappo and qmix ('canter train sac --env pettingzoo:tests.match_agents' named only single-agent algorithms, while
qmix trains on its Discrete agents), as the action mask's refusal names them."""
from __future__ import annotations

import gymnasium as gym
import pytest

from canter.cli import main
from canter.errors import CanterError
from canter.registry import lookup


def _hint(algo: str, space: gym.Space) -> str:
    with pytest.raises(CanterError, match="action space") as err:
        lookup("algorithm", algo).check_spaces(gym.spaces.Box(-1, 1, (4,)), space)
    return str(err.value)


def test_sac_on_a_parallel_env_of_discrete_agents_names_qmix(capsys, tmp_path):
    code = main(["train", "sac", "--env", "pettingzoo:tests.match_agents", "--run-dir", str(tmp_path / "r"), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert err[0].endswith("SAC needs a Box action space, but the env's action space is Discrete(3); for Discrete "
                           "actions use sac_discrete (or c51, dqn, iqn, qrdqn, rainbow; on a PettingZoo parallel env "
                           "also qmix)"), err
    assert not (tmp_path / "r").exists()


def test_mappo_is_named_where_every_family_is():
    assert _hint("acer", gym.spaces.Box(-1, 1, (2,))).endswith("tqc, trpo (on a PettingZoo parallel env also mappo)")


def test_qmix_is_not_named_for_actions_its_agents_cannot_take():
    """qmix joins its agents' Discrete spaces; an agent's MultiDiscrete or Box one it refuses."""
    assert "qmix" not in _hint("dqn", gym.spaces.MultiDiscrete([2, 2]))
    assert "parallel" not in _hint("dqn", gym.spaces.Box(-1, 1, (2,)))
