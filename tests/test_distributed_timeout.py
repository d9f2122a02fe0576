"""``explorer_timeout``: a Ray explorer whose env's step() never returns (``flaky_env`` with ``hang=True``) is
killed and replaced after that many seconds, as a crashed one is. Runs join the session's test cluster (the
``cluster`` fixture of conftest.py) and take many seconds (marked slow); the stand-in tests of
test_distributed_pool.py check the same bookkeeping in the default suite."""
from __future__ import annotations

import json
import os
import warnings

import pytest

# read by Ray at import: bind every listener to 127.0.0.1; no usage reports
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import canter  # noqa: E402
from canter.errors import CanterWarning  # noqa: E402
from support import assert_one_line_error, run_cli, snapshot  # noqa: E402

HANG = "flaky_env:FlakyCartPole-v0"


def _hang_kwargs(tmp_path, always: bool = False) -> dict:
    """A FlakyCartPole whose first explorer step (every one, ``always``) hangs; the learner's evaluation env never."""
    hang = tmp_path / "hang-now"
    hang.touch()
    return {"crash_file": str(hang), "spare_pid": os.getpid(), "hang": True, "always": always}


@pytest.mark.slow  # ~10-25 s on a loaded 2-core machine: two explorers, a timeout of 2 s and a replacement
def test_a_hung_sync_explorer_is_replaced_and_the_run_finishes(cluster, tmp_path, caplog):
    """Synchronous PPO waited forever for the rollout of an explorer whose env hung (measured with one explorer:
    no update in 60 s, when the run was killed); now the replacement's rollout completes the update."""
    trainer = canter.make_trainer(
        "ppo", HANG, ray_address=cluster, explorers=2, n_envs=2, n_steps=16, batch_size=32, max_steps=256,
        eval_every=0, eval_episodes=1, explorer_timeout=2, env_kwargs=_hang_kwargs(tmp_path), run_dir=tmp_path / "run")
    try:
        records = list(trainer())
    finally:
        trainer.close()
    last = records[-1]
    assert last.stop_reason == "max_steps" and last.step == 256
    assert last.losses["explorer_restarts"] == 1
    assert all(r.losses["policy_lag_max"] == 0 for r in records)  # the replacement acted with the current weights
    warned = [r.getMessage() for r in caplog.records if "explorer_timeout" in r.getMessage()]
    assert len(warned) == 1 and warned[0].endswith("failed: no rollout within 2 s (explorer_timeout: 2); starting "
                                                   "a replacement"), warned
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["stop_reason"] == "max_steps"


@pytest.mark.slow  # ~15-25 s on a loaded 2-core machine: two explorers, a timeout of 2 s and a replacement
def test_a_hung_async_explorers_share_comes_back_with_its_replacement(cluster, tmp_path):
    """IMPALA went on with the other explorer and silently lost the hung one's share of the env steps."""
    trainer = canter.make_trainer(
        "impala", HANG, ray_address=cluster, explorers=2, n_envs=2, n_steps=16, max_steps=10**6, max_seconds=120,
        eval_every=0, eval_episodes=1, explorer_timeout=2, env_kwargs=_hang_kwargs(tmp_path))
    try:
        for record in trainer():
            if min(trainer._explorer_steps) > 0:  # both slots delivered (the hung one's first step hangs)
                break
    finally:
        trainer.close()
    assert min(trainer._explorer_steps) > 0, f"one explorer's share was lost: {trainer._explorer_steps}"
    assert record.losses["explorer_restarts"] == 1


@pytest.mark.slow  # ~15-25 s: four timeouts of 1 s and three replacements (the stand-in test: default suite)
def test_an_explorer_slot_that_hangs_every_time_stops_the_cli_run_with_one_line(cluster, tmp_path, capsys):
    kwargs = json.dumps(_hang_kwargs(tmp_path, always=True))
    code, _, err = run_cli(capsys, "train", "ppo", "--env", HANG, "--explorers", "1", "--ray-address", cluster,
                           "--n-envs", "2", "--set", "n_steps=16", "--set", "explorer_timeout=1",
                           "--set", f"env_kwargs={kwargs}", "--quiet", "--run-dir", str(tmp_path / "run"))
    message = "explorer 0 failed 4 times in a row; last error: no rollout within 1 s (explorer_timeout: 1)"
    assert_one_line_error(code, err, message)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["stop_reason"] == "interrupted" and summary["error"] == f"ExplorerError: {message}"


@pytest.mark.parametrize("value, needle", [("-1", "'explorer_timeout' must be >= 0, got -1"),
                                           ("inf", "'explorer_timeout' must be a finite number, got 'inf'"),
                                           ("soon", "'explorer_timeout' must be a float or null, got 'soon'")])
def test_a_bad_explorer_timeout_is_refused_with_one_line(capsys, tmp_path, value, needle):
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", "--explorers", "2", "--set",
                           f"explorer_timeout={value}", "--quiet", "--run-dir", str(tmp_path / "run"))
    assert_one_line_error(code, err, needle)
    assert not (tmp_path / "run").exists()


def test_explorer_timeout_without_explorers_is_ignored_with_a_warning():
    with pytest.warns(CanterWarning, match="explorer_timeout applies only to runs with --explorers"):
        canter.make_trainer("impala", "CartPole-v1", max_steps=64, explorer_timeout=5).close()
    with warnings.catch_warnings():
        warnings.simplefilter("error", CanterWarning)
        # max_steps one whole rollout (32 x 8 envs): 64 is warned about since d72cb6a4, as PPO's budgets are
        canter.make_trainer("impala", "CartPole-v1", max_steps=256, explorer_timeout=None).close()


def test_a_resume_may_give_a_longer_explorer_timeout(tmp_path, capsys, tiny_ppo):
    """A run stopped because its explorers' env was slower than the explorer_timeout it was given could not go on:
    a resume refused the key ('cannot change when a run is resumed'). It is a setting a resume may change."""
    run_dir = tmp_path / "run"
    with pytest.warns(CanterWarning, match="ignores it"):  # (no explorers here: the resume's plumbing is the same)
        canter.train("ppo", "CartPole-v1", run_dir=run_dir, quiet=True, explorer_timeout=2, **tiny_ppo)
    before = snapshot(run_dir)
    code, _, err = run_cli(capsys, "train", "--resume", str(run_dir), "--explorer-timeout", "-1", "--quiet")
    assert_one_line_error(code, err, "'explorer_timeout' must be >= 0, got -1")
    assert snapshot(run_dir) == before
    code, _, err = run_cli(capsys, "train", "--resume", str(run_dir), "--explorer-timeout", "600", "--max-steps",
                           "640", "--quiet")
    assert code == 0, err
    saved = json.loads((run_dir / "checkpoints" / "last.json").read_text())["config"]
    assert saved["explorer_timeout"] == 600 and "explorer_timeout: 600.0" in (run_dir / "config.yaml").read_text()
