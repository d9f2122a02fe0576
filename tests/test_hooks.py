"""Trainer hooks and callbacks (early stopping, plateau LR reduction and LR schedules are in
test_early_stopping_and_lr.py)."""
from __future__ import annotations

import textwrap

import pytest

import canter
from canter.callbacks import HOOKS, Callback, EarlyStopping, config_callbacks
from canter.config import resolve_config
from canter.errors import CanterError
from support import HOOKS_TINY as TINY


class Recorder(Callback):
    """Counts every hook call and keeps the arguments that matter."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.checkpoints: list[str] = []

    def on_train_start(self, trainer):
        self.calls.append("on_train_start")

    def before_collect(self, trainer):
        self.calls.append("before_collect")

    def after_update(self, trainer, losses):
        self.calls.append("after_update")

    def on_evaluate(self, trainer, result):
        self.calls.append("on_evaluate")

    def on_best(self, trainer, result):
        self.calls.append("on_best")

    def on_checkpoint(self, trainer, path):
        self.calls.append("on_checkpoint")
        self.checkpoints.append(path.name)

    def should_stop(self, trainer):
        self.calls.append("should_stop")
        return None


def test_every_hook_is_called_in_order(tmp_path):
    rec = Recorder()
    run = canter.make_trainer("ppo", "CartPole-v1", run_dir=tmp_path / "run", callbacks=[rec], **{**TINY, "max_steps": 96})
    records = list(run())
    run.close()
    assert len(records) == 3
    assert rec.calls[:2] == ["on_train_start", "on_checkpoint"]  # the resumable 'last' is saved at the start
    per_iter = rec.calls[2:]
    assert per_iter.count("before_collect") == per_iter.count("after_update") == 3
    assert per_iter.count("on_evaluate") == 3 and per_iter.count("should_stop") == 3
    first = per_iter[:per_iter.index("should_stop") + 1]
    assert first[:3] == ["before_collect", "after_update", "on_evaluate"]
    assert per_iter.count("on_best") == sum(r.new_best for r in records) >= 1
    assert "best" in rec.checkpoints and rec.checkpoints[-1] == "last"
    assert set(rec.calls) == set(HOOKS) - {"on_env_step"}  # after every env step: tests/test_env_step_hook.py


def test_on_best_finds_the_new_best_checkpoint_written(tmp_path):
    """on_best ran before the run saved 'best', so a hook copying checkpoints/best got the previous best (or
    nothing at the first); Stable-Baselines3's callback_on_new_best runs after best_model is saved."""
    import json

    seen = []

    def on_best(trainer, result):
        meta = tmp_path / "run" / "checkpoints" / "best.json"
        seen.append((trainer.step, json.loads(meta.read_text())["step"] if meta.exists() else None))

    run = canter.make_trainer("ppo", "CartPole-v1", run_dir=tmp_path / "run", hooks={"on_best": on_best},
                              **{**TINY, "max_steps": 96})
    records = list(run())
    run.close()
    assert len(seen) == sum(r.new_best for r in records) >= 1
    assert all(step == saved for step, saved in seen), seen


def test_plain_callables_and_stop_reasons():
    steps: list[int] = []

    def stop_at_96(trainer):
        return trainer.step >= 96

    trainer = canter.make_trainer("ppo", "CartPole-v1", hooks={"after_update": lambda t, losses: steps.append(t.step),
                                                               "should_stop": stop_at_96}, **TINY)
    records = list(trainer())
    trainer.close()
    assert steps == [32, 64, 96]
    assert records[-1].stop_reason == "stop_at_96" and records[-1].done


def test_a_duck_typed_callback_that_returns_true_is_named_by_its_class():
    class StopAtSixtyFour:  # no Callback base: a class with hook methods is a callback too
        def should_stop(self, trainer):
            return trainer.step >= 64

    trainer = canter.make_trainer("ppo", "CartPole-v1", callbacks=[StopAtSixtyFour()], **TINY)
    records = list(trainer())
    trainer.close()
    assert records[-1].stop_reason == "stop_at_sixty_four" and records[-1].step == 64  # was 'callback'


@pytest.mark.parametrize("value, want", [(True, [(64, "stop_requested")]), (False, [(640, "max_steps")])])
def test_stop_requested_set_by_a_hook_to_a_bool(value, want):
    # True stopped with stop_reason True (summary.json: true); False stopped the run after its first iteration
    def request(trainer, losses):
        if trainer.step >= 64:
            trainer.stop_requested = value

    trainer = canter.make_trainer("ppo", "CartPole-v1", hooks={"after_update": request}, **TINY)
    records = list(trainer())
    trainer.close()
    assert [(r.step, r.stop_reason) for r in records if r.done] == want


def test_hooks_and_callbacks_named_in_yaml(tmp_path, monkeypatch):
    (tmp_path / "my_hooks.py").write_text(textwrap.dedent("""
        from canter.callbacks import Callback
        SEEN = []
        def log_step(trainer, losses):
            SEEN.append(("after_update", trainer.step))
        class StopAt(Callback):
            def __init__(self, step=10**9):
                self.step = step
            def should_stop(self, trainer):
                return "stop_at" if trainer.step >= self.step else None
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    cfg = tmp_path / "run.yaml"
    cfg.write_text("hooks: {after_update: 'my_hooks:log_step'}\ncallbacks: [{'my_hooks:StopAt': {step: 64}}]\n")
    trainer = canter.make_trainer("ppo", "CartPole-v1", config_file=cfg, **TINY)
    records = list(trainer())
    trainer.close()
    import my_hooks

    assert my_hooks.SEEN == [("after_update", 32), ("after_update", 64)]
    assert records[-1].stop_reason == "stop_at"


def test_a_callbacks_entry_that_is_not_a_callback_class_is_never_called(tmp_path, monkeypatch):
    """A resumed run builds the callbacks its checkpoint's JSON names: {'os:system': {command: ...}} ran a
    shell command (seen with canter train --resume on an edited last.json), subprocess:Popen a process."""
    from canter.callbacks import config_callbacks

    (tmp_path / "my_factories.py").write_text("CALLED = []\ndef make(**kw):\n    CALLED.append(kw)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for entry in ({"my_factories:make": {"x": 1}}, {"subprocess:Popen": {"args": ["true"]}}):
        with pytest.raises(CanterError, match="callback class"):
            config_callbacks([entry], {})
    import my_factories

    assert my_factories.CALLED == []
    assert type(config_callbacks(["canter.callbacks:StepBudget"], {})[0]).__name__ == "StepBudget"


@pytest.mark.parametrize("text, needle", [
    ("hooks: {after_updat: 'x:y'}", "after_update"),
    ("hooks: {after_update: 'no_colon'}", "module:function"),
    ("callbacks: [42]", "module:Name"),
    ("callbacks: [{'a:B': 1}]", "kwargs"),
])
def test_bad_hook_config_is_a_clear_error(tmp_path, text, needle):
    cfg = tmp_path / "run.yaml"
    cfg.write_text(text)
    with pytest.raises(CanterError, match=needle):
        resolve_config("ppo", "CartPole-v1", cfg)


def test_unimportable_hook_is_a_clear_error():
    with pytest.raises(CanterError, match="cannot import module"):
        canter.make_trainer("ppo", "CartPole-v1", sets=["hooks={after_update: 'no_such_mod_xyz:fn'}"], **TINY)


@pytest.mark.parametrize("how", ["yaml", "python"])
def test_a_callback_class_given_as_a_hook_is_refused(how):
    # it was called as the hook: should_stop built a (truthy) object, so the run stopped after one iteration
    kwargs = ({"sets": ["hooks={should_stop: 'canter.callbacks:StepBudget'}"]} if how == "yaml"
              else {"hooks": {"should_stop": EarlyStopping}})
    with pytest.raises(CanterError, match="needs a function, got the class .*goes in callbacks"):
        canter.make_trainer("ppo", "CartPole-v1", **kwargs, **TINY)


def test_callback_whose_constructor_refuses_its_arguments_is_one_line(tmp_path, monkeypatch):
    """A YAML-named callback class raising (a ValueError for a bad kwarg value) is a CanterError naming the
    callback and the user's file and line, as a user model's is (it used to escape as a traceback)."""
    (tmp_path / "my_strict_cb.py").write_text(textwrap.dedent("""
        from canter.callbacks import Callback
        class Strict(Callback):
            def __init__(self, patience=1):
                if patience < 1:
                    raise ValueError("patience must be >= 1")
            def should_stop(self, trainer):
                return None
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(CanterError, match=r"cannot build callback 'my_strict_cb:Strict': ValueError: patience must "
                                          r"be >= 1 \(.*my_strict_cb.py, line 6\)"):
        canter.make_trainer("ppo", "CartPole-v1", sets=["callbacks=[{'my_strict_cb:Strict': {patience: 0}}]"], **TINY)


def test_a_callback_class_instead_of_an_object_is_refused_before_anything_is_written(tmp_path):
    """callbacks=[Recorder] (the class) had its hooks called unbound: a TypeError at on_train_start, after the
    run directory was written (config.yaml, parquet files, a summary of 0 steps)."""
    with pytest.raises(CanterError, match=r"pass Recorder\(\) instead of Recorder"):
        canter.make_trainer("ppo", "CartPole-v1", run_dir=tmp_path / "run", callbacks=[Recorder], **TINY)
    assert not (tmp_path / "run").exists()


def test_one_callback_object_alone_is_taken_and_other_shapes_are_one_line_errors():
    """callbacks=Recorder() (SB3's ``callback=`` takes one object) was the TypeError
    "'Recorder' object is not iterable", and hooks=[fn] an AttributeError "'list' object has no attribute 'items'"."""
    rec = Recorder()
    trainer = canter.make_trainer("ppo", "CartPole-v1", callbacks=rec, **{**TINY, "max_steps": 32})
    list(trainer())
    trainer.close()
    assert rec.calls[0] == "on_train_start" and "after_update" in rec.calls
    with pytest.raises(CanterError, match=r"pass Recorder\(\) instead of Recorder"):
        canter.make_trainer("ppo", "CartPole-v1", callbacks=Recorder, **TINY)
    with pytest.raises(CanterError, match="callbacks takes a list of callback objects, got int"):
        canter.make_trainer("ppo", "CartPole-v1", callbacks=3, **TINY)
    with pytest.raises(CanterError, match="hooks takes a dict of hook name -> callable.*got list"):
        canter.make_trainer("ppo", "CartPole-v1", hooks=[print], **TINY)


def test_learner_explorer_trainers_call_the_hooks_too():
    # IMPALA runs its learner/explorer driver in one process without Ray; the hooks are the same
    steps: list[int] = []
    trainer = canter.make_trainer("impala", "CartPole-v1", hooks={"after_update": lambda t, losses: steps.append(t.step),
                                                                  "should_stop": lambda t: t.step >= 3 * 32},
                                  n_envs=2, n_steps=16, eval_every=0, max_steps=640, tensorboard=False)
    records = list(trainer())
    trainer.close()
    assert steps == [32, 64, 96]
    assert records[-1].stop_reason == "should_stop"  # a lambda is named by its hook (was '<lambda>')


def test_a_misspelled_callback_argument_is_answered_with_the_closest():
    """callbacks: [{canter.callbacks:EarlyStopping: {patiense: 2}}] said only "Patience.__init__() got an unexpected
    keyword argument 'patiense'"; the closest parameter is named now."""
    with pytest.raises(CanterError, match=r"unexpected keyword argument 'patiense'; did you mean 'patience'\?$"):
        config_callbacks([{"canter.callbacks:EarlyStopping": {"patiense": 2}}], {})
    with pytest.raises(CanterError, match=r"unexpected keyword argument 'zzz'$"):  # nothing close: as before
        config_callbacks([{"canter.callbacks:PlateauLR": {"zzz": 2}}], {})


def test_a_function_or_a_path_in_python_callbacks_says_where_it_goes():
    """``callbacks=[fn]`` or ``callbacks=["my.mod:Cb"]`` (the YAML form) was '<...> has none of the hook methods',
    naming neither hooks= nor the run config's callbacks."""
    from canter.callbacks import as_callbacks

    def log_losses(trainer, losses):
        pass

    with pytest.raises(CanterError, match=r"got the function 'log_losses'; a function goes in hooks, by the hook it "
                                          r"is for: hooks=\{'after_update': fn\}"):
        as_callbacks([log_losses])
    with pytest.raises(CanterError, match=r"a path such as 'my\.mod:Cb' goes in the run config's callbacks \(YAML, or "
                                          r"sets=\"callbacks=\[my\.mod:Cb\]\"\)"):
        as_callbacks(["my.mod:Cb"])

    class Both:  # a callable object with hook methods is a callback
        def __call__(self):
            pass

        def after_update(self, trainer, losses):
            pass

    assert len(as_callbacks([Both()])) == 1


def test_an_after_update_hook_logs_numbers_it_adds_to_losses_and_is_refused_anything_else(tmp_path):
    """Stable-Baselines3's self.logger.record: numbers an after_update hook adds to losses are logged with the
    algorithm's (updates.parquet, TensorBoard). A string there ended the run in TensorBoard's float() traceback."""
    import pyarrow.parquet as pq

    def count(trainer, losses):
        losses["custom/episodes"] = trainer.episode_count

    quick = {**TINY, "max_steps": 128, "eval_every": 0}
    canter.train("ppo", "CartPole-v1", run_dir=tmp_path / "run", hooks={"after_update": count}, **quick)
    logged = pq.read_table(tmp_path / "run" / "updates.parquet").to_pydict()["custom/episodes"]
    assert len(logged) > 1 and logged == sorted(logged) and logged[-1] > 0

    def note(trainer, losses):
        losses["note"] = "slow"

    with pytest.raises(CanterError, match=r"^after_update hook .*note left losses\['note'\] = 'slow': the values in "
                                          r"losses are logged as numbers"):
        canter.train("ppo", "CartPole-v1", run_dir=tmp_path / "bad", hooks={"after_update": note}, **quick)


def test_a_config_callback_whose_only_hook_is_misspelt_is_named_so(tmp_path, monkeypatch):
    """In a config's callbacks, a class whose only method is a misspelt hook (on_evalute) was refused as not being a
    callback class at all ("... got 'my_cbs:Cb'"), where Python's callbacks= names the method it defines."""
    from canter.callbacks import config_callbacks

    (tmp_path / "my_cbs.py").write_text("class Cb:\n    def on_evalute(self, trainer, result):\n        pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(CanterError, match=r"callback class: callback my_cbs:Cb has none of the hook methods .* "
                                          r"\(it defines on_evalute: none is called\)$"):
        config_callbacks(["my_cbs:Cb"], {})


def test_a_config_callback_subclass_whose_only_hook_is_misspelt_is_refused_unbuilt(tmp_path, monkeypatch):
    """A Callback subclass has Callback's hooks, which do nothing: one whose only method is misspelt passed the config
    check, was built with the entry's kwargs, and was refused later without "a 'callbacks' entry must name a callback
    class:" (docs/training-control.md says the config's line has it), where a plain class was refused unbuilt."""
    from canter.callbacks import config_callbacks

    (tmp_path / "my_sub_cbs.py").write_text("from canter.callbacks import Callback\nBUILT = []\n"
                                            "class Cb(Callback):\n    def __init__(self):\n        BUILT.append(1)\n"
                                            "    def on_evalute(self, trainer, result):\n        pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(CanterError, match=r"^a 'callbacks' entry must name a callback class: callback my_sub_cbs:Cb "
                                          r"has none of the hook methods .* \(it defines on_evalute: none is called\)$"):
        config_callbacks(["my_sub_cbs:Cb"], {})
    import my_sub_cbs

    assert my_sub_cbs.BUILT == []
