"""TD3's carried ``actor_loss`` (tests/test_td3_actor_loss_logging.py) across a resume: a record whose iteration
updated no actor logs the last actor loss, and a run resumed from a checkpoint saved just after an actor update must
log it as the uninterrupted run does (training-control.md: the same losses at the same steps). The carried value was
not saved, so the resumed run's first such record had no ``actor_loss``: a hole in updates.parquet, TensorBoard and
W&B that the uninterrupted run does not have."""
from __future__ import annotations

import json

import pyarrow.parquet as pq

import canter

SMALL = dict(n_envs=1, learning_starts=100, eval_episodes=0, eval_every=0, batch_size=32, net_arch=[8],
             checkpoint_every=0, tensorboard=False, max_steps=106)


def _stop_after_the_first_actor_update(trainer, losses) -> None:
    if trainer.step >= 102:  # gradient steps 101 (critic only) and 102 (critic and actor): the next has no actor's
        trainer.stop_requested = "interrupted"


def _actor_losses(run_dir) -> list[tuple[int, float | None]]:
    return [(r["step"], r.get("actor_loss")) for r in pq.read_table(run_dir / "updates.parquet").to_pylist()]


def test_a_resumed_run_logs_the_carried_actor_loss_as_the_uninterrupted_run(tmp_path):
    canter.train("td3", "Pendulum-v1", run_dir=tmp_path / "whole", **SMALL)
    canter.train("td3", "Pendulum-v1", run_dir=tmp_path / "resumed",
                 hooks={"after_update": _stop_after_the_first_actor_update}, **SMALL)
    assert json.loads((tmp_path / "resumed" / "checkpoints" / "last.json").read_text())["step"] == 102
    canter.resume(tmp_path / "resumed")
    whole = _actor_losses(tmp_path / "whole")
    assert whole[2][0] == 103 and whole[2][1] is not None and whole[2][1] == whole[1][1]  # 102's, carried
    assert _actor_losses(tmp_path / "resumed") == whole
