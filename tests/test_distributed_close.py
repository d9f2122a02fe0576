"""Closing a run with Ray explorers closes the explorers' envs: the pool killed its actors with ``ray.kill`` and
never closed their envs (an env whose close writes a file or frees a resource). It now asks each actor to close
its env, waiting a while, and kills it after."""
from __future__ import annotations

import os

import pytest

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # read by Ray at import: loopback only
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
ray = pytest.importorskip("ray")

import canter  # noqa: E402


@pytest.mark.slow  # ~18 s: two explorer actors started and closed
def test_closing_a_run_closes_every_explorers_env(cluster, tmp_path):
    log = tmp_path / "closed"
    trainer = canter.make_trainer("ppo", "closing_env:ClosingCartPole-v0", ray_address=cluster, explorers=2,
                                  n_envs=2, n_steps=16, max_steps=64, seed=0, env_kwargs={"close_log": str(log)})
    try:
        for _ in trainer():
            pass
        explorer_pids = set(trainer.pool.pids_now())
    finally:
        trainer.close()
    closed = [int(line) for line in log.read_text().split()] if log.exists() else []
    assert len(explorer_pids) == 2 and explorer_pids <= set(closed), (explorer_pids, closed)
    # each explorer's two sub-envs, once each
    assert sorted(p for p in closed if p in explorer_pids) == sorted(list(explorer_pids) * 2)


@pytest.mark.slow  # ~15 s: two explorer actors started, one of them failing
def test_an_explorer_failing_to_start_closes_the_built_explorers_envs(cluster, tmp_path):
    """The pool's start, where one explorer's constructor raised, killed the explorers already built with
    ``ray.kill`` alone: their envs were never closed (the close path asked them; this one did not)."""
    log, opened = tmp_path / "closed", tmp_path / "failed"
    with pytest.raises(canter.CanterError, match="fails to start"):
        canter.make_trainer("ppo", "closing_env:ClosingCartPole-v0", ray_address=cluster, explorers=2, n_envs=2,
                            n_steps=16, max_steps=64, seed=0,
                            env_kwargs={"close_log": str(log), "fail_token": str(opened), "main_pid": os.getpid()})
    assert opened.exists()  # one explorer failed
    closed = [int(line) for line in log.read_text().split()] if log.exists() else []
    from_explorers = [p for p in closed if p != os.getpid()]
    # the other explorer's two sub-envs, once each (the failed one had built none)
    assert len(from_explorers) == 2 and len(set(from_explorers)) == 1, closed
