"""The asynchronous learner (IMPALA, APPO) with stale rollouts, on a stand-in for Ray's queue: ``max_policy_lag``'s
drops, the policy-lag statistics and the weights version (``AsyncTrainer``)."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

import canter
from canter.distributed.pool import _Episodes


class QueuedPool(_Episodes):
    """Ray's queue without Ray: ``count`` explorer slots, each call stamped with the weights version of its
    submission and handed over in submission order, as ``RayPool`` does; the rollouts run on the learner's
    in-process explorer (one env for all the slots: what matters here is the versions)."""

    remote = True

    def __init__(self, explorer: Any, count: int, on_wait: Callable[[], None] | None = None) -> None:
        self.explorer, self.count, self.on_wait = explorer, count, on_wait
        self.envs_per_explorer = explorer.env.num_envs
        self.num_envs = count * self.envs_per_explorer
        self.version = self.restarts = self.weights_bytes = 0
        self.published: list[int] = []
        self.queue: list[tuple[int, int, dict]] = []

    def publish(self, weights: Any, version: int) -> None:
        self.version = version
        self.published.append(version)

    def submit(self, slot: int, **kw: Any) -> None:
        self.queue.append((slot, self.version, kw))

    def wait(self) -> tuple[int, dict]:
        slot, version, kw = self.queue.pop(0)
        result = self.explorer.rollout(None, version, **kw)
        result["index"] = slot
        self._set_episodes([result])
        if self.on_wait is not None:
            self.on_wait()
        return slot, result

    def reset(self, seed: int | None = None) -> None:
        pass

    def close(self) -> None:
        self.explorer.close()


def async_trainer(explorers: int, algo: str = "impala", max_policy_lag: int | None = 0, **kw: Any):
    """An IMPALA trainer (2 envs, rollouts of 16 steps: 32 env steps) whose rollouts come from ``explorers``
    queued slots (two calls each, as on Ray)."""
    kw.setdefault("hparams", {"n_steps": 16})
    trainer = canter.make_trainer(algo, "CartPole-v1", n_envs=2, seed=0, eval_every=0, **kw)
    trainer.run.max_policy_lag = max_policy_lag  # (set here: make_trainer warns that a run without explorers ignores it)
    trainer.pool = trainer.env = QueuedPool(trainer.pool.explorer, explorers)
    trainer._explorer_steps = np.zeros(explorers, np.int64)
    return trainer


def test_rollouts_dropped_for_max_policy_lag_stop_at_max_steps():
    """With 4 explorers, 2 calls queued each and max_policy_lag 0, 7 rollouts are stale after each update: the
    learner dropped them in a loop that looked at no budget, so max_steps 64 (two rollouts of 32) ran to 288."""
    trainer = async_trainer(4, max_steps=64)
    records = list(trainer())
    trainer.close()
    assert trainer.step == 64 and records[-1].stop_reason == "max_steps"
    assert trainer.dropped == 1  # the second rollout is stale (version 1, learner at 2) and reaches the budget


def test_rollouts_dropped_for_max_policy_lag_stop_at_a_stop_request():
    """A Ctrl-C while the learner dropped stale rollouts waited for a fresh one: 7 more rollouts with 4 explorers."""
    trainer = async_trainer(4, max_steps=10_000)
    waits = []

    def interrupt_at_the_second_wait() -> None:
        waits.append(1)
        if len(waits) == 2:
            trainer.stop_requested = "interrupted"

    trainer.pool.on_wait = interrupt_at_the_second_wait
    records = list(trainer())
    trainer.close()
    assert records[-1].stop_reason == "interrupted" and trainer.step == 64 and len(waits) == 2


def test_policy_lag_counts_the_rollouts_dropped_for_max_policy_lag():
    """docs/distributed.md's table: the lag of the rollouts an update received, the dropped ones included (they show
    how stale rollouts arrive; counting only the one learned from, max_policy_lag 0 would always log 0). With 2
    explorers, the second update drops 3 rollouts one version old and learns from a current one."""
    trainer = async_trainer(2, max_steps=160)
    records = list(trainer())
    trainer.close()
    second = records[1].losses
    assert second["dropped_rollouts"] == 3 and second["policy_lag_max"] == 1 and second["policy_lag"] == 0.75


@pytest.mark.parametrize("algo", ["impala", "appo"])
def test_a_rollout_of_reset_rows_only_publishes_no_new_weights_version(algo):
    """With n_steps 1 and one env, the row after each episode's end is a rollout of its own whose learn changes
    nothing; the learner published a new version anyway (IMPALA: 201 versions for 193 updates in 200 steps), which
    made the explorers reload the same weights and counted lag (max_policy_lag drops) that was none."""
    trainer = canter.make_trainer(algo, "CartPole-v1", n_envs=1, n_steps=1, max_steps=100, eval_every=0, seed=0)
    learn, learned = trainer.algorithm.learn, []
    trainer.algorithm.learn = lambda batch: (out := learn(batch), learned.append(bool(out)))[0]
    list(trainer())
    trainer.close()
    assert not all(learned)  # (some rollouts were reset rows only)
    assert trainer.version == 1 + sum(learned)  # the first broadcast, then one per update


def sync_trainer(**kw: Any) -> Any:
    """A synchronous learner (PPO --explorers) whose one explorer runs in this process, published to as Ray's
    explorers are."""
    from canter.distributed.explorer import Explorer
    from canter.distributed.pool import LocalPool
    from canter.distributed.trainers import SyncTrainer

    class GatherPool(LocalPool):
        remote = True

        def wait(self) -> tuple[int, dict]:
            slot, result = super().wait()
            result["index"] = slot
            return slot, result

    base = canter.make_trainer("ppo", "CartPole-v1", eval_every=0, seed=0, **kw)
    return SyncTrainer(base.agent, GatherPool(Explorer(base.agent, base.env, per_explorer_exploration=False)),
                       None, base.run)


def test_a_synchronous_gather_of_reset_rows_only_publishes_no_new_weights_version():
    """The synchronous learner (PPO --explorers) skips learn on a gather whose every row only reset an env (n_steps
    1, one env), and published a new version anyway (measured over 200 steps: 201 versions for 194 updates)."""
    trainer = sync_trainer(n_envs=1, max_steps=100, hparams={"n_steps": 1, "batch_size": 1})
    learn, learned = trainer.agent.learn, []
    trainer.agent.learn = lambda batch: (learned.append(1), learn(batch))[1]
    list(trainer())
    trainer.close()
    assert trainer.step == 100 and len(learned) < 100  # (some gathers were reset rows only)
    assert trainer.version == 1 + len(learned)


def quiet(learn: Callable[[Any], dict], algorithm: Any) -> Callable[[Any], dict]:
    """``learn`` as a user's algorithm may write it: it trains, returns no statistics and counts no ``updates``
    (the Algorithm contract asks for neither)."""
    def learn_quietly(batch: Any) -> dict:
        updates = algorithm.updates
        learn(batch)
        algorithm.updates = updates
        return {}
    return learn_quietly


def test_an_update_that_reports_nothing_still_publishes_its_weights():
    """The learner published only where learn returned statistics or counted an update, so a user's algorithm whose
    learn trains silently never sent its explorers new weights (version 1 all run): it publishes after each rollout
    with a row to learn from."""
    trainer = async_trainer(1, max_policy_lag=None, max_steps=96)
    trainer.algorithm.learn = quiet(trainer.algorithm.learn, trainer.algorithm)
    before = {k: v.clone() for k, v in trainer.algorithm.modules()["model"].state_dict().items()}
    list(trainer())
    trainer.close()
    after = trainer.algorithm.modules()["model"].state_dict()
    assert any(not before[k].equal(after[k]) for k in before)  # (it trained)
    assert trainer.pool.published[-1] == trainer.version == 1 + 3  # the first broadcast, then one per rollout


def test_a_synchronous_update_that_reports_nothing_still_publishes_its_weights():
    """The same for the synchronous learner (PPO --explorers): a gather learned from is published."""
    trainer = sync_trainer(n_envs=2, max_steps=96, hparams={"n_steps": 16, "batch_size": 32, "n_epochs": 1})
    trainer.algorithm.learn = quiet(trainer.algorithm.learn, trainer.algorithm)
    list(trainer())
    trainer.close()
    assert trainer.step == 96 and trainer.version == 1 + 3
