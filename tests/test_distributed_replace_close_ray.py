"""On a real Ray cluster: replacing an explorer whose env crashed does not wait for its close, which Ray runs after
the rollout still queued on it (IMPALA keeps two per explorer): the learner waited up to CLOSE_WAIT_SECONDS at each
replacement (2.01 s measured with 20 ms steps and 100-step rollouts); the old explorer's env is still closed."""
from __future__ import annotations

import os
import time

import pytest

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # read by Ray at import: loopback only
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
pytest.importorskip("ray")

import canter  # noqa: E402


@pytest.mark.slow
def test_replacing_a_crashed_explorer_does_not_wait_for_its_close(cluster, tmp_path):
    crash, closed = tmp_path / "crash-now", tmp_path / "closed"
    trainer = canter.make_trainer(
        "impala", "flaky_env:FlakyCartPole-v0", ray_address=cluster, explorers=1, n_envs=1, n_steps=100,
        max_steps=1200, eval_every=0, eval_episodes=0,
        env_kwargs={"crash_file": str(crash), "spare_pid": os.getpid(), "step_seconds": 0.02,
                    "close_file": str(closed)})
    spent, replace = [], trainer.pool._replace

    def timed(*args, **kwargs) -> None:
        started = time.monotonic()
        replace(*args, **kwargs)
        spent.append(time.monotonic() - started)

    trainer.pool._replace = timed
    touched = False
    try:
        for rec in trainer():
            if rec.step >= 300 and not touched:
                crash.touch()  # the explorer's next step raises: the pool replaces it
                touched = True
    finally:
        trainer.close()
    assert len(spent) == 1 and spent[0] < 0.5, spent  # (2.01 s when the learner waited for the close)
    assert len(set(closed.read_text().split())) == 2  # the replaced explorer's env and its replacement's closed
