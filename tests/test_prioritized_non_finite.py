"""Prioritized replay never holds NaN or inf priorities: a diverged update's non-finite TD errors
are skipped (with divergence_guard: off nothing stops such a run)."""
from __future__ import annotations

import logging

import numpy as np
import pytest

import canter
from canter.data import PrioritizedReplayBuffer


def _filled(n: int) -> PrioritizedReplayBuffer:
    buf = PrioritizedReplayBuffer(n, (1,), (), alpha=0.6)
    obs = np.zeros((1, 1), np.float32)
    for _ in range(n):
        buf.add(obs, np.zeros(1), np.zeros(1, np.float32), obs + 1, np.zeros(1, bool))
        obs = obs + 1
    return buf


def test_non_finite_td_errors_keep_the_previous_priorities_and_sampling_works(caplog):
    """One NaN priority made the tree's total NaN: every draw was slot 0 with NaN weights, for good;
    an inf one became the max priority that every new transition got."""
    buf = _filled(4)
    buf.update_priorities(np.array([1]), np.array([2.0]))
    before = buf.sums.leaves.copy()
    with caplog.at_level(logging.WARNING, "canter"):
        buf.update_priorities(np.array([0, 1, 2]), np.array([np.nan, np.inf, 3.0]))
        buf.update_priorities(np.array([0]), np.array([-np.inf]))
    assert sum("non-finite TD errors" in r.getMessage() for r in caplog.records) == 1
    leaves = buf.sums.leaves
    assert np.isfinite(leaves).all() and np.isfinite(buf.sums.total) and np.isfinite(buf.mins.min)
    assert leaves[0] == before[0] and leaves[1] == before[1] and leaves[2] == pytest.approx((3.0 + buf.eps) ** 0.6)
    assert buf.max_priority == pytest.approx(3.0 + buf.eps)
    batch = buf.sample(64)
    assert np.isfinite(batch.weights.numpy()).all() and len(set(batch.indices.tolist())) > 1


def test_a_saved_state_with_non_finite_priorities_loads_finite():
    state = _filled(4).state_dict()
    state["priorities"][:2] = [np.nan, np.inf]
    state["max_priority"] = np.inf
    buf = _filled(4)
    buf.load_state_dict(state)
    assert np.isfinite(buf.sums.leaves).all() and buf.max_priority == 1.0
    assert np.isfinite(buf.sample(16).weights.numpy()).all()


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("guard", ["off", "restore"])
def test_a_diverging_dqn_run_keeps_the_sum_tree_finite(guard):
    """lr 1e30: DQN's second update leaves huge but finite parameters, whose TD errors are inf, and the
    third NaN. divergence_guard: off lets the run go on; restore reloaded the agent but kept the buffer's
    inf priorities (NaN importance weights from then on)."""
    trainer = canter.make_trainer("dqn", "CartPole-v1", seed=0, lr=1e30, prioritized=True, learning_starts=64,
                                  batch_size=16, buffer_size=500, net_arch=[8], divergence_guard=guard,
                                  max_steps=200 if guard == "off" else 300, eval_episodes=int(guard == "restore"),
                                  eval_every=100, tensorboard=False)
    list(trainer())
    trainer.close()
    sums = trainer.buffer.sums
    assert trainer.algorithm.updates > 0 or trainer.guard.restores > 0
    assert np.isfinite(sums.leaves).all() and np.isfinite(sums.total) and np.isfinite(trainer.buffer.max_priority)


@pytest.mark.parametrize("max_priority", [np.nan, 0.0, -1.0])
def test_a_saved_state_with_a_nan_or_non_positive_max_priority_gives_new_transitions_priority_one(max_priority):
    """NaN was already reset to 1 (kept here as a guard); 0 was kept (new transitions were never drawn
    and every importance weight was 0) and so was -1 (a new transition's priority (-1) ** alpha was
    complex: NaN weights)."""
    state = _filled(4).state_dict()
    state["max_priority"] = max_priority
    buf = _filled(4)
    buf.load_state_dict(state)
    assert buf.max_priority == 1.0
    obs = np.zeros((1, 1), np.float32)
    buf.add(obs, np.zeros(1), np.zeros(1, np.float32), obs + 1, np.zeros(1, bool))
    weights = buf.sample(64).weights.numpy()
    assert np.isfinite(weights).all() and (weights > 0).all()


def test_a_saved_negative_priority_is_replaced_like_a_non_finite_one():
    """A negative leaf went into the sum tree as it was: a negative total share, NaN importance weights."""
    state = _filled(4).state_dict()
    state["priorities"][1] = -2.0
    buf = _filled(4)
    buf.load_state_dict(state)
    assert buf.sums.leaves[1] == 1.0 and (buf.sums.leaves >= 0).all()
    assert np.isfinite(buf.sample(64).weights.numpy()).all()


def test_ape_x_sharded_replay_warns_once_for_the_batch(caplog):
    """Each shard warned on its own (one warning per explorer's shard, each counting its slice of the batch)."""
    from canter.data.sharded import ShardedReplay

    buf = ShardedReplay([_filled(4) for _ in range(3)])
    batch = buf.sample(12)
    with caplog.at_level(logging.WARNING, "canter"):
        buf.update_priorities(batch.indices, np.full(12, np.nan))
        buf.update_priorities(batch.indices, np.full(12, np.inf))
    warned = [r.getMessage() for r in caplog.records if "non-finite TD errors" in r.getMessage()]
    assert warned == ["prioritized replay: non-finite TD errors (NaN or inf) for 12 of 12 sampled transitions; they "
                      "keep their previous priorities"]
    assert all(np.isfinite(s.sums.leaves).all() for s in buf.shards)
