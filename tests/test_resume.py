"""Exact resume: a run killed (SIGKILL, Ctrl-C, a kill in the middle of a checkpoint write) and resumed
has the same history, bitwise, as an uninterrupted run with the same seed."""
from __future__ import annotations

import enum
import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
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
    from tests.test_cli_errors import snapshot

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
    from tests.test_cli_errors import snapshot

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


@pytest.mark.parametrize("given", ["new", "nested", "empty", "auto"])
def test_a_run_whose_setup_fails_leaves_no_half_written_directory(tmp_path, capsys, monkeypatch, given):
    """The directories the run made are removed (an empty run directory was left behind, and with
    'auto' an empty runs/ too); an empty directory it was given stays."""
    monkeypatch.chdir(tmp_path)
    run_dir = {"new": tmp_path / "run", "nested": tmp_path / "a" / "b" / "run", "empty": tmp_path / "run"}.get(given)
    if given == "empty":
        run_dir.mkdir()
    code = main(["train", "dqn", "--env", "CartPole-v1", "--set", "buffer_size=10000000000000", "--quiet",
                 *([] if run_dir is None else ["--run-dir", str(run_dir)])])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1 and "lower hparams.buffer_size" in err, err
    assert [p.name for p in tmp_path.iterdir()] == (["run"] if given == "empty" else [])
    if given == "empty":
        assert list(run_dir.iterdir()) == []


def test_a_run_dir_through_a_missing_directory_and_dotdot_is_checked_as_it_resolves(tmp_path, capsys, monkeypatch):
    """'new/../kept' is 'kept' once 'new' is made: its files refuse it as any non-empty run directory
    (the check saw a path that did not exist, and the failed setup's cleanup deleted 'kept' whole)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "kept").mkdir()
    (tmp_path / "kept" / "notes.txt").write_text("precious")
    code = main(["train", "dqn", "--env", "CartPole-v1", "--set", "buffer_size=10000000000000", "--quiet",
                 "--run-dir", "new/../kept"])
    err = capsys.readouterr().err
    assert code == 2 and "not empty" in err, err
    assert (tmp_path / "kept" / "notes.txt").read_text() == "precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept"]


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
    with pytest.raises(CanterError, match="already finished .*max_steps.*--max-steps"):
        canter.resume(run_dir)
    assert main(["train", "--resume", str(run_dir), "--max-steps", "3072", "--quiet"]) == 0
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["steps"] == 3072 and summary["resumes"] == 1
    assert len(table(run_dir, "history")) > len(table(setup_dir / "ppo-reference", "history"))
    assert table(run_dir, "history")[:5] == table(setup_dir / "ppo-reference", "history")[:5]


@pytest.mark.parametrize("argv, needle", [
    (["--resume", "/nonexistent/run"], "no such run directory"),
    (["--resume", "{tmp}"], "no checkpoints/last"),
    (["--resume", "{tmp}", "--seed", "3"], "only --max-steps"),
    (["--resume"], "expected one argument"),
])
def test_resume_cli_errors_are_one_line(tmp_path, capsys, argv, needle):
    code = main(["train", *[a.format(tmp=tmp_path) for a in argv]])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1 and needle in err, err


def test_env_that_cannot_be_saved_resumes_with_fresh_episodes(tmp_path, monkeypatch):
    """An env holding an opaque object: the resumed run is valid (and says it is not exact)."""
    from support import register_unsaveable, stop_at_300

    env = register_unsaveable("CartPole-v1", "LockedCartPole-test")
    run_dir = tmp_path / "run"
    kw = dict(n_envs=2, n_steps=32, batch_size=64, n_epochs=1, max_steps=640, eval_every=0, eval_episodes=1,
              tensorboard=False)
    canter.train("ppo", env, run_dir=run_dir, hooks={"after_update": stop_at_300}, **kw)
    meta = read_metadata(run_dir / "checkpoints" / "last")
    assert meta["env_state_saved"] is False and meta["stop_reason"] == "interrupted"
    canter.resume(run_dir)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["resume_exact"] is False and summary["steps"] == 640 and summary["stop_reason"] == "max_steps"


def test_fresh_episodes_after_a_resume_start_with_zero_discounted_returns(tmp_path):
    """normalize_reward keeps a running discounted return per env; a resume that resets the envs (fresh
    episodes) must zero it, as an episode end does, not carry the dropped episodes' returns into the new."""
    from support import state_after_inexact_resume

    def running_at_the_stop(run_dir):
        state, _ = load_checkpoint(run_dir / "checkpoints" / "last")
        assert np.abs(state["agent"]["returns"]).sum() > 0

    exact, returns = state_after_inexact_resume(
        "ppo", "CartPole-v1", "LockedCartPoleReturns-test", lambda t: t.agent._returns.copy(), tmp_path / "run",
        between=running_at_the_stop, n_envs=2, n_steps=32, batch_size=32, n_epochs=1, max_steps=640, eval_every=0,
        eval_episodes=1, tensorboard=False, seed=0, normalize_reward=True)
    assert exact is False and (returns == 0).all()


# -- refusing bad checkpoint files ----------------------------------------------------------------


@pytest.fixture(scope="module")
def good_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("good") / "run"
    canter.train("ppo", "CartPole-v1", run_dir=run_dir, max_steps=256, n_envs=2, n_steps=64, eval_episodes=1,
                 eval_every=0, tensorboard=False)
    return run_dir


class Evil:
    """Unpickling this runs ``os.system``: the loader must never get that far."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def copy_checkpoint(src: Path, dst: Path) -> Path:
    dst.mkdir(parents=True)
    for suffix in (".json", ".safetensors"):
        (dst / f"last{suffix}").write_bytes((src / "checkpoints" / f"last{suffix}").read_bytes())
    return dst / "last"


@pytest.mark.parametrize("which", ["safetensors", "json", "torch-zip"])
def test_pickled_checkpoint_files_are_refused_and_never_run(good_run, tmp_path, capsys, which):
    import pickle

    import torch

    base = copy_checkpoint(good_run, tmp_path / "ck")
    marker = tmp_path / "executed"
    if which == "torch-zip":
        torch.save({"x": Evil(marker)}, base.with_suffix(".safetensors"))
    else:
        base.with_suffix(f".{which}").write_bytes(pickle.dumps(Evil(marker)))
    with pytest.raises(CanterError, match="not a readable safetensors|not valid JSON"):
        canter.load(base)
    code = main(["eval", str(base), "--episodes", "1"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1
    assert not marker.exists()


def test_truncated_safetensors_is_refused(good_run, tmp_path):
    base = copy_checkpoint(good_run, tmp_path / "ck")
    blob = base.with_suffix(".safetensors").read_bytes()
    for cut in (8, len(blob) // 2, len(blob) - 1):
        base.with_suffix(".safetensors").write_bytes(blob[:cut])
        with pytest.raises(CanterError, match="last.safetensors"):
            load_checkpoint(base)


@pytest.mark.parametrize("space", [
    {"type": "Box", "shape": "abc", "dtype": "float32", "low": 0, "high": 1},
    {"type": "Box", "shape": [4], "dtype": "not-a-dtype", "low": 0, "high": 1},
    {"type": "Discrete", "n": -3},
    {"type": "Teleporter"},
    ["not", "a", "mapping"],
    {"type": "Box", "shape": [7], "dtype": "float32", "low": -1, "high": 1},  # valid, but not the model's
    {"type": "Box", "shape": [4], "dtype": "float32", "low": -1, "high": 1, "layout": "not a list of entries"},
])
def test_checkpoint_json_with_wrong_spaces_is_refused(good_run, tmp_path, capsys, space):
    base = copy_checkpoint(good_run, tmp_path / "ck")
    meta = json.loads(base.with_suffix(".json").read_text())
    meta["observation_space"] = space
    base.with_suffix(".json").write_text(json.dumps(meta))
    with pytest.raises(CanterError, match="observation_space|does not fit"):
        canter.load(base)
    code = main(["eval", str(base), "--episodes", "1"])
    assert code == 2 and len(capsys.readouterr().err.splitlines()) == 1


def test_checkpoint_naming_a_non_algorithm_class_is_refused(good_run, tmp_path):
    base = copy_checkpoint(good_run, tmp_path / "ck")
    meta = json.loads(base.with_suffix(".json").read_text())
    for key, value in (("algo", "builtins:print"), ("model", "os:system"), ("agent", "subprocess:Popen")):
        bad = json.loads(json.dumps(meta))
        bad["config"][key] = value
        base.with_suffix(".json").write_text(json.dumps(bad))
        with pytest.raises(CanterError, match=f"'{value}' is not an? (algorithm|model|agent) class"):
            canter.load(base)
    # the encoder a model builds is named in hparams; it is called with (space, ortho_init=...) and was not
    # checked first, so a function named there ran before the error
    bad = json.loads(json.dumps(meta))
    bad["config"]["hparams"]["encoder"] = "os:system"
    base.with_suffix(".json").write_text(json.dumps(bad))
    with pytest.raises(CanterError, match="'os:system' is not an encoder class"):
        canter.load(base)


# -- env state capture -------------------------------------------------------------------------------


class _Phase(enum.Enum):
    A = 0
    B = 1


class _PhaseEnv(gym.Env):
    """A game whose state is an Enum member: action 1 toggles the phase; reward 1 in phase B."""

    observation_space = gym.spaces.Box(0, 1, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, seed=None, options=None):  # noqa: D102
        super().reset(seed=seed)
        self.phase, self.t = _Phase.A, 0
        return np.zeros(1, np.float32), {}

    def step(self, action):  # noqa: D102
        if action == 1:
            self.phase = _Phase.B if self.phase is _Phase.A else _Phase.A
        self.t += 1
        return np.full(1, self.phase.value, np.float32), float(self.phase is _Phase.B), False, self.t >= 40, {}


canter.register("env", "CanterTestPhase-v0")(lambda render_mode=None, **kw: _PhaseEnv())


@pytest.mark.parametrize("env_id, mode", [("CartPole-v1", "native"), ("CartPole-v1", "sync"), ("Pendulum-v1", "sync"),
                                          ("FrozenLake-v1", "sync"), ("CanterTestPhase-v0", "sync")])
def test_env_state_round_trip_continues_identically(env_id, mode):
    from safetensors.torch import load, save

    from canter.checkpoint import flatten_state, unflatten_state
    from canter.envs import make_vec_env
    from canter.envs.state import capture_env, restore_env

    env = make_vec_env(env_id, 3, mode)
    env.reset(seed=5)
    env.single_action_space.seed(0)
    actions = [np.stack([env.single_action_space.sample() for _ in range(3)]) for _ in range(300)]
    for a in actions[:150]:
        env.step(a)
    state, problems = capture_env(env)
    assert problems == []
    skeleton, tensors = flatten_state(state)
    state = unflatten_state(json.loads(json.dumps(skeleton)), load(save(tensors)))
    expected = [env.step(a) for a in actions[150:]]
    fresh = make_vec_env(env_id, 3, mode)
    fresh.reset(seed=123)
    restore_env(fresh, state)
    got = [fresh.step(a) for a in actions[150:]]
    for e, g in zip(expected, got):
        for x, y in zip(e, g):
            np.testing.assert_array_equal(x, y)
    env.close()
    fresh.close()


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
    must not take the place of the uninterrupted run's next one (step-208 instead of step-240)."""
    common = dict(n_envs=2, n_steps=8, max_steps=800, eval_every=300, eval_episodes=1, log_every=5,
                  checkpoint_every=200, tensorboard=False, target_reward=None, seed=1)

    _whole_and_stopped_off_the_log_grid(tmp_path, common, after=200, stopped_at=208)  # iteration 13
    names = {d: sorted(p.name for p in (tmp_path / d / "checkpoints").glob("step-*.json")) for d in ("whole", "part")}
    assert names["part"] == names["whole"] == [f"step-{s:09d}.json" for s in (240, 400, 608, 800)]


def test_weights_that_do_not_fit_the_model_are_refused_in_one_line(good_run, tmp_path, capsys):
    """A checkpoint whose tensors another architecture wrote (an older canter's dueling heads, say):
    load and eval say so in one line; resume refuses before writing anything."""
    import shutil

    from tests.test_cli_errors import snapshot

    run_dir = tmp_path / "run"
    shutil.copytree(good_run, run_dir)
    meta_path = run_dir / "checkpoints" / "last.json"
    meta = json.loads(meta_path.read_text())
    meta["config"]["hparams"]["net_arch"] = [32, 32]  # the model it describes is not the one saved
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(CanterError, match="does not fit the model its config describes"):
        canter.load(run_dir / "checkpoints" / "last")
    before = snapshot(run_dir)
    assert main(["train", "--resume", str(run_dir), "--max-steps", "512", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "does not fit the model" in err, err
    assert snapshot(run_dir) == before


@pytest.mark.parametrize("edit", [
    lambda m: m.update(step="abc"),
    lambda m: m.update(resumes="x"),
    lambda m: m.update(config=3),
    lambda m: m["state"]["trainer"].update(counters={}),
    lambda m: m["state"]["trainer"]["rng"].update(python=[1, 2]),
], ids=["step", "resumes", "config", "counters", "rng"])
def test_hand_edited_resume_metadata_is_one_line_and_touches_nothing(good_run, tmp_path, capsys, edit):
    """The sha256 covers the tensors, not the JSON: a last.json edited by hand (a step that is no number,
    trainer counters gone) was a traceback (exit 1), some after a new event file was written."""
    import shutil

    from tests.test_cli_errors import snapshot

    run_dir = tmp_path / "run"
    shutil.copytree(good_run, run_dir)
    meta_path = run_dir / "checkpoints" / "last.json"
    meta = json.loads(meta_path.read_text())
    edit(meta)
    meta_path.write_text(json.dumps(meta))
    before = snapshot(run_dir)
    assert main(["train", "--resume", str(run_dir), "--max-steps", "512", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "cannot be resumed: its metadata was edited or is corrupt" in err, err
    assert snapshot(run_dir) == before


def test_a_resume_refuses_an_edited_config_yaml_and_keeps_the_edit(tmp_path, capsys):
    """--resume continues with the config saved in checkpoints/last; an edit to config.yaml (lr 0.5) was ignored
    without a word, and the resumed run rewrote the file with the old lr, so the edit was lost too."""
    from tests.test_cli_errors import snapshot

    run_dir = tmp_path / "run"
    canter.train("ppo", "CartPole-v1", run_dir=run_dir, max_steps=64, n_envs=1, eval_episodes=1,
                 sets=["n_steps=64", "n_epochs=1"])
    text = (run_dir / "config.yaml").read_text()
    (run_dir / "config.yaml").write_text(text.replace("  lr: 0.00166\n", "  lr: 0.5\n"))
    before = snapshot(run_dir)
    assert main(["train", "--resume", str(run_dir), "--max-steps", "128", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "config.yaml was edited since the run wrote it ('hparams.lr' differs" in err
    assert snapshot(run_dir) == before
    from canter.resume_checks import check_config_unedited

    saved = read_metadata(run_dir / "checkpoints" / "last")["config"]
    (run_dir / "config.yaml").write_text(text.replace("max_steps: 64\n", "max_steps: 128\n"))  # a resume's rewrite
    check_config_unedited(run_dir, saved)
    # an earlier canter wrote the string '1e1' unquoted; it reads back as the number 10.0 now: no edit
    (run_dir / "config.yaml").write_text(text.replace("env_kwargs: {}\n", "env_kwargs:\n  g: 1e1\n"))
    check_config_unedited(run_dir, {**saved, "env_kwargs": {"g": "1e1"}})
    # ... and inside a list too (a callback's arguments; env_kwargs' lists), where it was refused as an edit
    old = {"env_kwargs": {"gs": ["1e1", {"g": "2e1"}]}, "callbacks": [{"EarlyStopping": {"min_delta": "1e-3"}}]}
    (run_dir / "config.yaml").write_text(yaml.safe_dump({**saved, **old}, sort_keys=False))
    check_config_unedited(run_dir, {**saved, **old})
    (run_dir / "config.yaml").write_text(yaml.safe_dump({**saved, **old, "env_kwargs": {"gs": ["1e1", {"g": 3}]}}))
    with pytest.raises(CanterError, match="'env_kwargs.gs' differs"):  # an edit inside a list is still one
        check_config_unedited(run_dir, {**saved, **old})


def test_a_run_saved_with_exponent_strings_in_its_callbacks_resumes(tmp_path):
    """A canter before exponent forms were numbers read 'min_delta: 1e-3' in a 'callbacks' entry as the string
    '1e-3' (its callbacks took it through float()) and saved it so; EarlyStopping now refuses a string, so
    such a run did not resume ('min_delta must be a number >= 0, got '1e-3'')."""
    run_dir = tmp_path / "run"
    canter.train("ppo", "CartPole-v1", run_dir=run_dir, max_steps=64, n_envs=1, eval_episodes=1,
                 sets=["n_steps=64", "n_epochs=1", "batch_size=64",
                       "callbacks=[{canter.callbacks:EarlyStopping: {patience: 9, min_delta: 0.001}}]"])
    meta_path = run_dir / "checkpoints" / "last.json"
    meta = json.loads(meta_path.read_text())
    meta["config"]["callbacks"] = [{"canter.callbacks:EarlyStopping": {"patience": 9, "min_delta": "1e-3"}}]
    meta_path.write_text(json.dumps(meta))  # as the earlier canter saved it, and wrote config.yaml:
    (run_dir / "config.yaml").write_text(yaml.safe_dump(meta["config"], sort_keys=False))
    assert main(["train", "--resume", str(run_dir), "--max-steps", "128", "--quiet"]) == 0
    assert read_metadata(run_dir / "checkpoints" / "last")["step"] == 128
    from canter.resume_checks import as_numbers_now

    assert as_numbers_now([{"my_pkg:Tagger": {"tag": "1e3"}}]) == [{"my_pkg:Tagger": {"tag": "1e3"}}]  # as given
