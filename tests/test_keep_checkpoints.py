"""keep_checkpoints (--keep-checkpoints K): a run keeps only the newest K periodic step-N checkpoints, deleting an
older one only once a newer one is completely written; best, last and other names stay; resumed, multi-policy,
offline and distributed-learner runs keep to it; bad values are one-line errors (canter/checkpoint_keep.py)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

import canter
from canter.checkpoint import load_checkpoint
from canter.checkpoint_keep import periodic_checkpoints, prune_periodic
from canter.errors import CanterError, CanterWarning
from support import assert_one_line_error, forget_run_key, run_cli

#: a tiny PPO run: one 64-step iteration per record, a periodic checkpoint every 64 steps
PPO = dict(n_envs=1, n_steps=64, batch_size=64, n_epochs=1, net_arch=[8], eval_every=128, eval_episodes=1,
           checkpoint_every=64, tensorboard=False)


def _names(run_dir: Path) -> list[str]:
    """The checkpoint names in ``run_dir/checkpoints`` (each with both files: asserted)."""
    files = sorted(p.name for p in (run_dir / "checkpoints").iterdir())
    names = sorted({f.rsplit(".", 1)[0] for f in files})
    assert files == sorted(f"{n}.{s}" for n in names for s in ("json", "safetensors")), files
    return names


def _steps(run_dir: Path) -> list[int]:
    return sorted(periodic_checkpoints(run_dir / "checkpoints"))


@pytest.mark.parametrize("keep", [None, 1, 2])
def test_a_run_keeps_the_newest_k_periodic_checkpoints_and_always_best_and_last(tmp_path, keep):
    run_dir = tmp_path / "run"
    canter.train("ppo", "CartPole-v1", run_dir=run_dir, max_steps=384, keep_checkpoints=keep, **PPO)
    all_steps = [64, 128, 192, 256, 320, 384]
    assert _steps(run_dir) == (all_steps if keep is None else all_steps[-keep:])  # None: every one, as before
    assert {"best", "last"} <= set(_names(run_dir))
    for name in _names(run_dir):
        load_checkpoint(run_dir / "checkpoints" / name)
    assert yaml.safe_load((run_dir / "config.yaml").read_text())["keep_checkpoints"] == keep


def test_a_resumed_run_keeps_to_k_counting_the_checkpoints_saved_before_it(tmp_path):
    """K comes from the saved config. The resumed run deletes nothing before its first periodic checkpoint (those
    of the run it resumes from are its newest K until then), and counts them with its own afterwards."""
    run_dir = tmp_path / "run"
    kw = {**PPO, "checkpoint_every": 128}
    canter.train("ppo", "CartPole-v1", run_dir=run_dir, max_steps=512, keep_checkpoints=2, **kw)
    assert _steps(run_dir) == [384, 512]
    stop = {"after_update": lambda trainer, losses: setattr(trainer, "stop_requested", "interrupted")}
    canter.resume(run_dir, max_steps=1024, hooks=stop)  # stopped after one iteration: no checkpoint due
    assert read_step(run_dir) == 576 and _steps(run_dir) == [384, 512]
    canter.resume(run_dir, max_steps=640)
    assert _steps(run_dir) == [512, 640]  # the older run's newest is one of the two
    assert {"best", "last"} <= set(_names(run_dir))


def read_step(run_dir: Path) -> int:
    """The step of ``run_dir``'s ``last``."""
    return json.loads((run_dir / "checkpoints" / "last.json").read_text())["step"]


def test_checkpoints_after_the_step_just_saved_are_left_alone(tmp_path):
    """A checkpoint named after a later step than the one saved (the killed process's, from after the 'last' a
    resumed run started from) is not the resumed run's to delete yet: it would push out the one just saved."""
    run_dir = tmp_path / "run"
    canter.train("ppo", "CartPole-v1", run_dir=run_dir, max_steps=128, keep_checkpoints=1, **PPO)
    folder = run_dir / "checkpoints"
    for suffix in (".json", ".safetensors"):
        shutil.copy(folder / f"step-000000128{suffix}", folder / f"step-000000999{suffix}")
    canter.resume(run_dir, max_steps=256)
    assert _steps(run_dir) == [256, 999]


def test_an_old_run_without_the_key_resumes_and_keeps_every_checkpoint(tmp_path):
    """A run saved before keep_checkpoints existed (neither its config.yaml nor its last has the key) resumes
    as before, deleting nothing; a second resume after the first rewrote config.yaml (with the key) is no edit."""
    run_dir = tmp_path / "run"
    canter.train("ppo", "CartPole-v1", run_dir=run_dir, max_steps=192, **PPO)
    forget_run_key(run_dir, "keep_checkpoints")
    stop = {"before_collect": lambda trainer: setattr(trainer, "stop_requested", "interrupted")}
    canter.resume(run_dir, max_steps=320, hooks=stop)  # writes config.yaml anew, keeps the old last: a kill
    assert yaml.safe_load((run_dir / "config.yaml").read_text())["keep_checkpoints"] is None
    canter.resume(run_dir, max_steps=320)
    assert _steps(run_dir) == [64, 128, 192, 256, 320]


@pytest.mark.parametrize("argv, needle", [
    (["--keep-checkpoints", "0"], "'keep_checkpoints' must be >= 1, got 0"),
    (["--keep-checkpoints", "-2"], "'keep_checkpoints' must be >= 1, got -2"),
    (["--keep-checkpoints", "1.5"], "argument --keep-checkpoints: invalid int value: '1.5'"),
    (["--keep-checkpoints", "two"], "argument --keep-checkpoints: invalid int value: 'two'"),
    (["--set", "keep_checkpoints=0"], "'keep_checkpoints' must be >= 1, got 0"),
    (["--set", "keep_checkpoints=2.5"], "'keep_checkpoints' must be an int or null, got '2.5'"),
    (["--set", "keep_checkpoints=true"], "'keep_checkpoints' must be an int or null"),
    (["--keep-checkpoints", "2", "--set", "checkpoint_every=0"], "checkpoint_every: 0 saves none"),
])
def test_a_bad_keep_checkpoints_is_one_line_and_writes_nothing(tmp_path, capsys, argv, needle):
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", "--max-steps", "64", "--quiet",
                           "--run-dir", str(tmp_path / "run"), *argv)
    assert_one_line_error(code, err, needle)
    assert not (tmp_path / "run").exists()


def test_the_flag_and_a_config_file_set_it_and_help_shows_it(tmp_path, capsys):
    code, out, _ = run_cli(capsys, "train", "ppo", "--help")
    out = " ".join(out.split())  # argparse wraps the help
    assert code == 0 and "--keep-checkpoints K keep only the newest K periodic checkpoints" in out
    assert "best and last are always kept" in out
    (tmp_path / "run.yaml").write_text("env: CartPole-v1\nkeep_checkpoints: 1\ncheckpoint_every: 64\nmax_steps: 128\n"
                                       "n_envs: 1\neval_episodes: 1\ntensorboard: false\nhparams: {n_steps: 64}\n")
    code, _, err = run_cli(capsys, "train", "ppo", "-f", str(tmp_path / "run.yaml"), "--quiet", "--run-dir",
                           str(tmp_path / "a"))
    assert code == 0, err
    assert _steps(tmp_path / "a") == [128]
    code, _, err = run_cli(capsys, "train", "ppo", "-f", str(tmp_path / "run.yaml"), "--keep-checkpoints", "2",
                           "--quiet", "--run-dir", str(tmp_path / "b"))
    assert code == 0 and _steps(tmp_path / "b") == [64, 128], err


def test_a_failed_save_of_the_newer_checkpoint_deletes_nothing(tmp_path, monkeypatch):
    """The periodic checkpoint at 192 cannot be written (a full disk): the run stops with the error, and the
    checkpoints it had, 128 the newest, all stay (and 'last', saved between iterations, at 192)."""
    import canter.run

    real = canter.run.save_checkpoint

    def failing(path, state, meta):
        if Path(path).name == "step-000000192":
            raise OSError(28, "No space left on device", str(path))
        return real(path, state, meta)

    monkeypatch.setattr(canter.run, "save_checkpoint", failing)
    with pytest.raises(OSError, match="No space left"):
        canter.train("ppo", "CartPole-v1", run_dir=tmp_path / "run", max_steps=384, keep_checkpoints=1, **PPO)
    assert _steps(tmp_path / "run") == [128] and read_step(tmp_path / "run") == 192


def _fake_checkpoints(folder: Path, names: list[str]) -> None:
    """Real (tiny) checkpoints named ``names`` in ``folder``."""
    import torch

    from canter.checkpoint import save_checkpoint

    for name in names:
        save_checkpoint(folder / name, {"w": torch.zeros(2)}, {"step": 0})


def test_prune_deletes_only_the_runs_periodic_names_up_to_the_step_saved(tmp_path):
    names = ["best", "last", "step-1000", "mine", "step-000000100", "step-000000200", "step-000000300",
             "step-000000400", "step-0000000000500"]
    _fake_checkpoints(tmp_path, names)
    (tmp_path / "step-000000050.txt").write_text("a user's file")
    assert prune_periodic(tmp_path, 2, 400) == ["step-000000100", "step-000000200"]
    left = sorted({p.name.rsplit(".", 1)[0] for p in tmp_path.glob("*.*")})
    assert left == sorted(["best", "last", "step-1000", "mine", "step-000000300", "step-000000400",
                           "step-0000000000500", "step-000000050"])
    assert prune_periodic(tmp_path, 2, 400) == []
    with pytest.raises(ValueError):
        prune_periodic(tmp_path, 0, 400)


def test_a_prune_killed_between_the_two_files_leaves_checkpoints_that_load(tmp_path, monkeypatch):
    """The JSON goes first: a kill before the .safetensors goes leaves it alone, which loads (its header holds the
    JSON); the next prune deletes it."""
    _fake_checkpoints(tmp_path, ["best", "last", "step-000000100", "step-000000200", "step-000000300"])
    real = Path.unlink
    calls = []

    def killed(self, missing_ok=False):
        calls.append(self.name)
        if len(calls) == 2:
            raise KeyboardInterrupt  # as a kill: nothing after it runs
        return real(self, missing_ok=missing_ok)

    monkeypatch.setattr(Path, "unlink", killed)
    with pytest.raises(KeyboardInterrupt):
        prune_periodic(tmp_path, 1, 300)
    monkeypatch.setattr(Path, "unlink", real)
    assert calls == ["step-000000100.json", "step-000000100.safetensors"]
    for name in ["best", "last", "step-000000100", "step-000000200", "step-000000300"]:
        load_checkpoint(tmp_path / name)
    assert prune_periodic(tmp_path, 1, 300) == ["step-000000100", "step-000000200"]
    assert sorted(p.name for p in tmp_path.glob("step-*")) == ["step-000000300.json", "step-000000300.safetensors"]


def test_a_file_that_cannot_be_deleted_is_warned_about_and_the_run_goes_on(tmp_path, monkeypatch):
    _fake_checkpoints(tmp_path, ["step-000000100", "step-000000200", "step-000000300"])
    real = Path.unlink

    def refused(self, missing_ok=False):
        if self.name.startswith("step-000000100"):
            raise PermissionError(13, "Permission denied", str(self))
        return real(self, missing_ok=missing_ok)

    monkeypatch.setattr(Path, "unlink", refused)
    with pytest.warns(CanterWarning, match="could not delete the old checkpoint .*step-000000100: Permission"):
        assert prune_periodic(tmp_path, 1, 300) == ["step-000000200"]


def test_a_multi_policy_run_keeps_the_newest_k(tmp_path):
    pytest.importorskip("pettingzoo")
    from support import MIXED

    run_dir = tmp_path / "run"
    canter.train("ppo", MIXED, run_dir=run_dir, policies="agent", max_steps=768, keep_checkpoints=2,
                 **{**PPO, "checkpoint_every": 128})
    assert len(_steps(run_dir)) == 2 and _steps(run_dir)[-1] >= 768 - 128
    assert {"best", "last"} <= set(_names(run_dir))


def test_an_offline_run_keeps_the_newest_k(tmp_path):
    from canter.data.dataset import collect

    collect("CartPole-v1", 200, None, seed=0).save(tmp_path / "data")
    run_dir = tmp_path / "run"
    canter.train("bc", dataset=str(tmp_path / "data"), max_steps=100, gradient_steps=10, eval_every=0,
                 eval_episodes=1, net_arch=[16], checkpoint_every=20, keep_checkpoints=2, run_dir=run_dir)
    assert _steps(run_dir) == [80, 100]
    assert {"best", "last"} <= set(_names(run_dir))


def test_a_distributed_learner_run_keeps_the_newest_k(tmp_path):
    """IMPALA's learner (with its in-process explorer: the Run around it is the one a Ray run has)."""
    run_dir = tmp_path / "run"
    canter.train("impala", "CartPole-v1", run_dir=run_dir, max_steps=512, n_envs=2, eval_every=0, eval_episodes=1,
                 checkpoint_every=128, keep_checkpoints=1, tensorboard=False)
    assert _steps(run_dir) == [512] and {"best", "last"} <= set(_names(run_dir))


def test_keep_checkpoints_in_python_is_checked_too():
    with pytest.raises(CanterError, match="'keep_checkpoints' must be >= 1, got 0"):
        canter.make_trainer("ppo", "CartPole-v1", keep_checkpoints=0)


@pytest.mark.slow  # ~20 s: three fresh processes, each killed with SIGKILL while it trains
def test_kill_9_at_any_time_leaves_checkpoints_that_load_and_a_run_that_resumes(tmp_path):
    """A run with keep_checkpoints 1 and a checkpoint every iteration (a save and a prune every ~10 ms) is killed
    at random moments: every checkpoint left loads, at most K + 1 periodic ones are there (killed between a save
    and its prune), and --resume goes on keeping K."""
    import os
    import random
    import signal
    import subprocess
    import sys
    import time

    run_dir = tmp_path / "run"
    root = Path(canter.__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=str(root))
    base = [sys.executable, "-m", "canter", "train"]
    first = ["ppo", "--env", "CartPole-v1", "--n-envs", "1", "--n-steps", "16", "--batch-size", "16", "--n-epochs",
             "1", "--net-arch", "[8]", "--eval-every", "0", "--max-steps", "1000000", "--keep-checkpoints", "1",
             "--set", "checkpoint_every=16", "--set", "tensorboard=false", "--run-dir", str(run_dir)]
    rng = random.Random(0)
    for attempt in range(3):
        args = first if attempt == 0 else ["--resume", str(run_dir)]
        proc = subprocess.Popen([*base, *args, "--quiet"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        # any step-N: keep_checkpoints 1 prunes each a few ms after the next is saved, so waiting for one
        # (step-32) missed it on a fast run, and the failure message then read stderr until the run's 1M steps
        while attempt == 0 and not _steps(run_dir):
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"no step-N checkpoint within 60 s: {proc.communicate()[1].decode()[-2000:]}")
            time.sleep(0.05)
        time.sleep(1 + rng.random())
        assert proc.poll() is None, proc.stderr.read().decode()
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stderr.close()
        # (a temp file of a killed write, .NAME.<random>.tmp, is no checkpoint: --resume removes it)
        names = {p.name.rsplit(".", 1)[0] for p in (run_dir / "checkpoints").glob("*.*") if not p.name.startswith(".")}
        for name in names:
            load_checkpoint(run_dir / "checkpoints" / name)
        assert {"last"} <= names and 1 <= len(_steps(run_dir)) <= 2, sorted(names)
    assert read_step(run_dir) > 32


@pytest.mark.slow  # ~15 s: a private loopback Ray instance and one explorer actor
def test_a_run_with_ray_explorers_keeps_the_newest_k(tmp_path):
    import os

    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # read by Ray at import: loopback only
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    pytest.importorskip("ray")
    run_dir = tmp_path / "run"
    canter.train("ppo", "CartPole-v1", explorers=1, n_envs=2, max_steps=1024, n_steps=64, eval_every=0,
                 eval_episodes=1, checkpoint_every=256, keep_checkpoints=2, tensorboard=False, run_dir=run_dir)
    assert _steps(run_dir) == [768, 1024] and {"best", "last"} <= set(_names(run_dir))
