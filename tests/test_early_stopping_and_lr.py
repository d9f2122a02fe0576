"""Early stopping, plateau LR reduction, LR schedules and the rolling-return statistics the stopping rules
watch (split from test_hooks.py, which keeps the trainer hooks and callbacks)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import canter
from canter.callbacks import EarlyStopping, PlateauLR, TargetReward, config_callbacks
from canter.errors import CanterError
from canter.schedules import lr_decay
from support import HOOKS_TINY as TINY
from support import scripted


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
