"""An env registered in ``__main__`` (a user's script) trains; a run directory of it warns that later commands
(canter eval, canter play, --resume, in processes that do not run the script) will not find it."""
import functools
import warnings

import gymnasium as gym
import pytest

import canter
from canter.envs import make as env_make
from canter.errors import CanterWarning
from support import FixedLengthEnv


class TenSteps(FixedLengthEnv):
    """Ten steps of reward 1."""

    length, truncates = 10, False


class ScriptEnv(TenSteps):
    """The same env as a script defines it."""


ScriptEnv.__module__ = "__main__"


def script_factory(**kwargs):
    """A factory as a script defines it."""
    return TenSteps(**kwargs)


script_factory.__module__ = "__main__"


@pytest.fixture
def ids(monkeypatch):
    """Env ids registered from a script (gymnasium: a class, an entry-point string; canter: a factory) and from
    this importable module."""
    monkeypatch.setattr(env_make, "_MAIN_ENVS_WARNED", set(), raising=False)
    made = {"MainClass-test-v0": ScriptEnv, "MainString-test-v0": "__main__:ScriptEnv",
            "Module-test-v0": TenSteps, "MainPartial-test-v0": functools.partial(script_factory)}
    for env_id, entry in made.items():
        gym.register(env_id, entry_point=entry)
    canter.register("env", "MainFactory-test")(script_factory)
    canter.register("env", "MainPartialFactory-test")(functools.partial(script_factory))  # __module__: functools
    monkeypatch.setattr("__main__.ScriptEnv", ScriptEnv, raising=False)
    yield
    for env_id in made:
        gym.registry.pop(env_id, None)
    from canter.registry import _REGISTRY

    _REGISTRY["env"].pop("MainFactory-test", None)
    _REGISTRY["env"].pop("MainPartialFactory-test", None)


def _warnings(env_id, tmp_path, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer = canter.make_trainer("ppo", env_id, n_envs=1, n_steps=16, batch_size=16, **kwargs)
        trainer.close()
    return [str(w.message) for w in caught if issubclass(w.category, CanterWarning) and "__main__" in str(w.message)]


@pytest.mark.parametrize("env_id", ["MainClass-test-v0", "MainString-test-v0", "MainFactory-test",
                                    "MainPartial-test-v0", "MainPartialFactory-test"])
def test_a_run_directory_of_an_env_registered_in_main_warns_once(ids, tmp_path, env_id):
    first = _warnings(env_id, tmp_path, run_dir=tmp_path / "a")
    assert len(first) == 1 and f"env '{env_id}' is registered in __main__" in first[0]
    assert "canter eval" in first[0] and "--resume" in first[0] and f"'module:{env_id}'" in first[0]
    assert _warnings(env_id, tmp_path, run_dir=tmp_path / "b") == []  # once


def test_no_warning_without_a_run_directory_or_for_an_importable_module(ids, tmp_path):
    assert _warnings("MainClass-test-v0", tmp_path, run_dir=None) == []
    assert _warnings("Module-test-v0", tmp_path, run_dir=tmp_path / "c") == []
    assert _warnings("CartPole-v1", tmp_path, run_dir=tmp_path / "d") == []
