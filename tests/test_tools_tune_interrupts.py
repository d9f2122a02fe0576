"""canter tune stopped by Ctrl-C or SIGTERM: --jobs workers, storage commits, training trials, and the best of
the trials completed so far (split from test_tools_tune_failures.py)."""
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from canter.cli import main


def _ctrl_c_tune_jobs(out: Path, wait: Any, sig: str = "SIGINT", to_group: bool = True) -> None:
    """Start `canter tune --jobs 2` in its own process group, call ``wait(proc)``, send the group (or the parent
    alone) a Ctrl-C (or ``sig``) and check the exit: 130, one line, no traceback from any process, no process left."""
    import os
    import signal
    import time

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, "-m", "canter", "tune", "ppo", "--env", "CartPole-v1", "--trials", "4",
                             "--jobs", "2", "--out", str(out), "--max-steps", "10000000", "--eval-every", "256",
                             "--target-reward", "1e6",  # never met: the trials train until the Ctrl-C
                             "--n-envs", "2", "--eval-episodes", "1", "--quiet"], start_new_session=True, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        wait(proc)
        (os.killpg if to_group else os.kill)(proc.pid, getattr(signal, sig))
        _, err = proc.communicate(timeout=60)  # (a worker left running keeps the pipe open: a timeout)
        for _ in range(100):  # multiprocessing's resource tracker ends a moment after the parent
            left = [line for line in subprocess.run(["ps", "-o", "pid=,stat=,args=", "-g", str(proc.pid)],
                                                     capture_output=True, text=True).stdout.splitlines()
                    if "Z" not in line.split()[1]]
            if not left:
                break
            time.sleep(0.1)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # whatever is left of the group
        except ProcessLookupError:
            pass
    err = err.decode()
    assert proc.returncode == 130, err
    assert not left, f"processes left training: {left}"
    assert "Traceback" not in err and err.splitlines()[-1].startswith("interrupted;"), err[-3000:]
    import optuna

    states = [t.state.name for t in optuna.load_study(study_name="ppo-CartPole-v1",
                                                        storage=f"sqlite:///{out / 'study.db'}").trials]
    assert "RUNNING" not in states, states  # the interrupted trials are marked failed


def test_tune_jobs_ctrl_c_prints_no_traceback(tmp_path):
    """Ctrl-C to the process group of `canter tune --jobs 2`: exit 130, one line, no worker traceback."""
    import time

    pytest.importorskip("optuna")

    def training(proc):
        time.sleep(12)  # the workers are training their first trials
        assert proc.poll() is None

    _ctrl_c_tune_jobs(tmp_path / "t", training)


@pytest.mark.slow
def test_tune_jobs_sigterm_to_the_parent_alone_stops_its_workers(tmp_path):
    """A SIGTERM to `canter tune --jobs 2` itself (kill PID, a scheduler) ended it at once and left its workers
    training on as orphans; it now stops as a Ctrl-C: the workers mark their trials failed and end."""
    import time

    pytest.importorskip("optuna")

    def training(proc):
        time.sleep(12)  # the workers are training their first trials
        assert proc.poll() is None

    _ctrl_c_tune_jobs(tmp_path / "t", training, sig="SIGTERM", to_group=False)


def test_tune_jobs_ctrl_c_while_the_workers_start_prints_no_traceback(tmp_path):
    """Ctrl-C while the --jobs workers were still importing torch printed a KeyboardInterrupt traceback from
    each of them (a loaded host made the test above hit this too); they now start deaf to SIGINT and the
    parent ends them."""
    import os
    import time

    pytest.importorskip("optuna")
    if not Path(f"/proc/self/task/{os.getpid()}/children").exists():
        pytest.skip("needs /proc/PID/task/TID/children")

    def starting(proc):
        spawned = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(spawned.read_text().split()) < 3:  # resource tracker + 2 workers
            time.sleep(0.02)
        time.sleep(0.3)  # the workers are importing

    _ctrl_c_tune_jobs(tmp_path / "t", starting)


def test_tune_an_error_caused_by_ctrl_c_in_a_trial_stops_the_study(tmp_path, capsys, monkeypatch):
    """Every exception of a trial fails only that trial, but one raised while a Ctrl-C was handled (the
    KeyboardInterrupt in its chain) is the Ctrl-C: the study went on with its next trial."""
    pytest.importorskip("optuna")

    def interrupted(*args, **kwargs):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as exc:
            raise RuntimeError("a vector env worker died") from exc

    monkeypatch.setattr("canter.api.make_trainer", interrupted)
    args = ["tune", "ppo", "--env", "CartPole-v1", "--out", str(tmp_path / "t"), "--trials", "2", "--quiet"]
    assert main(args) == 130
    assert capsys.readouterr().err.splitlines()[-1].startswith("interrupted;")


def test_tune_ctrl_c_inside_a_trials_final_storage_commit_exits_130(tmp_path, capsys, monkeypatch):
    """Ctrl-C that lands in the storage commit of a trial's result (seen with `canter tune` + Ctrl-C):
    Optuna's bookkeeping then raises UnboundLocalError from the KeyboardInterrupt, and the single-process
    tune printed that traceback and exited 1 instead of 130 with its one line."""
    optuna = pytest.importorskip("optuna")
    real = optuna.storages.RDBStorage.set_trial_state_values

    def interrupted(self, *args, **kwargs):
        real(self, *args, **kwargs)
        raise KeyboardInterrupt  # the signal arrives while the commit runs

    monkeypatch.setattr(optuna.storages.RDBStorage, "set_trial_state_values", interrupted)
    monkeypatch.setattr("canter.tools.tune._objective", lambda job, space: lambda trial: 1.0)  # no training
    args = ["tune", "ppo", "--env", "CartPole-v1", "--out", str(tmp_path / "t"), "--trials", "2", "--quiet"]
    assert main(args) == 130
    assert capsys.readouterr().err.splitlines()[-1].startswith("interrupted;")


def test_tune_ctrl_c_signal_during_a_storage_write_waits_for_the_write(tmp_path, capsys, monkeypatch):
    """A Ctrl-C that arrived while Optuna wrote a trial's result cut the write: the trial stayed RUNNING, and
    with --jobs the cut commit left SQLite locked, so the other worker's write failed with a traceback (seen
    in CI). The Ctrl-C is now held back until the write is done, then stops the study (exit 130)."""
    import os
    import signal

    optuna = pytest.importorskip("optuna")
    real = optuna.storages.RDBStorage.set_trial_state_values

    def signalled(self, *args, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)  # Python runs the handler before the next line
        return real(self, *args, **kwargs)

    monkeypatch.setattr(optuna.storages.RDBStorage, "set_trial_state_values", signalled)
    monkeypatch.setattr("canter.tools.tune._objective", lambda job, space: lambda trial: 1.0)  # no training
    out = tmp_path / "t"
    assert main(["tune", "ppo", "--env", "CartPole-v1", "--out", str(out), "--trials", "3", "--quiet"]) == 130
    assert capsys.readouterr().err.splitlines()[-1].startswith("interrupted;")
    trials = optuna.load_study(study_name="ppo-CartPole-v1", storage=f"sqlite:///{out / 'study.db'}").trials
    assert [t.state.name for t in trials] == ["COMPLETE"]  # written whole; no second trial asked for


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
def test_tune_ctrl_c_signal_during_training_stops_the_trial_at_once(tmp_path, capsys, monkeypatch, signame):
    """Held back only outside training: a Ctrl-C while a trial trains ends it there, marked failed. A SIGTERM
    (kill, a job scheduler) killed tune at once, as canter train does not: the trial stayed RUNNING; it is a Ctrl-C."""
    import os
    import signal
    import time

    optuna = pytest.importorskip("optuna")

    def unhandled(signum, frame):  # in place of the default action, which would end pytest
        raise RuntimeError(f"tune left signal {signum} to the default action")

    old = signal.signal(signal.SIGTERM, unhandled)

    class Endless:
        run = type("Run", (), {"eval_every": 64, "max_steps": 10**9})()
        step = 0

        def __call__(self):
            os.kill(os.getpid(), getattr(signal, signame))
            for _ in range(500):  # 5 s: the signal must have ended it long before
                time.sleep(0.01)
                yield type("Record", (), {"evaluation": None})()
            raise AssertionError("the Ctrl-C did not stop the training")

        def close(self):
            pass

    monkeypatch.setattr("canter.api.make_trainer", lambda *args, **kwargs: Endless())
    out = tmp_path / "t"
    try:
        assert main(["tune", "ppo", "--env", "CartPole-v1", "--out", str(out), "--trials", "2", "--quiet"]) == 130
        assert signal.getsignal(signal.SIGTERM) is unhandled  # given back
    finally:
        signal.signal(signal.SIGTERM, old)
    trials = optuna.load_study(study_name="ppo-CartPole-v1", storage=f"sqlite:///{out / 'study.db'}").trials
    assert [t.state.name for t in trials] == ["FAIL"]


def test_tune_ctrl_c_writes_the_best_of_the_trials_completed_so_far(tmp_path, capsys, monkeypatch):
    """Ctrl-C after some trials had completed exited 130 with no best.yaml and no result printed (rl-zoo3 prints
    the best trial and writes its report after a Ctrl-C); one had to rerun the study with a lower --trials to get
    them. Now the best so far is printed and written, and the exit is still 130."""
    import os
    import signal

    pytest.importorskip("optuna")
    from canter.tools import tune as tune_mod

    calls = []

    class OneEvaluation:
        """Trial 0 ends after one evaluation (return 42); trial 1 is interrupted while it trains."""

        run = type("Run", (), {"eval_every": 64, "max_steps": 64})()
        step = 64

        def __call__(self):
            calls.append(1)
            if len(calls) > 1:
                os.kill(os.getpid(), signal.SIGINT)
            evaluation = type("Evaluation", (), {"mean_return": 42.0})()
            yield type("Record", (), {"evaluation": evaluation, "step": 64, "done": True})()

        def close(self):
            pass

    monkeypatch.setattr("canter.api.make_trainer", lambda *args, **kwargs: OneEvaluation())
    monkeypatch.setattr(tune_mod, "save_plots", lambda *a: {})  # not what this test is about (seconds)
    monkeypatch.setattr(tune_mod, "save_if_best", lambda *a: None)  # OneEvaluation has no agent to save
    out = tmp_path / "t"
    capsys.readouterr()
    assert main(["tune", "ppo", "--env", "CartPole-v1", "--out", str(out), "--trials", "3", "--quiet"]) == 130
    stdout, err = capsys.readouterr()
    assert "1 complete, 0 pruned, 1 failed" in stdout, err
    assert "best trial 0: last evaluation return 42.00" in stdout
    assert (out / "best.yaml").read_text().startswith("# canter tune: best of 1 complete trials (trial 0")
    assert err.splitlines()[-1].startswith("interrupted;")


def test_tune_sigterm_in_a_trial_that_set_its_own_handler_is_a_ctrl_c(tmp_path, capsys, monkeypatch):
    """A trial with explorers starts a private Ray, whose ray.init puts its own SIGTERM handler (sys.exit(15)) in place
    of tune's: a SIGTERM in such a trial ended canter tune with exit code 15, no message, the trial left RUNNING, and
    Ray's handler stayed in force for the storage writes and the trials after it. The trial's SystemExit is now a
    Ctrl-C (trial failed, exit 130), and tune's handler is back once a trial that replaced it has ended."""
    import os
    import signal
    import sys

    optuna = pytest.importorskip("optuna")

    def unhandled(signum, frame):  # in place of the default action, which would end pytest
        raise RuntimeError(f"tune left signal {signum} to the default action")

    def ray_handler(signum, frame):  # as ray.init's: sys.exit(signum)
        sys.exit(signum)

    seen = []

    class RayLike:
        run = type("Run", (), {"eval_every": 64, "max_steps": 128})()
        step = 128

        def __init__(self, kill):
            self.kill = kill

        def __call__(self):
            seen.append(signal.getsignal(signal.SIGTERM))  # the handler the trial starts with
            signal.signal(signal.SIGTERM, ray_handler)
            if self.kill:
                os.kill(os.getpid(), signal.SIGTERM)
                raise AssertionError("the SIGTERM did not stop the training")
            evaluation = type("Evaluation", (), {"mean_return": 1.0})()
            yield type("Record", (), {"evaluation": evaluation, "step": 128, "done": True})()

        def close(self):
            pass

    trainers = iter([RayLike(kill=False), RayLike(kill=True)])
    monkeypatch.setattr("canter.api.make_trainer", lambda *args, **kwargs: next(trainers))
    monkeypatch.setattr("canter.tools.tune.save_if_best", lambda *args, **kwargs: None)
    monkeypatch.setattr("canter.tools.tune.save_plots", lambda *args, **kwargs: {})  # (seconds of matplotlib)
    out = tmp_path / "t"
    old = signal.signal(signal.SIGTERM, unhandled)
    try:
        assert main(["tune", "ppo", "--env", "CartPole-v1", "--out", str(out), "--trials", "3", "--quiet"]) == 130
        assert signal.getsignal(signal.SIGTERM) is unhandled  # given back
    finally:
        signal.signal(signal.SIGTERM, old)
    assert seen[1] is not ray_handler  # the second trial started with tune's own handler again
    trials = optuna.load_study(study_name="ppo-CartPole-v1", storage=f"sqlite:///{out / 'study.db'}").trials
    assert [t.state.name for t in trials] == ["COMPLETE", "FAIL"]
    assert "interrupted" in capsys.readouterr().err
