"""A dataset records the user modules that register its env by name, and an offline run imports them: a
dataset collected from a run whose env a user module registered (``imports: [my_pkg.envs]``) was refused by
``canter train bc --dataset`` in a new process with "unknown env id"."""
from __future__ import annotations

import sys

import gymnasium as gym
import numpy as np

from canter.config import resolve_config
from canter.data.dataset import TransitionDataset
from canter.registry import _REGISTRY


def test_an_offline_run_imports_the_modules_its_dataset_records(tmp_path, monkeypatch):
    (tmp_path / "my_ds_envs.py").write_text(
        "import gymnasium as gym\nimport canter\n@canter.register('env', 'DsWalk-v0')\n"
        "def make(**kw):\n    return gym.make('CartPole-v1', **kw)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(_REGISTRY, "env", dict(_REGISTRY["env"]))  # the registration: this test's only
    import my_ds_envs  # noqa: F401  (as the collecting process imported it with the run)
    from canter.tools.collect import _user_modules

    modules = _user_modules(None, "DsWalk-v0")
    assert modules == ["my_ds_envs"]
    n = 4
    obs = np.zeros((n, 4), np.float32)
    TransitionDataset(obs=obs, actions=np.zeros(n, np.int64), rewards=np.ones(n, np.float32), next_obs=obs,
                      terminated=np.zeros(n, bool), truncated=np.zeros(n, bool), env_id="DsWalk-v0",
                      observation_space=gym.spaces.Box(-np.inf, np.inf, (4,), np.float32),
                      action_space=gym.spaces.Discrete(2), user_modules=modules).save(tmp_path / "data")
    del sys.modules["my_ds_envs"]  # as a new process: neither the module nor its env registered
    _REGISTRY["env"].pop("DsWalk-v0")
    run, _ = resolve_config("bc", None, sets=[f"dataset={tmp_path / 'data'}"])
    assert run.env == "DsWalk-v0" and "DsWalk-v0" in _REGISTRY["env"]
    assert run.imports == ["my_ds_envs"]  # recorded with the run: eval and --resume import it too
    assert TransitionDataset.load(tmp_path / "data").user_modules == ["my_ds_envs"]


def test_a_dataset_whose_recorded_module_is_gone_says_it_was_collected_with_it(tmp_path):
    """'cannot import module ..., which registered components that dataset D was trained with': a dataset is
    collected, not trained."""
    import pytest

    from canter.errors import CanterError

    n = 2
    obs = np.zeros((n, 4), np.float32)
    TransitionDataset(obs=obs, actions=np.zeros(n, np.int64), rewards=np.ones(n, np.float32), next_obs=obs,
                      terminated=np.zeros(n, bool), truncated=np.zeros(n, bool), env_id="CartPole-v1",
                      observation_space=gym.spaces.Box(-np.inf, np.inf, (4,), np.float32),
                      action_space=gym.spaces.Discrete(2), user_modules=["gone_ds_parts"]).save(tmp_path / "data")
    with pytest.raises(CanterError, match=r"cannot import module 'gone_ds_parts', which registered components that "
                                          r"dataset .* was collected with: No module named 'gone_ds_parts'"):
        resolve_config("bc", None, sets=[f"dataset={tmp_path / 'data'}"])
