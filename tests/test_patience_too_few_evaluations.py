"""early_stopping / plateau_patience P count evaluations without improvement after a first one, so a run of P
evaluations or fewer can never act on them. Only a run of one evaluation (at its end) was warned about: a run of
max_steps 2,000 evaluated every 1,000 steps (2 evaluations) with early_stopping 3 trained to its end without a word."""
from __future__ import annotations

import warnings

import pytest

import canter
from canter.build_checks import evaluation_count

TINY = dict(n_envs=2, batch_size=64, eval_episodes=1, target_reward=None)


def _idle(**kwargs) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        canter.make_trainer("ppo", "CartPole-v1", **{"n_steps": 32, **TINY, **kwargs}).close()
    return [str(w.message) for w in caught if "can never act" in str(w.message)]


@pytest.mark.parametrize("key", ["early_stopping", "plateau_patience"])
def test_a_patience_no_fewer_than_the_runs_evaluations_is_warned_about(key):
    said = _idle(max_steps=256, eval_every=128, **{key: 2})  # evaluations at 128 and 256
    assert said == [f"{key} (2) counts evaluations without improvement after a first one, but max_steps (256) with "
                    f"eval_every (128) evaluates 2 times, so it can never act; set eval_every to at most 96 "
                    f"(--eval-every 96) or a smaller patience"], said
    assert not _idle(max_steps=256, eval_every=96, **{key: 2})  # at 128, 192 and 256 (64-step rollouts): it may act
    assert not _idle(max_steps=256, eval_every=128, **{key: 1})


def test_both_patiences_are_named_together():
    said = _idle(max_steps=256, eval_every=128, early_stopping=2, plateau_patience=3)
    assert len(said) == 1 and "early_stopping (2) and plateau_patience (3) count evaluations" in said[0], said
    assert "set eval_every to at most 64" in said[0]  # 4 evaluations for a patience of 3


def test_a_patience_no_eval_every_can_serve_is_told_so():
    """Two 128-step rollouts evaluate at most twice, whatever eval_every: the warning does not offer one."""
    said = _idle(max_steps=256, eval_every=64, early_stopping=2, n_steps=64)
    assert len(said) == 1 and said[0].endswith("can never act; the run evaluates at most 2 times (once per rollout of "
                                               "128 steps): set a patience below 2 or a larger max_steps"), said


def test_evaluation_count_follows_the_trainers_evaluation_points():
    # docs/training-control.md: 512-step rollouts, eval_every 1000 evaluate at 1,024, 2,048, ...; 150-step ones with
    # eval_every 500 at 600, 1,050, 1,500
    assert evaluation_count(5000, 1000, 512) == 5 and evaluation_count(1500, 500, 150) == 3
    assert evaluation_count(1000, 300) == 4 and evaluation_count(1000, 500) == 2  # the end's own, where it is none
    assert evaluation_count(600, 100, 150) == 4 and evaluation_count(1024, 1000, 512) == 1


def test_a_run_without_rollouts_is_not_told_of_rollouts_of_one_step():
    """Where iterations vary (off-policy phases of train_freq episodes), a patience of max_steps or more was told 'the
    run evaluates at most 100 times (once per rollout of 1 steps)': DQN has no rollouts. (Phases of train_freq steps
    are whole iterations, counted as such: tests/test_patience_off_policy_phases.py; this test ran the preset's 256-step
    phases, one evaluation, and expected 'at most 100 times' for them.)"""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        canter.make_trainer("dqn", "CartPole-v1", max_steps=100, eval_every=50, early_stopping=150, eval_episodes=1,
                            target_reward=None, train_freq=[1, "episode"]).close()
    said = [str(w.message) for w in caught if "can never act" in str(w.message)]
    assert len(said) == 1 and said[0].endswith("can never act; the run evaluates at most 100 times (at most once per "
                                               "step): set a patience below 100 or a larger max_steps"), said


@pytest.mark.parametrize("eval_every", [5000, 4096, 4000])  # >= max_steps; 4000: first evaluation at the end's rollout
def test_the_eval_every_offered_for_one_evaluation_at_the_end_gives_enough(eval_every):
    """With eval_every >= max_steps (or a first evaluation at the last rollout's end) the warning offered
    max_steps // 10 (or the last rollout's start), which on-policy rollouts can leave as idle: PPO's 512-step rollouts,
    max_steps 1024 and early_stopping 3 were told '--eval-every 102', which evaluates twice, and were warned again.
    The value offered now gives the patience one more evaluation, or the warning says none does."""
    kw = dict(TINY, n_envs=16, n_steps=32, early_stopping=3)
    said = _idle(max_steps=4096, eval_every=eval_every, **kw)
    assert len(said) == 1 and said[0].endswith("or a smaller patience"), said
    offered = int(said[0].split("--eval-every ")[1].split(")")[0])
    assert evaluation_count(4096, offered, 512) >= 4 and not _idle(max_steps=4096, eval_every=offered, **kw)
    said = _idle(max_steps=1024, eval_every=2048, **kw)  # two rollouts: two evaluations whatever eval_every
    assert len(said) == 1 and said[0].endswith("the run evaluates at most 2 times (once per rollout of 512 steps): "
                                               "set a patience below 2 or a larger max_steps"), said


@pytest.mark.parametrize("algo", ["acer", "impala", "appo"])
def test_segments_and_in_process_async_rollouts_count_as_rollouts(algo):
    """ACER evaluates at its segments' ends and IMPALA / APPO in one process at their rollouts' ends (whole iterations
    of n_steps x n_envs), but were checked as iterations of one step: acer with segments of 160 steps, max_steps 320 and
    early_stopping 2 was told '--eval-every 159', which evaluates at 160 and 320 only, and was not warned again."""
    kw = dict(n_envs=8, n_steps=20, max_steps=320, early_stopping=2, eval_episodes=1, target_reward=None)
    for eval_every in (1000, 159):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            canter.make_trainer(algo, "CartPole-v1", eval_every=eval_every, **kw).close()
        said = [str(w.message) for w in caught if "can never act" in str(w.message)]
        assert len(said) == 1 and said[0].endswith("the run evaluates at most 2 times (once per rollout of 160 steps): "
                                                   "set a patience below 2 or a larger max_steps"), (eval_every, said)
