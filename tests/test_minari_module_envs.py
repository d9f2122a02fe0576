"""Minari datasets of envs named ``module:Id`` (a user module registers the env when imported)."""
from __future__ import annotations

import sys

import pytest

from canter.data.dataset import TransitionDataset, collect
from canter.errors import CanterError

MODULE = '''
import gymnasium as gym
import numpy as np


class Walk(gym.Env):
    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.full(2, self.t / 10, np.float32), float(action), self.t >= 5, False, {}


gym.register("{id}", entry_point={entry_point}, disable_env_checker=True)
'''


def _module(tmp_path, monkeypatch, name: str, env_id: str, entry_point: str) -> None:
    """A module ``name`` on sys.path that registers ``env_id`` when imported (not imported yet)."""
    (tmp_path / f"{name}.py").write_text(MODULE.replace("{id}", env_id).replace("{entry_point}", entry_point))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)


def test_a_module_env_dataset_is_written_to_minari_and_read_back(tmp_path, monkeypatch):
    """A dataset of ``module:Id`` (how a user module's env is named) was refused by ``canter collect --out minari:ID``
    with "'module:Id' is not registered with gymnasium": gymnasium.spec neither imports the module nor knows the
    prefixed id. The module is imported first, and the dataset records the id with its module."""
    pytest.importorskip("minari")
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    _module(tmp_path, monkeypatch, "canter_walk_env", "CanterWalk-v0", '"canter_walk_env:Walk"')
    data = collect("canter_walk_env:CanterWalk-v0", 20, None, seed=0)
    assert data.to_minari("walk/random-v0") == 20
    back = TransitionDataset.load("minari:walk/random-v0")
    assert back.env_id == "canter_walk_env:CanterWalk-v0" and back.env_kwargs == {}
    assert (back.obs == data.obs).all() and (back.actions == data.actions).all()


def test_a_module_env_registered_with_a_class_names_why_minari_cannot_record_it(tmp_path, monkeypatch):
    """Minari records an env by its entry point as text: one registered with the class itself is refused saying so."""
    pytest.importorskip("minari")
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    _module(tmp_path, monkeypatch, "canter_walk_class_env", "CanterWalkClass-v0", "Walk")
    data = collect("canter_walk_class_env:CanterWalkClass-v0", 20, None, seed=0)
    with pytest.raises(CanterError, match="entry_point='canter_walk_class_env:Walk'") as info:
        data.to_minari("walk/class-v0")
    assert "not registered" not in str(info.value)


def test_a_module_that_cannot_be_imported_is_named(tmp_path, monkeypatch):
    """The error names the module that failed to import, not an unregistered env."""
    pytest.importorskip("minari")
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    _module(tmp_path, monkeypatch, "canter_walk_gone_env", "CanterWalkGone-v0", '"canter_walk_gone_env:Walk"')
    data = collect("canter_walk_gone_env:CanterWalkGone-v0", 20, None, seed=0)
    data.env_id = "canter_no_such_module:CanterWalkGone-v0"
    with pytest.raises(CanterError, match="cannot import module .canter_no_such_module."):
        data.to_minari("walk/gone-v0")
