"""A goal env whose close() raises, trained with hindsight replay (her_goals): the trainer closes with a warning.

20922fb made the training and evaluation envs' close() errors warnings; the off-policy trainer's own goal env copy
(made for compute_reward) still raised at its close, the traceback at the end of a finished run.
"""
from __future__ import annotations

import warnings

import gymnasium as gym

import canter
from canter.envs.vector import _CLOSE_WARNED
from canter.errors import CanterWarning
from goal_env import PointGoalEnv

CLOSED = [0]


class PointGoalCloseRaises(PointGoalEnv):
    """PointGoal-v0 whose close() raises (counted in ``CLOSED``)."""

    def close(self) -> None:  # noqa: D102
        CLOSED[0] += 1
        raise RuntimeError("the simulator's licence server is gone")


if "PointGoalCloseRaises-v0" not in gym.registry:
    gym.register("PointGoalCloseRaises-v0", entry_point=PointGoalCloseRaises, disable_env_checker=True)


def test_hindsight_trainer_closes_a_goal_env_whose_close_raises():
    trainer = canter.make_trainer("sac", "test_her_close_raises:PointGoalCloseRaises-v0", seed=0, max_steps=64,
                                  her_goals=4, learning_starts=32, batch_size=16, net_arch=[8])
    assert trainer._goal_env is not None  # (the copy for compute_reward was made)
    _CLOSE_WARNED.clear()  # (warned once per process)
    before = CLOSED[0]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer.close()
    assert CLOSED[0] - before >= 3  # training, evaluation and the goal env's copies were all asked
    said = {str(w.message) for w in caught if issubclass(w.category, CanterWarning)}
    assert len(said) == 1 and "PointGoalCloseRaises-v0" in said.pop(), said
