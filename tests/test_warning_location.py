"""A CanterWarning names the caller's line, not one of canter's own: make_trainer's warnings pointed at canter/api.py
(the line building the trainer, or calling _build), because their stacklevel was counted for a shallower call."""
import warnings

import pytest

import canter
from canter.errors import CanterWarning, warn


def _caught(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [w for w in caught if issubclass(w.category, CanterWarning)]


@pytest.mark.parametrize("call", [
    lambda: canter.make_trainer("ppo", "CartPole-v1", max_steps=64, n_envs=1, n_steps=128).close(),  # one rollout
    lambda: canter.make_trainer("ppo", "CartPole-v1", max_policy_lag=2, n_envs=1, n_steps=32).close(),
    lambda: canter.make_trainer("dqn", "CartPole-v1", max_steps=500, learning_starts=1000).close(),
    lambda: canter.train("ppo", "CartPole-v1", max_steps=16, n_envs=1, n_steps=32, batch_size=32, n_epochs=1,
                         eval_every=0, run_dir=None),
])
def test_a_warning_of_the_python_api_names_the_callers_file(call):
    caught = _caught(call)
    assert caught and all(w.filename == __file__ for w in caught), [(w.filename, w.lineno) for w in caught]


def test_a_warning_raised_in_the_training_loop_names_the_loops_line():
    trainer = canter.make_trainer("ppo", "CartPole-v1", max_steps=32, n_envs=1, n_steps=32, batch_size=32, n_epochs=1,
                                  eval_every=0, hooks={"on_env_step": lambda trainer, step: True})

    def loop():
        for _ in trainer():  # the hook's 'return True' (SB3's 'go on') stops the run: warned
            pass

    caught = _caught(loop)
    trainer.close()
    assert [w.lineno for w in caught] == [loop.__code__.co_firstlineno + 1]


def test_warn_called_from_outside_canter_names_its_caller():
    line = test_warn_called_from_outside_canter_names_its_caller.__code__.co_firstlineno + 1
    caught = _caught(lambda: warn(CanterWarning("x")))
    assert [(w.filename, w.lineno) for w in caught] == [(__file__, line + 1)]
