"""canter train --explorers N: a SIGTERM while the run's loggers close (after its end was saved) is a Ctrl-C there, as
without explorers (7df5f17). ray.init (in make_trainer) puts in Ray's own SIGTERM handler, sys.exit(15), which the
run's stop handlers give back at its end; _drive's Ctrl-C handler went in only where SIGTERM had its default action,
so there a SIGTERM was a SystemExit: exit 15, no report, the loggers after it not closed."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # read by Ray at import: every listener on loopback
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
pytest.importorskip("ray")

import canter  # noqa: E402
from canter.cli import _drive  # noqa: E402
from support import StubLogger, default_sigterm  # noqa: E402,F401  (autouse: SIGTERM at its default action per test)


def _TermAtClose() -> StubLogger:  # noqa: N802 (a logger whose close() meets a SIGTERM)
    return StubLogger(term=True)


@pytest.mark.slow  # ~10 s: a Ray explorer starts (and the session's cluster)
@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
def test_a_sigterm_while_an_explorer_runs_loggers_close_reports_it_and_exits_130(cluster, tmp_path: Path,
                                                                                capsys: pytest.CaptureFixture) -> None:
    run_dir = tmp_path / "run"
    run = canter.make_trainer("ppo", "CartPole-v1", run_dir=run_dir, ray_address=cluster, explorers=1, n_envs=2,
                              n_steps=32, batch_size=64, max_steps=64, eval_episodes=0, tensorboard=False)
    first, after = _TermAtClose(), _TermAtClose()
    run.loggers += [first, after]
    try:
        code = _drive(run)
    except SystemExit as exc:  # Ray's handler: the process would have ended here
        pytest.fail(f"SystemExit({exc.code}) while the loggers closed")
    assert code == 130 and after.closed
    assert "finished (max_steps)" in capsys.readouterr().out
    assert not (run_dir / ".canter.lock").exists()
