"""The divergence guard sees a non-finite statistic that an ``after_update`` hook adds to ``losses``: it checked the
algorithm's losses before the hooks ran, so a hook's NaN (logged as ``losses/custom/...``) went into the history and
training went on, though the guard is documented to check every reported loss."""
from __future__ import annotations

import math

import pytest

import canter
from canter.trainers.guard import TrainingDiverged

TINY = dict(max_steps=256, n_envs=2, eval_episodes=0, eval_every=0, n_steps=64, batch_size=64, n_epochs=2)


def _nan_after(trainer, losses) -> None:
    if trainer.step >= 128:
        losses["custom/value_error"] = float("nan")


def test_a_hooks_nan_statistic_stops_the_run():
    trainer = canter.make_trainer("ppo", "CartPole-v1", hooks={"after_update": _nan_after}, **TINY)
    with trainer, pytest.raises(TrainingDiverged, match=r"^training diverged at step 128: non-finite loss "
                                                        r"'custom/value_error' \(nan\) that an after_update hook "
                                                        r"reported"):
        list(trainer())
    assert trainer.guard.events == [{"step": 128, "quantity": "loss 'custom/value_error' (nan) that an after_update "
                                                              "hook reported", "action": "stopped"}]


def test_a_hooks_nan_stop_names_the_hooks_statistic_not_a_lower_learning_rate():
    """The stop told the user to 'try a lower learning rate', though the algorithm's losses and parameters were finite
    (checked before the hooks): it names the hook's statistic and says where it came from."""
    trainer = canter.make_trainer("ppo", "CartPole-v1", hooks={"after_update": _nan_after}, **TINY)
    with trainer, pytest.raises(TrainingDiverged) as stop:
        list(trainer())
    assert str(stop.value) == (
        "training diverged at step 128: non-finite loss 'custom/value_error' (nan) that an after_update hook reported; "
        "'custom/value_error' came from that hook, not from the algorithm (its losses and parameters were finite): "
        "check what the hook computes, and leave a statistic out of losses where it has no value")


def test_a_hooks_finite_statistic_and_the_guard_off_are_left_alone():
    def finite(trainer, losses) -> None:
        losses["custom/x"] = 1.5

    trainer = canter.make_trainer("ppo", "CartPole-v1", hooks={"after_update": finite}, **TINY)
    with trainer:
        assert [r.losses["custom/x"] for r in trainer()][-1] == 1.5
    trainer = canter.make_trainer("ppo", "CartPole-v1", hooks={"after_update": _nan_after},
                                  divergence_guard="off", **TINY)
    with trainer:
        records = list(trainer())
    assert records[-1].step == 256 and math.isnan(records[-1].losses["custom/value_error"])


def test_a_distributed_learner_publishes_the_weights_a_hooks_nan_restored():
    """A restore after the hooks (not inside the iteration, where the learner publishes what it restored): the
    explorers kept the weights published during the iteration, which the learner no longer had (Ray explorers acted
    on them until the next update's publish)."""
    import torch

    def nan_at_third(trainer, losses) -> None:
        if trainer.iteration_count == 3:
            losses["custom/x"] = float("nan")

    published, stale = [], []

    def compare(trainer) -> None:  # each iteration starts with the explorers on the learner's weights
        if published:
            now = trainer.agent.algorithm.model.state_dict()
            stale.extend(k for k, v in now.items() if not torch.equal(v, published[-1][k]))

    trainer = canter.make_trainer("impala", "CartPole-v1", n_envs=2, max_steps=320, eval_every=64, eval_episodes=1,
                                  divergence_guard="restore",
                                  hooks={"after_update": nan_at_third, "before_collect": compare})
    publish = trainer.publish

    def spy() -> None:
        published.append({k: v.clone() for k, v in trainer.agent.algorithm.model.state_dict().items()})
        publish()

    trainer.publish = spy
    with trainer:
        list(trainer())
    assert [e["action"][:8] for e in trainer.guard.events] == ["restored"] and not stale, stale


def test_a_hooks_nan_that_exhausts_the_restores_names_the_hooks_statistic():
    """In restore mode a hook's NaN restores the weights and halves the learning rate each time (the algorithm's
    numbers were finite, so nothing changes): the stop said only '(restores exhausted)', not where the NaN came from."""
    trainer = canter.make_trainer("ppo", "CartPole-v1", hooks={"after_update": _nan_after}, divergence_guard="restore",
                                  divergence_max_restores=1, **{**TINY, "eval_episodes": 1, "eval_every": 64})
    with trainer, pytest.raises(TrainingDiverged) as stop:
        list(trainer())
    assert str(stop.value) == (
        "training diverged at step 256: non-finite loss 'custom/value_error' (nan) that an after_update hook reported "
        "(restores exhausted); 'custom/value_error' came from that hook, not from the algorithm (its losses and "
        "parameters were finite): check what the hook computes, and leave a statistic out of losses where it has no "
        "value")
    assert [e["action"][:8] for e in trainer.guard.events] == ["restored", "stopped"]
