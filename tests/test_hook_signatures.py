"""Hooks and callback methods that cannot take what the trainer calls them with are refused when the trainer
is made, in one line naming the hook, the function and the call (they were a TypeError traceback at their
first call, after training had started)."""
from __future__ import annotations

import re

import pytest

import canter
from canter.callbacks import Callback, Hooks
from canter.errors import CanterError
from support import assert_one_line_error, run_cli


class LossesForgotten(Callback):
    """after_update without its losses argument."""

    def after_update(self, trainer):  # noqa: D102
        pass


def _one_argument(trainer):
    """An after_update hook that takes the trainer alone."""


@pytest.mark.parametrize("callbacks, hooks, needle", [
    ([LossesForgotten()], None, "hook after_update 'test_hook_signatures:LossesForgotten.after_update' cannot be "
                                "called as after_update(trainer, losses)"),
    (None, {"should_stop": lambda: None}, "hook should_stop 'test_hook_signatures:"),
    (None, {"on_evaluate": _one_argument}, "cannot be called as on_evaluate(trainer, result)"),
], ids=["callback-method", "lambda", "function"])
def test_a_hook_that_cannot_take_its_arguments_is_refused_when_the_trainer_is_made(callbacks, hooks, needle):
    with pytest.raises(CanterError, match=re.escape(needle)):
        canter.make_trainer("ppo", "CartPole-v1", callbacks=callbacks, hooks=hooks, max_steps=64)


def test_hooks_that_take_more_or_fewer_by_default_are_kept():
    """Defaults and *args take the call; a callback's other methods are not hooks and not checked."""
    class Flexible(Callback):
        def after_update(self, trainer, losses=None, extra=0):  # noqa: D102
            pass

        def on_evaluate(self, *args):  # noqa: D102
            pass

        def helper(self, a, b, c):  # noqa: D102
            pass

    assert len(Hooks([Flexible()]).callbacks) == 1


@pytest.mark.parametrize("hook, signature", [("after_update", "after_update(trainer, losses)"),
                                             ("on_env_step", "on_env_step(trainer, step)")])
def test_a_yaml_hook_of_the_wrong_arity_is_one_line_and_writes_nothing(capsys, tmp_path, monkeypatch, hook,
                                                                        signature):
    (tmp_path / f"my_arity_hooks_{hook}.py").write_text("def log(trainer):\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", "--set",
                           f"hooks={{{hook}: my_arity_hooks_{hook}:log}}", "--quiet", "--run-dir", str(tmp_path / "run"))
    assert_one_line_error(code, err, f"hook {hook} 'my_arity_hooks_{hook}:log' cannot be called as "
                                     f"{signature}: too many positional arguments")
    assert not (tmp_path / "run").exists()


class Misspelled(Callback):
    """A callback with one hook and methods named almost as hooks, which no trainer calls."""

    def after_update(self, trainer, losses):  # noqa: D102
        pass

    def on_evalute(self, trainer, result):  # noqa: D102
        pass

    def _on_step(self):  # noqa: D102 (Stable-Baselines3's name)
        pass

    def should_stop_now(self):  # noqa: D102 (a helper of its own: not near enough to warn)
        pass


def test_a_callback_method_named_almost_as_a_hook_is_warned_about_when_attached():
    """A misspelled hook method (on_evalute) was silently never called, as was SB3's _on_step beside a real hook."""
    with pytest.warns(canter.CanterWarning) as record:
        Hooks([Misspelled()])
    assert sorted(str(w.message) for w in record) == [
        "Misspelled._on_step is no hook, so it is never called; did you mean 'on_env_step'?",
        "Misspelled.on_evalute is no hook, so it is never called; did you mean 'on_evaluate'?"]
