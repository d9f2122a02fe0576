"""Which module a run records for the user components its config names by registered name: the module that
registered each name, so that loading the run in a fresh process registers it again."""
import json
import sys

import pytest

import canter
from canter.errors import CanterError
from canter.cli import main


@pytest.fixture
def registrar(tmp_path, monkeypatch):
    """``my_home_parts`` defines a model and registers nothing; ``my_registrar`` registers it as
    'tiny_q_elsewhere' (a plugin module registering a class defined in another). ``my_helped_parts`` registers
    'helped_q' with a decorator that a helper function of ``my_reg_helpers`` makes. Yields a function that
    forgets them all, as a fresh process would not have them."""
    from canter.registry import _REGISTRY

    (tmp_path / "my_home_parts.py").write_text(
        "from canter.models.q_network import QNetwork\nclass TinyQElsewhere(QNetwork):\n    pass\n")
    (tmp_path / "my_registrar.py").write_text(
        "import canter\nfrom my_home_parts import TinyQElsewhere\n"
        "canter.register('model', 'tiny_q_elsewhere')(TinyQElsewhere)\n")
    (tmp_path / "my_reg_helpers.py").write_text("import canter\ndef model(name):\n"
                                                "    return canter.register('model', name)\n")
    (tmp_path / "my_helped_parts.py").write_text(
        "from canter.models.q_network import QNetwork\nfrom my_reg_helpers import model\n"
        "@model('helped_q')\nclass HelpedQ(QNetwork):\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    def forget() -> None:
        for name in ("my_home_parts", "my_registrar", "my_reg_helpers", "my_helped_parts"):
            sys.modules.pop(name, None)
        for name in ("tiny_q_elsewhere", "helped_q"):
            _REGISTRY["model"].pop(name, None)

    yield forget
    forget()


@pytest.mark.parametrize("module, model, recorded, cls", [
    ("my_registrar", "tiny_q_elsewhere", ["my_registrar", "my_home_parts"], "TinyQElsewhere"),
    ("my_helped_parts", "helped_q", ["my_helped_parts"], "HelpedQ"),
], ids=["plugin-module", "helper-decorator"])
def test_a_class_registered_by_another_module_loads_in_a_fresh_process(tmp_path, registrar, module, model, recorded,
                                                                        cls):
    """A model class defined in one module and registered by another: the run recorded the class's module
    (``my_home_parts``), whose import registers nothing, so loading it in a fresh process (canter.load,
    canter eval) failed with "unknown model 'tiny_q_elsewhere'". A class registered through a helper's decorator
    is recorded with the module that applies it, not the helper's."""
    __import__(module)
    trainer = canter.make_trainer("dqn", "CartPole-v1", model=model, eval_episodes=0)
    trainer.save_agent(tmp_path / "agent")
    trainer.close()
    meta = json.loads((tmp_path / "agent.json").read_text())
    assert meta["user_modules"] == recorded
    registrar()
    agent = canter.load(tmp_path / "agent")
    assert type(agent.algorithm.q).__name__ == cls


def test_canter_list_marks_a_component_with_the_module_that_registered_it(registrar, capsys):
    """``canter list --import my_registrar`` marked 'tiny_q_elsewhere' [user: my_home_parts], a module that
    does not register it."""
    assert main(["list", "--import", "my_registrar"]) == 0
    assert "tiny_q_elsewhere [user: my_registrar]" in capsys.readouterr().out


def test_an_algorithm_without_a_model_builds_its_own_networks(tmp_path, monkeypatch):
    """An Algorithm subclass with no ``default_model`` (its networks its own) failed to build with "unknown model
    ''"; one that calls make_model without naming a model is told to set default_model or model."""
    (tmp_path / "my_modelless.py").write_text(
        "import dataclasses\nimport torch\nfrom canter.algorithms.base import ActOutput, Algorithm\n\n\n"
        "@dataclasses.dataclass\nclass C:\n    n_steps: int = 8\n    gamma: float = 0.99\n    gae_lambda: float = 0.95\n"
        "\n\nclass Own(Algorithm):\n    Config = C\n    family = 'on_policy'\n\n"
        "    def __init__(self, *args, **kw):\n        super().__init__(*args, **kw)\n"
        "        self.net = torch.nn.Linear(4, 2)\n\n"
        "    def act(self, obs, deterministic=False):\n        n = len(obs)\n"
        "        return ActOutput(self.net(obs).argmax(-1), torch.zeros(n), torch.zeros(n))\n\n"
        "    def value(self, obs):\n        return torch.zeros(len(obs))\n\n"
        "    def learn(self, batch):\n        return {}\n\n"
        "    def modules(self):\n        return {'net': self.net}\n\n"
        "    def optimizers(self):\n        return {}\n\n\n"
        "class Asks(Own):\n    def __init__(self, *args, **kw):\n        super().__init__(*args, **kw)\n"
        "        self.make_model()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    trainer = canter.make_trainer("my_modelless:Own", "CartPole-v1", max_steps=16, n_envs=1, eval_episodes=0)
    assert trainer.algorithm.model_cls is None
    list(trainer())
    assert trainer.step == 16
    with pytest.raises(CanterError, match="Asks builds a model, but names none: set default_model on the class, or "
                                          "model: NAME"):
        canter.make_trainer("my_modelless:Asks", "CartPole-v1", eval_episodes=0)


def test_loading_a_run_whose_component_was_registered_in_main_says_why_it_is_unknown(tmp_path):
    """A model registered in a script (``__main__``) is not recorded, so loading the run in another process failed
    with "unknown model 'main_tiny_q'; did you mean 'mlp_qr'?", as if the name were a typo."""
    from canter.registry import _REGISTRY

    script = ("import canter\nfrom canter.models.q_network import QNetwork\n"
              "@canter.register('model', 'main_tiny_q')\nclass MainTinyQ(QNetwork):\n    pass\n")
    exec(compile(script, "train_script.py", "exec"), {"__name__": "__main__"})  # as `python train_script.py` runs it
    try:
        trainer = canter.make_trainer("dqn", "CartPole-v1", model="main_tiny_q", eval_episodes=0)
        trainer.save_agent(tmp_path / "agent")
        trainer.close()
    finally:
        _REGISTRY["model"].pop("main_tiny_q", None)  # as another process: never registered
    assert json.loads((tmp_path / "agent.json").read_text())["user_modules"] == []
    with pytest.raises(CanterError, match=r"was trained with model 'main_tiny_q', which nothing registers in this "
                                          r"process: one registered in a script or notebook "
                                          r"\(__main__\) is not recorded; register it again before loading"):
        canter.load(tmp_path / "agent")


def test_a_user_model_changed_since_training_is_named_when_the_checkpoint_does_not_fit(tmp_path, monkeypatch):
    """A checkpoint whose user model gained a layer since it was trained was 'does not fit the model its config
    describes (saved by another canter version?)', blaming canter."""
    source = "from canter.models.q_network import QNetwork\nclass GrowingQ(QNetwork):\n    pass\n"
    (tmp_path / "my_growing_model.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    trainer = canter.make_trainer("dqn", "CartPole-v1", model="my_growing_model:GrowingQ", eval_episodes=0)
    trainer.save_agent(tmp_path / "agent")
    trainer.close()
    (tmp_path / "my_growing_model.py").write_text(source.replace(
        "    pass\n", "    def __init__(self, *a, **kw):\n        super().__init__(*a, **kw)\n"
                     "        self.extra = __import__('torch').nn.Linear(2, 2)\n"))
    sys.modules.pop("my_growing_model", None)
    with pytest.raises(CanterError, match=r"does not fit the model its config describes \(did "
                                          r"my_growing_model:GrowingQ, of your code, change since it was trained\?\)"):
        canter.load(tmp_path / "agent")


def test_a_gymnasium_id_registered_by_a_users_module_and_given_bare_is_recorded(tmp_path, monkeypatch):
    """gymnasium.register('MyEnv-v0', entry_point='my_pkg.envs:MyEnv') in my_pkg/envs.py, imported by the script and
    trained as env='MyEnv-v0' (no module: prefix): the run trained, and canter.load / canter.evaluate / canter eval in
    a fresh process stopped at 'unknown env id'. The entry point's module is recorded, imported on loading."""
    import gymnasium as gym

    (tmp_path / "my_bare_envs.py").write_text(
        "import gymnasium as gym\nfrom support import FixedLengthEnv\n"
        "gym.register('BareUserEnv-v0', entry_point='my_bare_envs:FixedLengthEnv')\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    def forget() -> None:
        sys.modules.pop("my_bare_envs", None)
        gym.registry.pop("BareUserEnv-v0", None)

    try:
        import my_bare_envs  # noqa: F401 (registers the id)

        canter.train("ppo", "BareUserEnv-v0", seed=0, max_steps=64, n_envs=1, n_steps=64, batch_size=64, n_epochs=1,
                     eval_episodes=1, run_dir=tmp_path / "run")
        assert json.loads((tmp_path / "run/checkpoints/last.json").read_text())["user_modules"] == ["my_bare_envs"]
        forget()
        assert canter.evaluate(canter.load(tmp_path / "run"), episodes=1).mean_return == 5.0
    finally:
        forget()
    # canter's and Gymnasium's own ids record nothing
    canter.train("ppo", "CartPole-v1", seed=0, max_steps=64, n_envs=1, n_steps=64, batch_size=64, n_epochs=1,
                 eval_episodes=1, run_dir=tmp_path / "run2")
    assert json.loads((tmp_path / "run2/checkpoints/last.json").read_text())["user_modules"] == []
