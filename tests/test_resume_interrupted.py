"""Exact resume of interrupted runs: a run killed (SIGKILL, Ctrl-C, a kill in the middle of a checkpoint
write) or stopped and resumed has the same history, bitwise, as an uninterrupted run with the same seed."""
from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml

import canter
from canter.checkpoint import load_checkpoint, read_metadata
from canter.cli import main
from canter.errors import CanterError


ROOT = Path(canter.__file__).resolve().parents[1]
#: the kill points are random; set CANTER_KILL_SEED to replay a failure
SEED = int(os.environ.get("CANTER_KILL_SEED", random.SystemRandom().randrange(10**6)))

HOOKS = '''
import os, signal, time

def pause(trainer, losses):
    """Print PAUSED once past CANTER_TEST_PAUSE_AT and wait (to be killed, or for a Ctrl-C to be handled)."""
    at = os.environ.get("CANTER_TEST_PAUSE_AT")
    if at and trainer.step >= int(at) and trainer.stop_requested is None:
        print(f"PAUSED {trainer.step}", flush=True)
        while trainer.stop_requested is None:
            time.sleep(0.01)

def interrupt(trainer, losses):
    """In-process Ctrl-C (once, or twice with CANTER_TEST_SIGINTS=2) once past CANTER_TEST_SIGINT_AT."""
    at = os.environ.get("CANTER_TEST_SIGINT_AT")
    if at and trainer.step >= int(at) and trainer.stop_requested is None:
        for _ in range(int(os.environ.get("CANTER_TEST_SIGINTS", "1"))):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)  # let the handler run

_phase = os.environ.get("CANTER_TEST_KILL_IN_WRITE")
if _phase:  # SIGKILL ourselves in the middle of the (N+1)-th save of checkpoints/last
    _skip, _count = int(os.environ["CANTER_TEST_KILL_AFTER"]), [0]
    _replace, _fsync = os.replace, os.fsync

    def _maybe_die():
        _count[0] += 1
        if _count[0] > _skip:
            os.kill(os.getpid(), signal.SIGKILL)

    def replace(src, dst):
        if _phase == "between-renames" and str(dst).endswith("last.json"):
            _maybe_die()  # last.safetensors is already the new one, last.json still the old one
        return _replace(src, dst)

    def fsync(fd):
        name = os.path.basename(os.readlink(f"/proc/self/fd/{fd}"))
        if _phase == "tensors-temp" and name.startswith(".last.safetensors."):
            _maybe_die()  # the new tensors are in a temp file that was never renamed
        return _fsync(fd)

    os.replace, os.fsync = replace, fsync
'''

COMMON = {"n_envs": 2, "eval_episodes": 2, "tensorboard": False, "target_reward": None,  # the runs end at max_steps
          "hooks": {"after_update": ["killpoints:pause", "killpoints:interrupt"]}}
CONFIGS = {
    "ppo": {**COMMON, "max_steps": 2560, "eval_every": 640, "checkpoint_every": 384,
            "hparams": {"n_steps": 64, "batch_size": 64, "n_epochs": 2, "normalize_obs": True, "normalize_reward": True}},
    "dqn": {**COMMON, "max_steps": 2400, "eval_every": 800, "checkpoint_every": 350,
            "hparams": {"learning_starts": 300, "train_freq": 8, "gradient_steps": 2, "buffer_size": 1500,
                        "target_update_interval": 100, "net_arch": [32], "exploration_fraction": 0.5,
                        "batch_size": 32}},
}
ENV_VARS = ("CANTER_TEST_PAUSE_AT", "CANTER_TEST_SIGINT_AT", "CANTER_TEST_SIGINTS", "CANTER_TEST_KILL_IN_WRITE")


@pytest.fixture(scope="module")
def setup_dir(tmp_path_factory):
    """Hook module + configs + one uninterrupted reference run per algorithm."""
    d = tmp_path_factory.mktemp("resume")
    (d / "killpoints.py").write_text(HOOKS)
    sys.path.insert(0, str(d))
    for k in ENV_VARS:
        os.environ.pop(k, None)
    for algo, cfg in CONFIGS.items():
        (d / f"{algo}.yaml").write_text(yaml.safe_dump(cfg))
        canter.train(algo, "CartPole-v1", config_file=d / f"{algo}.yaml", run_dir=d / f"{algo}-reference")
    yield d
    sys.path.remove(str(d))


def table(run_dir: Path, name: str) -> list[dict]:
    """A parquet file's rows without the wall-clock columns."""
    rows = pq.read_table(run_dir / f"{name}.parquet").to_pylist()
    return [{k: v for k, v in r.items() if k not in ("wall_time", "steps_per_second")} for r in rows]


def assert_same_history(run_dir: Path, reference: Path, context: str = "") -> None:
    """Bitwise-equal episode returns, losses and evaluations; no duplicated or missing rows."""
    for name in ("history", "updates", "evaluations"):
        got, want = table(run_dir, name), table(reference, name)
        assert len(got) == len(want), f"{name}: {len(got)} rows, uninterrupted run has {len(want)} {context}"
        for i, (g, w) in enumerate(zip(got, want)):
            assert g == w, f"{name} row {i} differs {context}: {g} != {w}"
    steps = [r["step"] for r in table(run_dir, "history")]
    assert steps == sorted(steps) and len(steps) > 10
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["stop_reason"] == "max_steps" and summary["resume_exact"] is True


def train_cmd(d: Path, algo: str, run_dir: Path) -> list[str]:
    return [sys.executable, "-m", "canter", "train", algo, "--env", "CartPole-v1", "-f", str(d / f"{algo}.yaml"),
            "--run-dir", str(run_dir), "--quiet"]


def spawn(d: Path, cmd: list[str], **env: str) -> subprocess.Popen:
    full_env = {k: v for k, v in os.environ.items() if k not in ENV_VARS}
    full_env.update(PYTHONPATH=f"{ROOT}{os.pathsep}{d}", **env)
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=full_env)


def kill_when_paused(proc: subprocess.Popen) -> int:
    """Wait for PAUSED, SIGKILL the process from here; returns the step it paused at."""
    line = proc.stdout.readline()
    if not line.startswith("PAUSED"):
        proc.kill()
        raise AssertionError(f"the run did not pause: {line!r} {proc.stderr.read()[-2000:]}")
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(timeout=60) == -signal.SIGKILL
    return int(line.split()[1])


@pytest.mark.timeout(300)
@pytest.mark.parametrize("algo", ["ppo", "dqn"])
def test_sigkill_at_random_points_then_resume_equals_uninterrupted(setup_dir, tmp_path, algo):
    d, run_dir = setup_dir, tmp_path / "run"
    rng = random.Random(f"{SEED}-{algo}")
    total = CONFIGS[algo]["max_steps"]
    first, second = rng.randrange(total // 8, total // 2), rng.randrange(total // 2, total - total // 8)
    context = f"(kill points {first}, {second}; CANTER_KILL_SEED={SEED})"
    paused = [kill_when_paused(spawn(d, train_cmd(d, algo, run_dir), CANTER_TEST_PAUSE_AT=str(first)))]
    last_step = read_metadata(run_dir / "checkpoints" / "last")["step"]
    assert 0 <= last_step <= paused[0], context
    paused.append(kill_when_paused(spawn(d, [sys.executable, "-m", "canter", "train", "--resume", str(run_dir),
                                             "--quiet"], CANTER_TEST_PAUSE_AT=str(second))))
    meta = read_metadata(run_dir / "checkpoints" / "last")
    assert last_step <= meta["step"] <= paused[1], context
    canter.resume(run_dir)  # the last leg in this process
    assert_same_history(run_dir, d / f"{algo}-reference", context + f" paused at {paused}")
    if algo == "dqn":  # the replay buffer came back with the rest
        state, _ = load_checkpoint(run_dir / "checkpoints" / "last")
        ref, _ = load_checkpoint(d / "dqn-reference" / "checkpoints" / "last")
        buf, ref_buf = state["trainer"]["buffer"], ref["trainer"]["buffer"]
        for key in ("obs", "actions", "rewards", "terminated", "done", "valid"):
            np.testing.assert_array_equal(buf[key], ref_buf[key])
        assert (buf["pos"], buf["count"], buf["rng"]) == (ref_buf["pos"], ref_buf["count"], ref_buf["rng"])
        assert buf["full"]  # it wrapped around


@pytest.mark.timeout(300)
@pytest.mark.parametrize("phase", ["tensors-temp", "between-renames"])
def test_kill_during_checkpoint_write_leaves_a_loadable_last(setup_dir, tmp_path, phase):
    d, run_dir = setup_dir, tmp_path / "run"
    skip = random.Random(f"{SEED}-{phase}").randrange(1, 5)  # die during the (skip+1)-th save of 'last'
    proc = spawn(d, train_cmd(d, "ppo", run_dir), CANTER_TEST_KILL_IN_WRITE=phase, CANTER_TEST_KILL_AFTER=str(skip))
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGKILL, err[-2000:]
    ckpt = run_dir / "checkpoints"
    json_meta = json.loads((ckpt / "last.json").read_text())
    state, meta = load_checkpoint(ckpt / "last")  # never refused
    assert "trainer" in state and meta["resumable"]
    if phase == "between-renames":  # the new tensors file won over the stale JSON
        assert json_meta["checkpoint_id"] != meta["checkpoint_id"] and meta["step"] > json_meta["step"]
    else:  # the half-written temp file is ignored; the previous save is intact
        assert any(p.name.startswith(".last.safetensors.") for p in ckpt.iterdir())
        assert json_meta["checkpoint_id"] == meta["checkpoint_id"]
    canter.resume(run_dir)
    assert not [p for p in ckpt.iterdir() if p.name.endswith(".tmp")]
    assert_same_history(run_dir, d / "ppo-reference", f"(phase {phase}, killed in save {skip + 1})")


def test_ctrl_c_saves_then_second_ctrl_c_exits_at_once(setup_dir, tmp_path, monkeypatch, capsys):
    d, run_dir = setup_dir, tmp_path / "run"
    monkeypatch.setenv("CANTER_TEST_SIGINT_AT", "900")
    canter.train("ppo", "CartPole-v1", config_file=d / "ppo.yaml", run_dir=run_dir)  # one Ctrl-C: a clean stop
    assert "stopping after this iteration" in capsys.readouterr().err
    summary = json.loads((run_dir / "summary.json").read_text())
    meta = read_metadata(run_dir / "checkpoints" / "last")
    assert summary["stop_reason"] == "interrupted" and meta["stop_reason"] == "interrupted"
    assert 900 <= meta["step"] == summary["steps"] < 900 + 128

    monkeypatch.setenv("CANTER_TEST_SIGINT_AT", "1700")
    monkeypatch.setenv("CANTER_TEST_SIGINTS", "2")
    before = read_metadata(run_dir / "checkpoints" / "last")["checkpoint_id"]
    with pytest.raises(KeyboardInterrupt):  # two Ctrl-C: out at once, 'last' is not touched
        canter.resume(run_dir)
    assert read_metadata(run_dir / "checkpoints" / "last")["checkpoint_id"] != before  # periodic saves happened
    meta = read_metadata(run_dir / "checkpoints" / "last")
    assert meta["stop_reason"] is None and meta["step"] < 1700  # the last periodic save, not a final one
    assert json.loads((run_dir / "summary.json").read_text())["stop_reason"] == "interrupted"
    monkeypatch.delenv("CANTER_TEST_SIGINT_AT")
    canter.resume(run_dir)
    assert_same_history(run_dir, d / "ppo-reference", "(after two Ctrl-C)")
    periodic = [sorted(p.name for p in (r / "checkpoints").glob("step-*.json")) for r in (run_dir, d / "ppo-reference")]
    assert periodic[0] == periodic[1]  # the resumed parts kept the uninterrupted run's checkpoint grid


def test_a_refused_resume_leaves_the_run_as_it_was(setup_dir, tmp_path, monkeypatch, capsys):
    from support import snapshot

    run_dir = tmp_path / "run"
    monkeypatch.setenv("CANTER_TEST_SIGINT_AT", "900")
    canter.train("ppo", "CartPole-v1", config_file=setup_dir / "ppo.yaml", run_dir=run_dir)
    monkeypatch.delenv("CANTER_TEST_SIGINT_AT")
    step = json.loads((run_dir / "summary.json").read_text())["steps"]
    before = snapshot(run_dir)
    assert main(["train", "--resume", str(run_dir), "--max-steps", str(step), "--quiet"]) == 2
    assert f"more than the {step} steps" in capsys.readouterr().err
    (run_dir / "history.parquet").rename(tmp_path / "history.parquet")
    assert main(["train", "--resume", str(run_dir), "--max-steps", "99999", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "history.parquet is missing" in err
    (tmp_path / "history.parquet").rename(run_dir / "history.parquet")
    assert snapshot(run_dir) == before  # config.yaml not rewritten, no new event file


def test_a_resume_whose_logger_fails_to_start_leaves_the_run_as_it_was(tmp_path, monkeypatch):
    """A resume that failed while its loggers started (a W&B init that raised: the console logger here) closed
    the ones already started: history.parquet and updates.parquet were rewritten without the rows the stopped run
    wrote after 'last', and a new TensorBoard file hid its events after that step."""
    from canter.logging.console import ConsoleLogger
    from support import snapshot

    def crash(trainer, losses):
        if trainer.step >= 300:
            raise RuntimeError("crash")

    run_dir = tmp_path / "run"
    with pytest.raises(RuntimeError, match="crash"):
        canter.train("ppo", "CartPole-v1", run_dir=run_dir, max_steps=1024, n_envs=2, n_steps=32, eval_every=0,
                     eval_episodes=1, checkpoint_every=192, hooks={"after_update": crash})
    assert read_metadata(run_dir / "checkpoints" / "last")["history_rows"]["updates"] < len(table(run_dir, "updates"))
    before = snapshot(run_dir)

    def fail(self, run):
        raise RuntimeError("logger could not start")

    monkeypatch.setattr(ConsoleLogger, "start", fail)
    with pytest.raises(RuntimeError, match="could not start"):
        canter.resume(run_dir, quiet=False)
    assert snapshot(run_dir) == before


@pytest.mark.timeout(300)
def test_cli_ctrl_c_exits_130_and_resume_finishes(setup_dir, tmp_path, capsys):
    d, run_dir = setup_dir, tmp_path / "run"
    proc = spawn(d, train_cmd(d, "dqn", run_dir), CANTER_TEST_PAUSE_AT="1000")
    assert proc.stdout.readline().startswith("PAUSED")
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert f"canter train --resume {run_dir}" in err and "Traceback" not in err
    assert main(["train", "--resume", str(run_dir), "--quiet"]) == 0
    assert_same_history(run_dir, d / "dqn-reference", "(CLI Ctrl-C)")


def test_cli_ctrl_c_before_training_starts_does_not_point_at_a_removed_run(tmp_path, capsys, monkeypatch):
    """A Ctrl-C while the loggers start (W&B's init takes seconds) removes the new run's directory, but the CLI
    said 'interrupted; continue with: canter train --resume DIR', which then failed: no such run directory."""
    from canter.logging.tensorboard import TensorBoardLogger

    def ctrl_c(self, run):
        raise KeyboardInterrupt

    monkeypatch.setattr(TensorBoardLogger, "start", ctrl_c)
    run_dir = tmp_path / "run"
    assert main(["train", "ppo", "--env", "CartPole-v1", "--run-dir", str(run_dir), "--quiet"]) == 130
    err = capsys.readouterr().err
    assert not run_dir.exists() and "--resume" not in err and "nothing was saved" in err, err


def test_resume_refuses_finished_runs_and_extends_them_on_request(setup_dir, tmp_path, capsys):
    import shutil

    run_dir = tmp_path / "run"
    shutil.copytree(setup_dir / "ppo-reference", run_dir)
    with pytest.raises(CanterError, match="already finished .*max_steps.*pass max_steps=N to extend it$"):
        canter.resume(run_dir)
    assert main(["train", "--resume", str(run_dir), "--max-steps", "3072", "--quiet"]) == 0
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["steps"] == 3072 and summary["resumes"] == 1
    assert len(table(run_dir, "history")) > len(table(setup_dir / "ppo-reference", "history"))
    assert table(run_dir, "history")[:5] == table(setup_dir / "ppo-reference", "history")[:5]


def test_a_stop_signal_in_the_last_iteration_leaves_a_finished_run(tmp_path):
    """Ctrl-C arriving in the iteration that reaches max_steps: the run is finished (max_steps), not
    interrupted, so a resume is refused instead of running one more iteration past the budget."""
    def signal_at_the_end(trainer, losses):  # what Run's handler does on a first Ctrl-C / SIGTERM
        if trainer.step >= trainer.run.max_steps:
            trainer.stop_requested = "interrupted"

    run_dir = tmp_path / "run"
    canter.train("ppo", "CartPole-v1", run_dir=run_dir, n_envs=2, n_steps=16, batch_size=32, n_epochs=1,
                 max_steps=128, eval_every=64, eval_episodes=1, tensorboard=False, target_reward=None,
                 hooks={"after_update": signal_at_the_end})
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["steps"] == 128 and summary["stop_reason"] == "max_steps"
    with pytest.raises(CanterError, match="already finished"):
        canter.resume(run_dir)


def test_a_stop_between_logged_iterations_logs_nothing_the_uninterrupted_run_does_not(tmp_path):
    """With ``log_every`` > 1 (A2C's CartPole preset logs every 25th iteration), a Ctrl-C at an iteration
    that is not logged must not add an updates row: the resumed run's files equal the uninterrupted run's."""
    common = dict(n_envs=2, n_steps=8, max_steps=800, eval_every=300, eval_episodes=1, log_every=5,
                  tensorboard=False, target_reward=None, seed=1)

    def stop_off_the_log_grid(trainer, losses):  # what Run's handler does on a first Ctrl-C / SIGTERM
        if trainer.step >= 400 and trainer.iteration_count % 5 and trainer.stop_requested is None:
            trainer.stop_requested = "interrupted"

    canter.train("a2c", "CartPole-v1", run_dir=tmp_path / "whole", **common)
    canter.train("a2c", "CartPole-v1", run_dir=tmp_path / "part", hooks={"after_update": stop_off_the_log_grid},
                 **common)
    assert json.loads((tmp_path / "part" / "summary.json").read_text())["stop_reason"] == "interrupted"
    canter.resume(tmp_path / "part")
    for name in ("history", "updates", "evaluations"):
        assert table(tmp_path / "part", name) == table(tmp_path / "whole", name), name


def _whole_and_stopped_off_the_log_grid(tmp_path: Path, common: dict, after: int, stopped_at: int) -> None:
    """Train A2C with ``common`` (log_every 5) into ``whole``, and into ``part`` stopped as by a Ctrl-C at the
    first iteration past step ``after`` that is not a logged one (step ``stopped_at``), then resume ``part``."""
    def stop_off_the_log_grid(trainer, losses):
        if trainer.step >= after and trainer.iteration_count % 5 and trainer.resume_exact is None \
                and trainer.stop_requested is None:
            trainer.stop_requested = "interrupted"

    canter.train("a2c", "CartPole-v1", run_dir=tmp_path / "whole", **common)
    canter.train("a2c", "CartPole-v1", run_dir=tmp_path / "part", hooks={"after_update": stop_off_the_log_grid},
                 **common)
    assert json.loads((tmp_path / "part" / "summary.json").read_text())["steps"] == stopped_at
    canter.resume(tmp_path / "part")


def test_a_stop_between_logged_iterations_adds_no_tensorboard_point(tmp_path):
    """The record a Ctrl-C makes between two logged iterations (log_every > 1) was written to TensorBoard with its
    steps/s and rolling return at its off-grid step: the resumed run had a point the uninterrupted run has not."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    common = dict(n_envs=2, n_steps=8, max_steps=320, eval_every=0, eval_episodes=1, log_every=5,
                  target_reward=None, seed=1)

    _whole_and_stopped_off_the_log_grid(tmp_path, common, after=170, stopped_at=176)  # iteration 11
    steps = {}
    for d in ("whole", "part"):
        acc = EventAccumulator(str(tmp_path / d))
        acc.Reload()
        steps[d] = {t: [e.step for e in acc.Scalars(t)] for t in ("charts/steps_per_second", "charts/rolling_return",
                                                                  "charts/episode_return")}
    assert steps["part"] == steps["whole"]
    assert steps["whole"]["charts/steps_per_second"] == list(range(80, 321, 80))


def test_a_stop_between_logged_iterations_leaves_the_periodic_checkpoints_of_the_uninterrupted_run(tmp_path):
    """Periodic ``step-N`` checkpoints are saved at records; a record only a Ctrl-C made (log_every > 1)
    must not take the place of the uninterrupted run's next one. The iteration that reaches a checkpoint's
    step is always a record (step-208, not the next logged one at 240), so the stop there is one too."""
    common = dict(n_envs=2, n_steps=8, max_steps=800, eval_every=300, eval_episodes=1, log_every=5,
                  checkpoint_every=200, tensorboard=False, target_reward=None, seed=1)

    _whole_and_stopped_off_the_log_grid(tmp_path, common, after=200, stopped_at=208)  # iteration 13
    names = {d: sorted(p.name for p in (tmp_path / d / "checkpoints").glob("step-*.json")) for d in ("whole", "part")}
    assert names["part"] == names["whole"] == [f"step-{s:09d}.json" for s in (208, 400, 608, 800)]


def _run_killed_before_its_first_checkpoint(run_dir: Path, pid: int) -> None:
    """What a run killed (SIGKILL) before it saved ``last`` leaves: its config.yaml and its lock (of ``pid``)."""
    run_dir.mkdir()
    (run_dir / "config.yaml").write_text("algo: ppo\nenv: CartPole-v1\nmax_steps: 4096\n")
    (run_dir / ".canter.lock").write_text(json.dumps({"host": socket.gethostname(), "pid": pid, "token": "t"}))


def test_a_run_killed_before_its_first_checkpoint_says_how_to_proceed(tmp_path, capsys):
    """Resuming such a run said only 'has no checkpoints/last to resume from', training into it again 'already
    exists and is not empty; choose another --run-dir': accurate, but neither said the run cannot be continued
    and how to start it again. Nothing is deleted; a run still starting (its process alive) is not called dead."""
    from support import assert_one_line_error, run_cli, snapshot

    dead = subprocess.Popen(["true"])
    dead.wait()
    run_dir = tmp_path / "run"
    _run_killed_before_its_first_checkpoint(run_dir, dead.pid)
    before = snapshot(tmp_path)
    for argv in (["train", "--resume", str(run_dir)], ["train", "ppo", "--env", "CartPole-v1", "--run-dir", str(run_dir)]):
        code, _, err = run_cli(capsys, *argv, "--quiet")
        assert_one_line_error(code, err, "stopped before its first checkpoint", "nothing to resume",
                              f"canter train ppo -f {run_dir / 'config.yaml'} --run-dir NEW_DIR", f"delete '{run_dir}'")
        assert snapshot(tmp_path) == before
    (run_dir / ".canter.lock").write_text(json.dumps({"host": socket.gethostname(), "pid": os.getppid(), "token": "t"}))
    code, _, err = run_cli(capsys, "train", "--resume", str(run_dir), "--quiet")  # a live process: still starting
    assert_one_line_error(code, err, "is being written by process")
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", "--run-dir", str(run_dir), "--quiet")
    assert_one_line_error(code, err, "choose another --run-dir")
    assert "delete" not in err
