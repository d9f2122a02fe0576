"""Which module a run records for the user components its config names by registered name: the module that
registered each name, so that loading the run in a fresh process registers it again."""
import json
import sys

import pytest

import canter
from canter.cli import main


@pytest.fixture
def registrar(tmp_path, monkeypatch):
    """``my_home_parts`` defines a model and registers nothing; ``my_registrar`` registers it as
    'tiny_q_elsewhere' (a plugin module registering a class defined in another). Yields a function that
    forgets both, as a fresh process would not have them."""
    from canter.registry import _REGISTRY

    (tmp_path / "my_home_parts.py").write_text(
        "from canter.models.mlp import QNetwork\nclass TinyQElsewhere(QNetwork):\n    pass\n")
    (tmp_path / "my_registrar.py").write_text(
        "import canter\nfrom my_home_parts import TinyQElsewhere\n"
        "canter.register('model', 'tiny_q_elsewhere')(TinyQElsewhere)\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    def forget() -> None:
        for name in ("my_home_parts", "my_registrar"):
            sys.modules.pop(name, None)
        _REGISTRY["model"].pop("tiny_q_elsewhere", None)

    yield forget
    forget()


def test_a_class_registered_by_another_module_loads_in_a_fresh_process(tmp_path, registrar):
    """A model class defined in one module and registered by another: the run recorded the class's module
    (``my_home_parts``), whose import registers nothing, so loading it in a fresh process (canter.load,
    canter eval) failed with "unknown model 'tiny_q_elsewhere'"."""
    import my_registrar  # noqa: F401

    trainer = canter.make_trainer("dqn", "CartPole-v1", model="tiny_q_elsewhere", eval_episodes=0)
    trainer.save_agent(tmp_path / "agent")
    trainer.close()
    meta = json.loads((tmp_path / "agent.json").read_text())
    assert meta["user_modules"] == ["my_registrar"]
    registrar()
    agent = canter.load(tmp_path / "agent")
    assert type(agent.algorithm.q).__name__ == "TinyQElsewhere"


def test_canter_list_marks_a_component_with_the_module_that_registered_it(registrar, capsys):
    """``canter list --import my_registrar`` marked 'tiny_q_elsewhere' [user: my_home_parts], a module that
    does not register it."""
    assert main(["list", "--import", "my_registrar"]) == 0
    assert "tiny_q_elsewhere [user: my_registrar]" in capsys.readouterr().out
