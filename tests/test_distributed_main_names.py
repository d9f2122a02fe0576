"""A run with Ray explorers whose env, algorithm or model is registered in ``__main__`` (a script, a notebook):
explorers are fresh processes that cannot import ``__main__``, so such a run is refused in one line before Ray
starts (no cluster needed: a stand-in connection records that none was opened). Nothing here imports Ray, so
the file runs without it (a module-level ``importorskip("ray")`` skipped all of it where Ray is not installed)."""
from __future__ import annotations

import gymnasium as gym
import pytest

import canter
from canter import registry
from canter.errors import CanterError


@pytest.fixture
def main_env():
    """``HdMainCart-v0`` registered as a script's ``__main__`` registers it (caller module ``__main__``)."""
    scope = {"__name__": "__main__", "register": canter.register, "gym": gym}
    exec("@register('env', 'HdMainCart-v0')\ndef make(**kw):\n    return gym.make('CartPole-v1')\n", scope)
    yield "HdMainCart-v0"
    registry._REGISTRY["env"].pop("HdMainCart-v0", None)
    registry._REGISTERED_BY.pop(("env", "HdMainCart-v0"), None)


def test_explorers_refuse_an_env_registered_in_main_before_ray_starts(main_env, tmp_path, monkeypatch):
    """It was found only once Ray had started and an explorer was built (half a minute here), as an
    explorer's 'unknown env id 'HdMainCart-v0'; did you mean 'CartPole-v0'...' although the script had
    registered it."""
    from canter.distributed import pool as pool_module

    connected = []
    monkeypatch.setattr(pool_module, "connect", lambda address: connected.append(address) or (None, False))
    with pytest.raises(CanterError, match=r"^env 'HdMainCart-v0' is registered in __main__ \(a script or notebook\), "
                                          r"which Ray explorers cannot import: .*module"):
        canter.make_trainer("impala", main_env, explorers=1, n_envs=1, run_dir=tmp_path / "run")
    assert connected == [] and not (tmp_path / "run").exists()


def test_an_env_registered_in_main_still_trains_without_explorers(main_env):
    trainer = canter.make_trainer("impala", main_env, n_envs=1, max_steps=64, eval_episodes=0, n_steps=8)
    try:
        assert next(iter(trainer())).step == 8
    finally:
        trainer.close()


def test_a_name_registered_in_main_for_an_importable_object_is_left_to_the_explorers():
    """``register('env', ...)(my_pkg.make)`` in a script: the explorers import ``my_pkg`` (it may register the
    name too), so the run is not refused before Ray starts."""
    from canter.config import resolve_config, resolved_dict
    from canter.registry import main_registered

    import support

    # an object of an importable user module (canter's own would not do: the explorers import none of canter's
    # modules for a name, and canter registers no name of the user's)
    scope = {"__name__": "__main__", "register": canter.register, "make": support.snapshot}
    exec("register('env', 'HdMainImported-v0')(make)\n", scope)
    try:
        run, cfg = resolve_config("impala", "CartPole-v1")
        config = {**resolved_dict(run, cfg), "env": "HdMainImported-v0"}
        assert main_registered(config) == []
        assert main_registered({**config, "env": "CartPole-v1"}) == []
    finally:
        registry._REGISTRY["env"].pop("HdMainImported-v0", None)
        registry._REGISTERED_BY.pop(("env", "HdMainImported-v0"), None)


@pytest.mark.parametrize("how", ["partial", "canter"])
def test_a_name_registered_in_main_for_an_object_no_explorer_import_registers_is_refused(how, tmp_path, monkeypatch):
    """``register('env', ...)(functools.partial(make))`` with ``make`` defined in the script (a partial's
    ``__module__`` is ``functools``), or a name for one of canter's own objects: the explorers have no module to
    import that registers it, so each failed half a minute in with "unknown env id 'HdMainPartial-v0'; did you mean
    'PrivateEye-v0'..." (46d21c1 left out every name whose object's module was not ``__main__``)."""
    from canter.distributed import pool as pool_module
    from canter.envs.pomdp import cartpole_no_velocity

    scope = {"__name__": "__main__", "register": canter.register, "gym": gym, "canter_make": cartpole_no_velocity}
    exec("import functools\ndef make(size=1, **kw):\n    return gym.make('CartPole-v1')\n"
         "register('env', 'HdMainPartial-v0')(functools.partial(make, size=5) if HOW == 'partial' else canter_make)\n",
         {**scope, "HOW": how})
    connected = []
    monkeypatch.setattr(pool_module, "connect", lambda address: connected.append(address) or (None, False))
    try:
        with pytest.raises(CanterError, match=r"^env 'HdMainPartial-v0' is registered in __main__"):
            canter.make_trainer("impala", "HdMainPartial-v0", explorers=1, n_envs=1, run_dir=tmp_path / "run")
        assert connected == [] and not (tmp_path / "run").exists()
    finally:
        registry._REGISTRY["env"].pop("HdMainPartial-v0", None)
        registry._REGISTERED_BY.pop(("env", "HdMainPartial-v0"), None)


def test_a_gymnasium_id_registered_in_main_with_a_partial_entry_point_is_refused(tmp_path, monkeypatch):
    """``gymnasium.register(id, entry_point=functools.partial(make))`` with ``make`` defined in the script: its
    entry point's module read as ``functools`` (recorded as a module for the explorers to import), so the run
    started Ray and each explorer failed at 'unknown env id', as 19bf490 fixed for ``canter.register``."""
    from canter.distributed import pool as pool_module

    scope = {"__name__": "__main__", "gym": gym}
    exec("import functools\ndef make(size=1, **kw):\n    return gym.make('CartPole-v1')\n"
         "gym.register('HdGymPartial-v0', entry_point=functools.partial(make, size=5))\n", scope)
    connected = []
    monkeypatch.setattr(pool_module, "connect", lambda address: connected.append(address) or (None, False))
    try:
        with pytest.raises(CanterError, match=r"^env 'HdGymPartial-v0' is registered in __main__"):
            canter.make_trainer("impala", "HdGymPartial-v0", explorers=1, n_envs=1, run_dir=tmp_path / "run")
        assert connected == [] and not (tmp_path / "run").exists()
    finally:
        gym.registry.pop("HdGymPartial-v0", None)
