"""Trainer hooks and callbacks, early stopping, plateau LR reduction and LR schedules."""
from __future__ import annotations

import math
import textwrap

import numpy as np
import pytest

import canter
from canter.callbacks import HOOKS, Callback, EarlyStopping, PlateauLR, TargetReward, config_callbacks
from canter.config import resolve_config
from canter.errors import CanterError
from canter.schedules import lr_decay
from support import scripted

# 2 envs x 16 steps = 32 env steps per iteration; eval_every=32: one evaluation per iteration
TINY = dict(n_envs=2, n_steps=16, batch_size=32, n_epochs=1, eval_every=32, eval_episodes=1, max_steps=640,
            tensorboard=False)


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


def test_early_stopping_triggers_after_patience_evaluations_without_improvement():
    returns = [1.0, 2.0, 3.0, 3.0, 2.5, 3.0, 9.0, 9.0]  # best 3.0 at the 3rd; the 4th-6th do not beat it
    trainer = canter.make_trainer("ppo", "CartPole-v1", early_stopping=3, **TINY)
    seen = scripted(trainer, returns)
    records = list(trainer())
    trainer.close()
    assert seen == returns[:6]
    assert records[-1].stop_reason == "early_stopping" and records[-1].step == 6 * 32


@pytest.mark.parametrize("make,needle", [
    (lambda: EarlyStopping(0), "patience must be an int >= 1"),  # stopped after the first iteration
    (lambda: PlateauLR(0), "patience must be an int >= 1"),  # reduced the learning rate at every evaluation
    (lambda: EarlyStopping(2.5), "patience must be an int >= 1"),
    (lambda: EarlyStopping(2, monitor="Eval"), "did you mean 'eval'"),  # silently watched the eval return
    # plateau_factor: 5 is refused; PlateauLR(factor=5) multiplied the learning rate by 5 at every plateau
    (lambda: PlateauLR(2, factor=5), r"factor must be a number in \(0, 1\]"),
    (lambda: PlateauLR(2, factor=0.0), r"factor must be a number in \(0, 1\]"),
    (lambda: EarlyStopping(2, min_delta=-1.0), "min_delta must be a number >= 0"),
    (lambda: EarlyStopping(2, min_delta=float("nan")), "min_delta must be a number >= 0"),
    # target_reward: .nan is refused; TargetReward(nan) (or {target: nan} in 'callbacks') never stopped the run
    (lambda: TargetReward(float("nan")), "target must be a finite number, got nan"),
    (lambda: TargetReward("inf"), "target must be a finite number, got 'inf'"),
    (lambda: TargetReward(None), "target must be a number, got None"),
    (lambda: config_callbacks([{"canter.callbacks:TargetReward": {"target": "nan"}}], {}),
     r"^cannot build callback 'canter.callbacks:TargetReward': TargetReward's target must be a finite number"),
])
def test_patience_callbacks_made_in_python_check_their_arguments_as_the_run_keys_do(make, needle):
    with pytest.raises(CanterError, match=needle):
        make()


@pytest.mark.parametrize("key", ["early_stopping", "plateau_patience"])
def test_patience_without_periodic_evaluations_is_refused(key):
    # eval_every: 0 evaluates only at the end, so the patience never ran out: the setting silently did nothing
    with pytest.raises(CanterError, match=f"'{key}' counts evaluations, but eval_every: 0"):
        canter.make_trainer("ppo", "CartPole-v1", **{**TINY, "eval_every": 0, key: 1})


def test_early_stopping_min_delta():
    trainer = canter.make_trainer("ppo", "CartPole-v1", early_stopping=2, min_delta=0.5, **TINY)
    seen = scripted(trainer, [1.0, 1.4, 1.6, 1.9, 2.0, 5.0])  # 1.4: +0.4 is no improvement; 1.6: +0.6 is
    records = list(trainer())
    trainer.close()
    assert seen == [1.0, 1.4, 1.6, 1.9, 2.0] and records[-1].stop_reason == "early_stopping"


def test_early_stopping_on_the_rolling_training_return():
    trainer = canter.make_trainer("ppo", "CartPole-v1", early_stopping=2, monitor="rolling",
                                  **{**TINY, "max_steps": 3200})
    scripted(trainer, [0.0] * 100)  # flat evaluation returns: only the training returns may count
    records = list(trainer())
    trainer.close()
    best, bad, stop_at = None, 0, None  # the rule, replayed on the rolling returns the records show
    for i, r in enumerate(records):
        if r.rolling_return is not None:
            if best is None or r.rolling_return > best:
                best, bad = r.rolling_return, 0
            else:
                bad += 1
        if bad >= 2:
            stop_at = i
            break
    assert stop_at is not None, "CartPole's rolling return never stalled twice in 100 iterations"
    assert len(records) == stop_at + 1 and records[-1].stop_reason == "early_stopping"


def test_plateau_reduces_every_learning_rate_at_the_right_evaluation():
    returns = [1.0, 2.0, 2.0, 1.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0]
    lrs: list[float] = []
    trainer = canter.make_trainer(
        "ppo", "CartPole-v1", plateau_patience=2, plateau_factor=0.5, lr=1e-3, lr_schedule="constant",
        hooks={"after_update": lambda t, losses: lrs.append(t.algorithm.optimizers()["optimizer"].param_groups[0]["lr"])},
        **{**TINY, "max_steps": 10 * 32},
    )
    scripted(trainer, returns)
    records = list(trainer())
    trainer.close()
    plateau = next(cb for cb in trainer.hooks.callbacks if type(cb).__name__ == "PlateauLR")
    # no improvement at evaluations 3, 4 -> reduce at 4; 5 improves; 6, 7 -> reduce at 7; 8, 9 -> reduce at 9
    assert plateau.reductions == [4 * 32, 7 * 32, 9 * 32]
    # the optimizer uses the reduced rate from the next update on (PPO's own schedule is constant)
    expected = [1e-3] * 4 + [5e-4] * 3 + [2.5e-4] * 2 + [1.25e-4]
    assert lrs == pytest.approx(expected, rel=1e-12)
    assert records[-1].losses["learning_rate"] == pytest.approx(1.25e-4)


def test_plateau_respects_min_lr():
    trainer = canter.make_trainer("dqn", "CartPole-v1", plateau_patience=1, plateau_factor=0.1, min_lr=1e-5, lr=1e-3,
                                  learning_starts=0, train_freq=32, net_arch=[16], buffer_size=1000, n_envs=2,
                                  eval_every=32, eval_episodes=1, max_steps=6 * 32, tensorboard=False)
    scripted(trainer, [1.0] * 6)
    list(trainer())
    trainer.close()
    assert trainer.algorithm.optimizers()["optimizer"].param_groups[0]["lr"] == pytest.approx(1e-5)


def test_lr_decay_shapes():
    assert lr_decay("constant", 50, 100) == 1.0
    assert lr_decay("linear", 25, 100, final=0.2) == pytest.approx(0.8)
    assert lr_decay("cosine", 0, 100, final=0.1) == pytest.approx(1.0)
    assert lr_decay("cosine", 50, 100, final=0.1) == pytest.approx(0.55)
    assert lr_decay("cosine", 200, 100, final=0.1) == pytest.approx(0.1)
    assert lr_decay("step", 250, 1000, every=100, factor=0.5) == pytest.approx(0.25)


@pytest.mark.parametrize("decay", ["linear", "cosine", "step"])
def test_lr_decay_composes_with_the_algorithms_own_schedule(decay):
    seen: list[tuple[int, float]] = []
    trainer = canter.make_trainer(
        "ppo", "CartPole-v1", lr=1e-3, lr_schedule="linear", lr_decay=decay, lr_decay_final=0.1, lr_decay_every=128,
        lr_decay_factor=0.5,
        hooks={"after_update": lambda t, losses: seen.append((t.step, losses["learning_rate"]))}, **TINY,
    )
    list(trainer())
    trainer.close()
    for step, lr in seen:
        p = step / 640
        own = 1e-3 * (1 - p)
        mult = {"linear": 1 - 0.9 * p, "cosine": 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * p)),
                "step": 0.5 ** (step // 128)}[decay]
        assert lr == pytest.approx(own * mult, rel=1e-9, abs=1e-15), (step, lr)


def test_reward_buffer_statistics():
    trainer = canter.make_trainer("ppo", "CartPole-v1", reward_window=5, **TINY)
    records = list(trainer())
    trainer.close()
    returns = [e.episode_return for r in records for e in r.episodes]
    steps = [e.step for r in records for e in r.episodes]
    stats = trainer.reward_stats()
    assert stats["mean"] == pytest.approx(np.mean(returns[-5:]))
    assert stats["max"] == max(returns[-5:]) and stats["min"] == min(returns[-5:])
    # the best of the rolling means after each step's episodes (not between two that ended on one step)
    best = max(np.mean(returns[max(0, i - 4):i + 1]) for i in range(len(returns))
               if i + 1 == len(returns) or steps[i + 1] != steps[i])
    assert stats["best_mean"] == pytest.approx(best) == records[-1].best_rolling_return
    assert stats["episodes"] == len(returns)


def test_the_best_rolling_return_does_not_depend_on_the_order_of_envs_that_end_on_one_step():
    """Four Pendulum envs end their 200-step episodes on the same vector step: the best rolling return is
    the mean after all four (-1172.6), not the mean after the first two in env order (-929.6 was)."""
    from types import SimpleNamespace

    returns = np.array([-960.51, -898.64, -1206.09, -1625.08])
    bests = []
    for order in (returns, returns[::-1]):
        trainer = canter.make_trainer("ppo", "CartPole-v1", **TINY)
        trainer.env.close()
        trainer.env = SimpleNamespace(finished_envs=np.arange(4), finished_returns=order,
                                      finished_lengths=np.full(4, 200), close=lambda: None)
        trainer.record_episodes()
        bests.append(trainer.best_rolling_return)
        assert [e.episode_return for e in trainer._pending] == order.tolist()
        trainer.close()
    assert bests == [pytest.approx(returns.mean())] * 2


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


@pytest.mark.parametrize("stop", ["max_steps", "callback"])
def test_a_final_evaluation_that_reaches_the_target_is_a_target_reward_stop(stop):
    """The evaluation made when a time budget or a callback ends the run between two evaluations counts
    for the target, as the last evaluation at max_steps does (it said 'max_seconds' / the callback's reason
    with solved true, and an extended run then stopped for the target after one more iteration)."""
    hooks = {} if stop == "max_steps" else {"should_stop": lambda t: "mine" if t.step >= 96 else None}
    trainer = canter.make_trainer("ppo", "CartPole-v1", target_reward=5.0, hooks=hooks,
                                  **{**TINY, "eval_every": 320, "max_steps": 96 if stop == "max_steps" else 640})
    seen = scripted(trainer, [9.0])
    records = list(trainer())
    trainer.close()
    assert seen == [9.0] and records[-1].step == 96
    assert records[-1].stop_reason == "target_reward"


def test_non_finite_evaluations_count_as_evaluations_without_improvement():
    """A diverged policy's NaN returns (divergence_guard: off) were skipped: neither early stopping nor the
    plateau ever acted on them, and the run trained on to max_steps."""
    nan = float("nan")
    trainer = canter.make_trainer("ppo", "CartPole-v1", early_stopping=3, plateau_patience=2, **TINY)
    seen = scripted(trainer, [1.0, nan, float("-inf"), nan, 5.0, 5.0])
    records = list(trainer())
    trainer.close()
    assert seen == [1.0, nan, float("-inf"), nan] and records[-1].stop_reason == "early_stopping"
    assert trainer.lr.scale == 0.5  # after the 2nd evaluation without improvement (then the count restarts)


def test_a_plateau_shows_in_the_learning_rate_of_an_algorithm_that_reports_none():
    """DQN reports no learning_rate: its plateau reductions were seen nowhere (updates, TensorBoard, console)."""
    trainer = canter.make_trainer("dqn", "CartPole-v1", plateau_patience=1, n_envs=2, train_freq=32, learning_starts=0,
                                  gradient_steps=1, batch_size=16, eval_every=32, eval_episodes=1, max_steps=128,
                                  tensorboard=False, lr=1e-3)
    scripted(trainer, [1.0, 1.0, 1.0, 1.0])
    rates = [r.losses.get("learning_rate") for r in trainer()]
    trainer.close()
    assert rates == pytest.approx([1e-3, 1e-3, 5e-4, 2.5e-4])  # each reduction applies from the next iteration


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
