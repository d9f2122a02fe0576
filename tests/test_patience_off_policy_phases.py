"""An off-policy run evaluates between training phases of ``train_freq`` env steps (whole vector steps), as an
on-policy run between rollouts, but the idle-patience warning counted its evaluations as if one could come at any
step: DQN's CartPole preset (train_freq 256), max_steps 1000, eval_every 2000, early_stopping 3 was told
'--eval-every 333', which evaluates at 512, 768 and 1024 (3 times, the patience never acts), and eval_every 333 was not
warned about at all."""
from __future__ import annotations

import warnings

import canter
from canter.build_checks import evaluation_count
from canter.callbacks import Callback

TINY = dict(n_envs=1, train_freq=256, learning_starts=10_000, eval_episodes=1, target_reward=None, max_steps=1000)


def _idle(**kwargs) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        canter.make_trainer("dqn", "CartPole-v1", **{**TINY, **kwargs}).close()
    return [str(w.message) for w in caught if "can never act" in str(w.message)]


class _Count(Callback):
    def __init__(self) -> None:
        self.steps: list[int] = []

    def on_evaluate(self, trainer, result) -> None:  # noqa: D102
        self.steps.append(trainer.step)


def test_the_eval_every_offered_to_an_off_policy_run_counts_its_training_phases():
    said = _idle(eval_every=2000, early_stopping=3)
    assert len(said) == 1 and said[0].endswith("set eval_every below max_steps, e.g. 256 (--eval-every 256) or a "
                                               "smaller patience"), said  # it offered 333
    assert evaluation_count(1000, 256, 256) == 4 and not _idle(eval_every=256, early_stopping=3)


def test_an_off_policy_run_of_too_few_evaluations_between_phases_is_warned_about():
    said = _idle(eval_every=333, early_stopping=3)
    assert len(said) == 1 and "evaluates 3 times" in said[0] and "--eval-every 256" in said[0], said
    count = _Count()  # the trainer does evaluate 3 times: at the ends of the phases that pass 333, 666 and 1000
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", canter.CanterWarning)  # learning_starts: no updates, which are not tested
        trainer = canter.make_trainer("dqn", "CartPole-v1", callbacks=[count], **{**TINY, "eval_every": 333})
    try:
        for _ in trainer():
            pass
    finally:
        trainer.close()
    assert count.steps == [512, 768, 1024]


def test_an_off_policy_phase_is_named_as_such():
    said = _idle(max_steps=200, eval_every=100, early_stopping=1)
    assert len(said) == 1 and "max_steps (200) is one training phase (train_freq 256 on 1 env = 256 steps)" in said[0] \
        and said[0].endswith("set max_steps above 256 or a smaller train_freq"), said
    said = _idle(train_freq=100, n_envs=2, max_steps=1000, eval_every=2000, early_stopping=10)
    assert len(said) == 1 and said[0].endswith("the run evaluates at most 10 times (once per training phase of 100 "
                                               "steps): set a patience below 10 or a larger max_steps"), said
    assert not _idle(train_freq=[1, "episode"], eval_every=333, early_stopping=3)  # phases of varying size: not told


def test_acer_segments_are_counted_as_rollouts():
    """ACER evaluates between segments of n_steps x n_envs steps (20 x 8 = 160 on CartPole), but was counted as if
    at any step: max_steps 1000, eval_every 333 (evaluations at 480, 800 and 1120) was not warned about, and early_stopping 3 with
    eval_every 2000 was told 333."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        canter.make_trainer("acer", "CartPole-v1", max_steps=1000, eval_every=333, early_stopping=3,
                            eval_episodes=1, target_reward=None).close()
    said = [str(w.message) for w in caught if "can never act" in str(w.message)]
    assert len(said) == 1 and "evaluates 3 times" in said[0] and "--eval-every 320" in said[0], said  # 320, 640, 960, 1120
