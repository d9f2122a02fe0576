"""A synchronous learner's gather: the rollouts of several explorers were collected side by side, so row ``t`` of
each is one vector step of all their envs, as in one process with all the envs (``Learner.receive``)."""
from __future__ import annotations

import numpy as np
import pytest

from canter.distributed.pool import _Episodes
from canter.distributed.trainers import Learner
from canter.trainers.guard import Divergence


class _Learner:
    """A learner's bookkeeping only: ``Learner.receive`` and ``check_rollouts`` on a stand-in pool."""

    receive = Learner.receive
    check_rollouts = Learner.check_rollouts

    def __init__(self, explorers: int, envs: int, guard: bool = False) -> None:
        self.step, self.trajectory_bytes, self.version = 0, 0, 0
        self.pool = _Episodes()
        self.pool.envs_per_explorer, self.pool.remote = envs, False
        self._explorer_steps = np.zeros(explorers, np.int64)
        self.agent = type("Agent", (), {"ret_rms": None})()
        self.guard = type("Guard", (), {"enabled": guard})()
        self.recorded: list[tuple[float, int]] = []

    def record_episodes(self, steps: np.ndarray | None = None) -> None:  # (what Trainer.record_episodes reads)
        self.recorded += list(zip(self.pool.finished_returns.tolist(), steps.tolist()))


def _result(index: int, T: int, n: int, ends: list[tuple[int, int, float]]) -> dict:
    """Explorer ``index``'s rollout of ``T`` rows x ``n`` envs whose episodes ``(row, env, return)`` ended."""
    rows, envs, returns = zip(*ends) if ends else ((), (), ())
    return {"obs": np.zeros((T, n, 3), np.float32), "last_obs": np.zeros((n, 3), np.float32),
            "rewards": np.ones((T, n), np.float32), "steps": T * n, "index": index, "version": 0,
            "episode_rows": np.asarray(rows, np.int64), "episode_envs": np.asarray(envs, np.int64),
            "episode_returns": np.asarray(returns, np.float64), "episode_lengths": np.full(len(rows), 9, np.int64)}


def test_a_gathers_episodes_are_stamped_with_the_vector_step_of_all_the_envs_in_its_order():
    """2 explorers x 2 envs, 4 rows: in one process with the 4 envs, an episode on row 3 ended at step 16 and one on
    row 0 at step 4. Stamped explorer after explorer, explorer 0's row-3 episode was at 8 and explorer 1's row-0
    episode at 10, after it (the second explorer's episodes all lay a whole rollout late)."""
    learner = _Learner(explorers=2, envs=2)
    learner.step = 100
    results = [_result(0, 4, 2, [(3, 1, 30.0)]), _result(1, 4, 2, [(0, 0, 10.0), (2, 1, 20.0)])]
    learner.pool._set_episodes(results)
    learner.receive(results)
    assert learner.step == 116
    assert learner.recorded == [(10.0, 104), (20.0, 112), (30.0, 116)]
    assert learner.pool.finished_envs.tolist() == [2, 3, 1]  # the sub-envs follow their episodes


def test_one_rollout_is_stamped_with_its_own_envs_steps():
    learner = _Learner(explorers=2, envs=2)
    results = [_result(1, 4, 2, [(2, 1, 20.0), (0, 0, 10.0)])]
    learner.pool._set_episodes(results)
    learner.receive(results)
    assert learner.recorded == [(20.0, 6), (10.0, 2)]  # an asynchronous rollout: its rows are its envs' steps


def test_a_non_finite_reward_in_a_gather_names_the_vector_step_of_all_the_envs():
    learner = _Learner(explorers=2, envs=2, guard=True)
    results = [_result(0, 4, 2, []), _result(1, 4, 2, [])]
    results[1]["rewards"][1, 0] = np.nan  # explorer 1's row 1: step (1 + 1) * 4 of all 4 envs
    learner.pool._set_episodes(results)
    with pytest.raises(Divergence) as info:
        learner.receive(results)
    assert info.value.step == 8  # was 12: explorer 0's whole rollout counted before explorer 1's rows


def test_a_gathers_first_non_finite_value_is_named_whichever_explorer_returned_it():
    """One process with the 4 envs meets explorer 1's NaN reward of row 1 (step 8) before explorer 0's of row 3
    (step 16): the gather's results were checked explorer after explorer, so it named step 16 and sub-env 1."""
    learner = _Learner(explorers=2, envs=2, guard=True)
    results = [_result(0, 4, 2, []), _result(1, 4, 2, [])]
    results[0]["rewards"][3, 1] = np.nan
    results[1]["rewards"][1, 0] = np.inf
    learner.pool._set_episodes(results)
    with pytest.raises(Divergence) as info:
        learner.receive(results)
    assert info.value.step == 8 and "sub-env 2" in str(info.value)


def test_on_one_vector_step_an_observation_is_named_before_a_reward():
    """As the single-process check of a vector step: its observations first, then its rewards."""
    learner = _Learner(explorers=2, envs=2, guard=True)
    results = [_result(0, 4, 2, []), _result(1, 4, 2, [])]
    results[0]["rewards"][2, 0] = np.nan  # row 2: step 12, sub-env 0
    results[1]["obs"][3, 1] = np.nan  # returned by row 2 too (obs row t + 1), sub-env 3
    learner.pool._set_episodes(results)
    with pytest.raises(Divergence) as info:
        learner.receive(results)
    assert info.value.step == 12 and "observation from the env (sub-env 3)" in str(info.value)
