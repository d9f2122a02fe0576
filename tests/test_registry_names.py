"""Names the registry refuses at registration: those that lookup never reaches."""
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


@pytest.mark.parametrize("kind, base", [("algorithm", "canter.algorithms.base.Algorithm"),
                                        ("agent", "canter.agents.agent.Agent")])
def test_a_function_registered_as_an_algorithm_or_agent_is_a_one_line_error(kind, base):
    """A function registered as an algorithm was an AttributeError traceback ('function' object has no attribute
    'name') from canter train, --help and list; one registered as an agent ('NoneType' object has no attribute
    'torch_threads') from train. As 'module:Class' names are, they are refused naming the class they must be."""
    from canter.errors import CanterError
    from canter.registry import _REGISTRY, lookup

    def factory(*args, **kwargs):
        return None

    name = f"test_function_{kind}"
    register(kind, name)(factory)
    try:
        with pytest.raises(CanterError, match=rf"'{name}' \(registered to .*factory\) is not an? {kind} class "
                                              rf"\(a subclass of {base}\)"):
            lookup(kind, name)
    finally:
        _REGISTRY[kind].pop(name)


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
