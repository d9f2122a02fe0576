"""canter train: a SIGTERM after the run has given back its stop handlers (while it saves its end and its loggers
close: a W&B finish takes seconds; then while the envs close) is a Ctrl-C there, as the first SIGTERM during training
is: the run's report and exit 130. It ended the process by SIGTERM's default action: exit -15, no report, the lock
left behind and the W&B run not finished (reproduced: canter train ppo --wandb, SIGTERM as summary.json appeared)."""
from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

import canter
from canter.cli import _drive
from support import StubLogger, default_sigterm  # noqa: E402,F401  (autouse: SIGTERM at its default action per test)


def _TermAtClose() -> StubLogger:  # noqa: N802 (a logger whose close() meets a SIGTERM)
    return StubLogger(term=True)


@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
def test_a_sigterm_while_a_finished_run_closes_reports_it_and_exits_130(tmp_path: Path, tiny_ppo: dict,
                                                                       capsys: pytest.CaptureFixture) -> None:
    run_dir = tmp_path / "run"
    run = canter.make_trainer("ppo", "CartPole-v1", run_dir=run_dir, **{**tiny_ppo, "max_steps": 128, "eval_episodes": 0},
                              tensorboard=False)
    logger = _TermAtClose()
    run.loggers.append(logger)
    code = _drive(run)
    assert logger.default_at_close is False, "SIGTERM had its default action as the loggers closed: the process dies"
    assert code == 130
    out = capsys.readouterr().out
    assert "finished (max_steps)" in out and str(run_dir) in out  # the finished run's report, not 'interrupted'
    assert json.loads((run_dir / "summary.json").read_text())["stop_reason"] == "max_steps"
    assert not (run_dir / ".canter.lock").exists()
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL  # given back
