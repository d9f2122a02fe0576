"""monitor: rolling reads the reward buffer of training episodes at each evaluation. Where no training episode had
ended since the last evaluation (episodes longer than eval_every), the same value was read again and counted as an
evaluation without improvement: DQN on MountainCar-v0 (200-step episodes), eval_every 50, early_stopping 3 stopped at
step 350 after one training episode. Such an evaluation is not counted now, as one before the first episode is not."""
from __future__ import annotations

import warnings
from types import SimpleNamespace

import pytest

import canter
from canter.callbacks import EarlyStopping, PlateauLR


def _reading(episodes: int, rolling: float | None) -> SimpleNamespace:
    return SimpleNamespace(episode_count=episodes, rolling_return=lambda: rolling)


def test_an_evaluation_without_a_new_training_episode_does_not_use_up_the_patience():
    stop = EarlyStopping(2, monitor="rolling")
    for episodes, rolling in ((0, None), (1, -200.0), (1, -200.0), (1, -200.0), (1, -200.0), (2, -200.0)):
        stop.on_evaluate(_reading(episodes, rolling), None)
        assert stop.should_stop(None) is None
    stop.on_evaluate(_reading(3, -200.0), None)  # the second reading without improvement
    assert stop.should_stop(None) == "early_stopping"


def test_the_eval_monitor_counts_every_evaluation():
    stop = EarlyStopping(2)
    for _ in range(3):
        stop.on_evaluate(_reading(1, None), SimpleNamespace(mean_return=1.0))
    assert stop.should_stop(None) == "early_stopping"


def test_the_episodes_seen_are_saved_and_restored():
    plateau = PlateauLR(2, monitor="rolling")
    plateau.on_evaluate(_reading(4, -1.0), None)
    again = PlateauLR(2, monitor="rolling")
    again.load_state_dict(plateau.state_dict())
    assert again.episodes_seen == 4 and again.best == -1.0
    again.load_state_dict({"best": -1.0, "bad": 1})  # a checkpoint from before: its next reading counts
    assert again.episodes_seen is None


@pytest.mark.slow  # ~2 s on a loaded host
def test_a_run_of_long_episodes_is_not_stopped_after_one():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer = canter.make_trainer("dqn", "MountainCar-v0", max_steps=900, eval_every=50, eval_episodes=1, n_envs=1,
                                      early_stopping=3, monitor="rolling", target_reward=None,
                                      sets=["learning_starts=50", "train_freq=50"])
        records = list(trainer())
    # the first episode ends at step 200, then one every 201 steps: 4 episodes, 3 without improvement, at 803 or so
    assert records[-1].stop_reason == "early_stopping" and trainer.episode_count == 4, (records[-1].step,
                                                                                       trainer.episode_count)
