"""divergence_guard: restore lowers every learning rate by divergence_lr_factor, bounded by min_lr: once every rate is
at min_lr a restore lowers none, as a plateau does (LRControl.at_min_lr), and its event says so."""
from __future__ import annotations

import pytest

import canter
from canter.trainers.guard import Divergence


def test_a_restore_at_min_lr_lowers_no_rate_and_says_so():
    """The restore shrank lr_scale past min_lr and said 'learning rates x0.125' while the rates sat at min_lr."""
    trainer = canter.make_trainer("ppo", "CartPole-v1", divergence_guard="restore", divergence_max_restores=5,
                                  lr=1e-3, min_lr=2.5e-4, n_envs=1, n_steps=16, batch_size=16, n_epochs=1,
                                  max_steps=320, eval_every=0, eval_episodes=1)
    loop = trainer()
    next(loop)
    guard, actions = trainer.guard, []
    for _ in range(4):
        guard.handle(Divergence("loss 'value_loss' (nan)", trainer.step))
        actions.append(guard.events[-1]["action"])
    assert trainer.lr.scale == 0.25
    rates = list(trainer.lr.current().values())
    assert rates == pytest.approx([2.5e-4] * len(rates))
    assert actions == ["restored the last good state, learning rates x0.5",
                       "restored the last good state, learning rates x0.25",
                       "restored the last good state, learning rates at min_lr (0.00025)",
                       "restored the last good state, learning rates at min_lr (0.00025)"]
    assert guard.restores == 4
    loop.close()
    trainer.close()


def test_a_resumed_run_at_min_lr_restores_as_the_uninterrupted_one(tmp_path):
    """Exact resume holds for a restore at min_lr: the same event, the same state (lr_scale included)."""
    import json

    import torch

    from canter.checkpoint import flatten_state

    def poison(trainer):  # NaN losses at two iterations after the stop, before the next evaluation
        trainer.algorithm.config.vf_coef = float("nan") if trainer.step in (384, 448) else 0.5

    def stop_at_320(trainer, losses):  # what Run's handler does on a first Ctrl-C / SIGTERM
        if trainer.step == 320:
            trainer.stop_requested = "interrupted"

    common = dict(divergence_guard="restore", vf_coef=0.5, lr=1e-3, min_lr=5e-4, n_envs=2, n_steps=32, batch_size=32,
                  n_epochs=2, max_steps=640, eval_every=256, eval_episodes=1, checkpoint_every=256,
                  tensorboard=False, sets=["target_reward=null"])
    hooks = {"before_collect": poison}
    whole = canter.train("ppo", "CartPole-v1", run_dir=tmp_path / "whole", hooks=hooks, **common)
    canter.train("ppo", "CartPole-v1", run_dir=tmp_path / "part", hooks={**hooks, "after_update": stop_at_320},
                 **common)
    resumed = canter.resume(tmp_path / "part", hooks=hooks)
    for run_dir in ("whole", "part"):
        events = json.loads((tmp_path / run_dir / "summary.json").read_text())["divergence_events"]
        assert [e["action"] for e in events] == ["restored the last good state, learning rates x0.5",
                                                 "restored the last good state, learning rates at min_lr (0.0005)"]
        saved = json.loads((tmp_path / run_dir / "checkpoints" / "last.json").read_text())
        assert saved["trainer"]["lr_scale"] == 0.5
    _, a = flatten_state(whole.state_dict())
    _, b = flatten_state(resumed.state_dict())
    assert a.keys() == b.keys() and not [k for k in a if not torch.equal(a[k], b[k])]
