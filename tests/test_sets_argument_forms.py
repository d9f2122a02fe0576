"""Python's ``sets=`` argument (``--set`` items) in every public function that takes it: None is no items, one
``"key=value"`` string is one item (as make_trainer's docstring says), a mapping is refused in one line."""
import pytest

import canter
from canter.config import resolve_config
from canter.config_imports import import_config_imports
from canter.errors import CanterError


def test_make_trainer_and_train_take_sets_none():
    # was TypeError: 'NoneType' object is not iterable, from config_imports.layered_imports
    trainer = canter.make_trainer("ppo", "CartPole-v1", max_steps=512, sets=None)
    assert trainer.run.max_steps == 512
    with pytest.raises(CanterError, match="did you mean 'max_steps'"):  # train reaches the same argument checks
        canter.train("ppo", "CartPole-v1", run_dir=None, max_stepz=64, sets=None)


def test_resolve_config_and_imports_take_none_and_one_string():
    run, cfg = resolve_config("ppo", "CartPole-v1", sets=None)
    assert run.env == "CartPole-v1"
    run, cfg = resolve_config("ppo", "CartPole-v1", sets="lr=0.0123")  # was "--set expects key=value, got 'l'"
    assert cfg.lr == 0.0123
    assert import_config_imports(None, {}, None) == []
    assert import_config_imports(None, {}, "imports=[json]") == ["json"]


def test_sets_as_a_mapping_is_refused_in_one_line():
    for call in (lambda: canter.make_trainer("ppo", "CartPole-v1", sets={"lr": 1e-3}),
                 lambda: resolve_config("ppo", "CartPole-v1", sets={"lr": 1e-3})):
        with pytest.raises(CanterError, match=r"sets must be --set strings 'key=value' .*keyword arguments") as e:
            call()
        assert "\n" not in str(e.value)


@pytest.mark.parametrize("sets", [None, "seed=3", ("seed=3",)])
def test_tune_takes_sets_none_and_one_string(tmp_path, sets):
    from canter.tools.tune import tune

    # eval_episodes=0 is refused after the base config (sets included) is read, before any trial: sets=None was a
    # TypeError, "seed=3" the error "--set expects key=value, got 's'"
    with pytest.raises(CanterError, match="eval_episodes: 0 runs none"):
        tune("ppo", "CartPole-v1", trials=1, out=tmp_path / "t", sets=sets, eval_episodes=0)
