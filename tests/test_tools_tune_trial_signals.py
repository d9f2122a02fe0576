"""canter tune's SIGTERM in a trial that put a SIGTERM handler of its own in place of tune's (ray.init, for a trial
with explorers): held back while the trial writes to the study's storage, as in any other trial."""
import os
import signal
import sys

import pytest

from canter.cli import main


class _RayLike:
    """A trainer that installs a handler as ray.init's (sys.exit(signum)) and yields an evaluation at step 64 (the
    study reports it) and then trains until stopped."""

    run = type("Run", (), {"eval_every": 64, "max_steps": 10_000})()
    step = 64

    def __call__(self):
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(signum))
        evaluation = type("Evaluation", (), {"mean_return": 1.0})()
        yield type("Record", (), {"evaluation": evaluation, "step": 64, "done": False})()
        for _ in range(100):  # the SIGTERM taken during the report stops it here, at the latest
            yield type("Record", (), {"evaluation": None, "step": 64, "done": False})()
        raise AssertionError("the SIGTERM did not stop the training")

    def close(self):
        pass


def test_a_sigterm_during_a_report_waits_for_the_write_in_a_trial_with_its_own_handler(tmp_path, capsys, monkeypatch):
    """ray.init's handler stayed in force for the whole trial: a SIGTERM while Optuna wrote the trial's report (an
    SQLite commit, which tune holds a SIGTERM back for) raised SystemExit in the middle of it. After the trainer's
    first record, tune's handler is back: the report is written whole, the trial marked failed, exit 130."""
    optuna = pytest.importorskip("optuna")
    from optuna.trial import Trial

    def unhandled(signum, frame):  # in place of the default action, which would end pytest
        raise RuntimeError(f"tune left signal {signum} to the default action")

    written = []
    report = Trial.report

    def report_killed(self, value, step):
        os.kill(os.getpid(), signal.SIGTERM)  # arrives in the middle of the storage write
        report(self, value, step)
        written.append(step)

    monkeypatch.setattr(Trial, "report", report_killed)
    monkeypatch.setattr("canter.api.make_trainer", lambda *args, **kwargs: _RayLike())
    monkeypatch.setattr("canter.tools.tune.save_plots", lambda *args, **kwargs: {})  # (seconds of matplotlib)
    out = tmp_path / "t"
    old = signal.signal(signal.SIGTERM, unhandled)
    try:
        assert main(["tune", "ppo", "--env", "CartPole-v1", "--out", str(out), "--trials", "2", "--quiet"]) == 130
        assert signal.getsignal(signal.SIGTERM) is unhandled  # given back
    finally:
        signal.signal(signal.SIGTERM, old)
    assert written == [1]  # the write was not cut
    trials = optuna.load_study(study_name="ppo-CartPole-v1", storage=f"sqlite:///{out / 'study.db'}").trials
    assert [(t.state.name, t.intermediate_values) for t in trials] == [("FAIL", {1: 1.0})]
    assert "interrupted" in capsys.readouterr().err
