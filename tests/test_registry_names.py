"""Names the registry refuses at registration: those that lookup never reaches."""
import re

import pytest
import torch.nn as nn

from canter import register


def test_an_encoder_named_auto_is_refused_at_registration():
    """@register("encoder", "auto") was accepted and listed by 'canter list' as the user's, but encoder: auto
    (every algorithm's default) picks one of canter's encoders without looking the name up: the user's class was
    silently never built."""
    from canter.registry import _REGISTRY

    class Auto(nn.Module):
        """An encoder of one's own, meant to replace the default."""

    with pytest.raises(ValueError, match="cannot register encoder 'auto': encoder: auto picks one of canter's"):
        register("encoder", "auto")(Auto)
    assert "auto" not in _REGISTRY["encoder"]
    register("encoder", "test_auto_like")(Auto)  # any other name is taken
    _REGISTRY["encoder"].pop("test_auto_like")


def test_an_env_factory_under_a_gymnasium_id_is_refused_at_registration():
    """@register("env", "CartPole-v1") was accepted: every run naming CartPole-v1 then made the factory's env (an
    Acrobot in the report), tuned by PPO's CartPole preset (n_envs 16, target_reward 475), without a word. An id of
    one's own, and one's own Gymnasium id registered with canter too, stay allowed."""
    import gymnasium as gym

    from canter.registry import _REGISTRY

    def factory(**kwargs):
        return gym.make("Acrobot-v1", **kwargs)

    with pytest.raises(ValueError, match="cannot register env 'CartPole-v1': it is Gymnasium's id of another env"):
        register("env", "CartPole-v1")(factory)
    assert "CartPole-v1" not in _REGISTRY["env"]
    gym.register("TestOwnAcrobot-v0", entry_point=factory)
    try:
        register("env", "TestOwnAcrobot-v0")(factory)
        _REGISTRY["env"].pop("TestOwnAcrobot-v0")
    finally:
        gym.registry.pop("TestOwnAcrobot-v0")


def test_a_function_registered_as_an_algorithm_is_a_one_line_error():
    """A function registered as an algorithm was an AttributeError traceback ('function' object has no attribute
    'name') from canter train, --help and list. As 'module:Class' names are, it is refused naming the class it must
    be."""
    from canter.errors import CanterError
    from canter.registry import _REGISTRY, lookup

    def factory(*args, **kwargs):
        return None

    register("algorithm", "test_function_algorithm")(factory)
    try:
        with pytest.raises(CanterError, match=r"'test_function_algorithm' \(registered to .*factory\) is not an "
                                              r"algorithm class \(a subclass of canter.algorithms.base.Algorithm\)"):
            lookup("algorithm", "test_function_algorithm")
    finally:
        _REGISTRY["algorithm"].pop("test_function_algorithm")


def test_an_agent_factory_function_builds_agents_and_one_returning_none_is_one_line():
    """A registered agent may be a factory function returning an Agent (it trained, evaluated and loaded before a
    class-only rule refused it, existing runs included); one returning None was an AttributeError traceback
    ('NoneType' object has no attribute 'torch_threads'), now one line naming what it built."""
    import canter
    from canter.agents.agent import Agent
    from canter.errors import CanterError
    from canter.registry import _REGISTRY

    register("agent", "test_agent_factory")(lambda algorithm, **kwargs: Agent(algorithm, **kwargs))
    register("agent", "test_none_factory")(lambda *args, **kwargs: None)
    try:
        trainer = canter.make_trainer("ppo", "CartPole-v1", agent="test_agent_factory", max_steps=64, n_envs=2,
                                      eval_episodes=0, hparams={"n_steps": 32, "batch_size": 32})
        assert isinstance(trainer.agent, Agent)
        with pytest.raises(CanterError, match=r"the agent 'test_none_factory' built NoneType, not an agent"):
            canter.make_trainer("ppo", "CartPole-v1", agent="test_none_factory", max_steps=64, n_envs=2,
                                eval_episodes=0, hparams={"n_steps": 32, "batch_size": 32})
    finally:
        _REGISTRY["agent"].pop("test_agent_factory")
        _REGISTRY["agent"].pop("test_none_factory")


def test_an_env_registered_to_something_not_callable_is_refused_at_registration():
    """register("env", "IntEnv-v0")(42) was accepted; a run of it was "'int' object is not callable", a traceback."""
    from canter.registry import _REGISTRY

    with pytest.raises(ValueError, match="cannot register env 'TestIntEnv-v0' to 42: an env is registered as a class"):
        register("env", "TestIntEnv-v0")(42)
    assert "TestIntEnv-v0" not in _REGISTRY["env"]


def test_an_env_factory_that_returns_no_env_is_a_one_line_error():
    """A factory that forgot its return made None: an AttributeError traceback from the wrappers ('NoneType' object
    has no attribute 'observation_space'), from training and from canter play / video alike."""
    from canter.envs import make_env, make_vec_env
    from canter.errors import CanterError
    from canter.registry import _REGISTRY

    def forgot_return(**kwargs):
        """Makes an env and drops it."""

    register("env", "TestNoReturn-v0")(forgot_return)
    try:
        for make in (lambda: make_env("TestNoReturn-v0"), lambda: make_vec_env("TestNoReturn-v0", 2, "sync")):
            with pytest.raises(CanterError, match=r"env 'TestNoReturn-v0': its registered factory .*forgot_return "
                                                  r"returned NoneType, not a gymnasium.Env"):
                make()
    finally:
        _REGISTRY["env"].pop("TestNoReturn-v0")


@pytest.mark.parametrize("kind, setting, needle", [
    ("model", "model", "model .*Plain for ppo made a 'Plain' object, not a torch.nn.Module"),
    ("encoder", "encoder", "encoder 'test_plain_encoder' made a 'Plain' object, not a torch.nn.Module"),
])
def test_a_registered_model_or_encoder_that_is_no_module_is_a_one_line_error(kind, setting, needle):
    """A registered model or encoder class that is no torch.nn.Module was an AttributeError traceback when the run
    was built ('P' object has no attribute 'modules' / 'parameters'); a module:Class name was refused already."""
    import canter
    from canter.errors import CanterError
    from canter.registry import _REGISTRY

    class Plain:
        out_dim = 4

        def __init__(self, *args, **kwargs):
            pass

        def action(self, obs): ...

        def value(self, obs): ...

        def action_value(self, obs): ...

    name = f"test_plain_{kind}"
    register(kind, name)(Plain)
    try:
        with pytest.raises(CanterError, match=needle):
            canter.make_trainer("ppo", "CartPole-v1", n_envs=1, **{setting: name})
    finally:
        _REGISTRY[kind].pop(name)


@pytest.mark.parametrize("name", ["ALE/Pong-v5", "PongNoFrameskip-v4", "ale_py:ALE/Pong-v5"])
def test_an_env_factory_under_an_ale_py_id_is_refused_before_ale_py_is_imported(monkeypatch, name):
    """@register("env", "ALE/Pong-v5") was accepted in a process that had made no env yet (ale-py's ids are in
    Gymnasium's registry only once ale-py is imported): --env ALE/Pong-v5 then made the factory's env, under the
    Atari presets. The ids are taken out of the registry here, and ale-py's import (canter.ale.register_ale) puts them
    back, as in a fresh process."""
    pytest.importorskip("ale_py")
    import gymnasium as gym

    import canter.ale
    from canter.registry import _REGISTRY

    canter.ale.register_ale()
    ale_ids = {i: spec for i, spec in gym.registry.items() if "ale_py" in str(spec.entry_point)}
    for i in ale_ids:
        monkeypatch.delitem(gym.registry, i)
    monkeypatch.setattr(canter.ale, "register_ale", lambda: gym.registry.update(ale_ids) or True)

    def factory(**kwargs):
        return gym.make("CartPole-v1", **kwargs)

    with pytest.raises(ValueError, match=f"cannot register env '{name}': it is Gymnasium's id of another env"):
        register("env", name)(factory)
    assert name not in _REGISTRY["env"]


def test_an_env_factory_under_module_and_a_gymnasium_id_is_refused():
    """@register("env", "gymnasium:CartPole-v1") was accepted: --env gymnasium:CartPole-v1 (CartPole-v1, its presets
    applied) then made the factory's env."""
    import gymnasium as gym

    def factory(**kwargs):
        return gym.make("Acrobot-v1", **kwargs)

    with pytest.raises(ValueError, match="cannot register env 'gymnasium:CartPole-v1': it is Gymnasium's id"):
        register("env", "gymnasium:CartPole-v1")(factory)


@pytest.mark.parametrize("kind,name", [("model", "my_model "), ("model", " mlp_q"), ("env", "MyEnv-v0\n")])
def test_a_name_with_a_space_before_or_after_it_is_refused_at_registration(kind, name):
    """register("model", "my_model ") was accepted, and model: my_model then answered "unknown model 'my_model'; did
    you mean 'my_model '?"; register("model", " mlp_q") took a name beside canter's that only a quoted config reaches."""
    from canter.registry import _REGISTRY

    class Net(nn.Module):
        """A model of one's own."""

    with pytest.raises(ValueError, match=re.escape(f"cannot register {kind} {name!r}: it has a space before or after "
                                                   f"it, which no config's name has; register it as '{name.strip()}'")):
        register(kind, name)(Net)
    assert name not in _REGISTRY[kind]
