"""Settings given from Python as NumPy scalars (what NumPy arithmetic, comparisons and sweeps give) are the Python
values they hold."""
from __future__ import annotations

import numpy as np
import pytest

from canter.config import resolve_config, resolved_dict
from canter.errors import CanterError
from canter.yaml_io import dump_yaml, safe_load


def test_numpy_scalars_are_taken_as_the_python_values_they_hold():
    """normalize_obs=np.True_ (np.random.rand() > 0.5) was refused, "must be a bool, got np.True_", and
    env_kwargs={'max_episode_steps': np.int64(100)} "holds a int64 ...; use strings, numbers, ...", while
    np.int64 and np.float32 given for an int or float setting were taken."""
    run, algo_cfg = resolve_config(
        "ppo", "CartPole-v1", from_python=True, seed=np.int64(3), tensorboard=np.False_, target_reward=np.float32(100),
        env_kwargs={"max_episode_steps": np.int64(100), "sutton_barto_reward": np.bool_(True), "x": np.array(0.5)},
        hparams={"normalize_obs": np.True_, "n_steps": np.int64(64), "net_arch": [np.int32(32), 32]})
    assert algo_cfg.normalize_obs is True and run.tensorboard is False and run.seed == 3
    assert run.env_kwargs == {"max_episode_steps": 100, "sutton_barto_reward": True, "x": 0.5}
    assert [type(v) for v in run.env_kwargs.values()] == [int, bool, float]
    assert type(algo_cfg.n_steps) is int and algo_cfg.net_arch == [32, 32]
    saved = resolved_dict(run, algo_cfg)
    assert safe_load(dump_yaml(saved)) == saved  # the config.yaml written holds them as plain numbers


def test_a_numpy_value_of_the_wrong_kind_is_still_refused():
    """A NumPy bool is no int (seed), nor an array a bool."""
    with pytest.raises(CanterError, match="'seed' must be an int, got True"):
        resolve_config("ppo", "CartPole-v1", from_python=True, seed=np.True_)
    with pytest.raises(CanterError, match="'hparams.normalize_obs' must be a bool"):
        resolve_config("ppo", "CartPole-v1", from_python=True, hparams={"normalize_obs": np.array([True])})
