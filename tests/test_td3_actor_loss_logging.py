"""TD3's actor loss in the logged records: the actor learns every ``policy_delay`` gradient steps, and a record whose
iteration's steps updated no actor had no ``actor_loss`` (with train_freq 1 and log_every 1 every other record; with
log_every 3 every other logged record too). Such a record now carries the last actor loss, as Stable-Baselines3's
logger (a key's last record until its next) and Tianshou's TD3 (``loss/actor``: its last) log it."""
from __future__ import annotations

import canter

SMALL = dict(max_steps=112, n_envs=1, learning_starts=100, eval_episodes=0, eval_every=0, batch_size=32)


def _actor_losses(algo: str = "td3", **settings) -> list[tuple[int, float | None]]:
    trainer = canter.make_trainer(algo, "Pendulum-v1", **SMALL, **settings)
    with trainer:
        return [(r.step, r.losses.get("actor_loss")) for r in trainer() if r.losses]


def test_an_iteration_without_an_actor_update_logs_the_last_actor_loss():
    logged = _actor_losses()
    assert logged[0] == (101, None)  # the first gradient step updated no actor yet: no value to give
    assert all(loss is not None for _, loss in logged[1:]), logged
    values = [loss for _, loss in logged[1:]]  # steps 102 (an actor update), 103 (none: 102's again), 104, ...
    assert all(a == b for a, b in zip(values[0::2], values[1::2])), logged
    assert len(set(values[0::2])) == len(values[0::2]), logged  # each actor update its own value


def test_every_logged_record_has_it_whatever_log_every():
    logged = _actor_losses(log_every=3)
    assert len(logged) >= 3 and all(loss is not None for _, loss in logged), logged


def test_an_algorithm_that_updates_its_actor_every_step_is_unchanged():
    logged = _actor_losses("sac")
    assert len({loss for _, loss in logged}) == len(logged)  # each record its own update's value
