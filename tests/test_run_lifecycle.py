"""A run directory's life outside the plain ``for record in run()`` loop: a loop left early and
closed (or not), what ``canter.train`` leaves behind in the caller's process, and reproducing a training
evaluation with ``canter eval``. (Runs holding the directory's lock: test_run_lock_lifecycle.py.)"""
from __future__ import annotations

import json
import os
import random
import signal
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch

import canter
from canter.checkpoint import read_metadata
from canter.cli import main
from canter.errors import CanterError
from canter.run_lock import LOCK_NAME
from support import run_python

ROOT = Path(canter.__file__).resolve().parents[1]
PPO = dict(n_envs=2, n_steps=64, batch_size=64, n_epochs=2, eval_every=512, eval_episodes=2, tensorboard=False,
           sets=["target_reward=null"])


def _summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


def _left_early(run_dir: Path, at: int = 640, max_steps: int = 2048, **kw):
    run = canter.make_trainer("ppo", "CartPole-v1", run_dir=run_dir, max_steps=max_steps, seed=1, **PPO, **kw)
    gen = run()
    for record in gen:
        if record.step >= at:
            break
    return run, gen, record.step


def test_closing_a_loop_left_early_saves_the_run_and_gives_back_ctrl_c(tmp_path):
    run_dir = tmp_path / "run"
    before = signal.getsignal(signal.SIGINT)
    run, gen, step = _left_early(run_dir)
    assert (run_dir / LOCK_NAME).exists()
    with pytest.raises(CanterError, match="still open in this process"):  # nothing is touched
        canter.resume(run_dir)
    run.close()
    assert signal.getsignal(signal.SIGINT) is before
    assert not (run_dir / LOCK_NAME).exists()
    summary, meta = _summary(run_dir), read_metadata(run_dir / "checkpoints" / "last")
    assert summary["stop_reason"] == meta["stop_reason"] == "interrupted"
    assert summary["steps"] == meta["step"] == step
    assert pq.read_table(run_dir / "history.parquet").num_rows == summary["episodes"] > 0
    canter.resume(run_dir)
    finished = _summary(run_dir)
    assert finished["stop_reason"] == "max_steps" and finished["steps"] >= 2048
    del gen  # the old generator, collected now, must not write its stale state over the finished run
    import gc

    gc.collect()
    assert _summary(run_dir) == finished


def test_the_time_between_leaving_a_loop_and_closing_it_is_not_training_time(tmp_path):
    """The summary and ``last`` counted the seconds between ``break`` and ``run.close()`` as training, and a
    resumed run's clock (its history wall times, max_seconds) went on from there."""
    import time

    run_dir = tmp_path / "run"
    run = canter.make_trainer("ppo", "CartPole-v1", run_dir=run_dir, max_steps=2048, seed=1, **PPO)
    for record in run():
        if record.step >= 640:
            break
    time.sleep(1.5)
    run.close()
    summary, meta = _summary(run_dir), read_metadata(run_dir / "checkpoints" / "last")
    assert summary["wall_seconds"] == round(record.wall_time, 3)
    assert meta["trainer"]["wall_time"] == record.wall_time < 1.5


def test_a_with_block_closes_the_run(tmp_path):
    run_dir = tmp_path / "run"
    with canter.make_trainer("ppo", "CartPole-v1", run_dir=run_dir, max_steps=2048, seed=1, **PPO) as run:
        for record in run():
            if record.step >= 640:
                break
    assert _summary(run_dir)["stop_reason"] == "interrupted" and not (run_dir / LOCK_NAME).exists()


def test_a_loop_left_open_is_saved_when_the_interpreter_exits(tmp_path):
    code = ("import canter\n"
            f"run = canter.make_trainer('ppo', 'CartPole-v1', run_dir={str(tmp_path / 'run')!r}, max_steps=4096, seed=1,"
            " n_envs=2, n_steps=64, batch_size=64, n_epochs=2, tensorboard=False, sets=['target_reward=null'])\n"
            "gen = run()\n"
            "for r in gen:\n"
            "    if r.step >= 640:\n"
            "        print(r.step)\n"
            "        break\n")
    proc = run_python(code, tmp_path)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr, proc.stderr
    run_dir, step = tmp_path / "run", int(proc.stdout.split()[-1])
    assert _summary(run_dir)["steps"] == read_metadata(run_dir / "checkpoints" / "last")["step"] == step
    assert pq.read_table(run_dir / "history.parquet").num_rows == _summary(run_dir)["episodes"] > 0
    canter.resume(run_dir)
    assert _summary(run_dir)["stop_reason"] == "max_steps"


def test_train_leaves_the_callers_random_states_and_threads_as_they_were(tmp_path):
    from canter.models.linear import blas_state, blas_threads, restore_blas_threads, set_blas_threads

    old_torch, old_blas = torch.get_num_threads(), blas_state()
    try:
        torch.set_num_threads(2)
        set_blas_threads(2)
        random.seed(5), np.random.seed(5), torch.manual_seed(5)
        expected = random.random(), np.random.random(), torch.rand(1).item()
        random.seed(5), np.random.seed(5), torch.manual_seed(5)
        for algo, threads in (("dqn", 1), ("ppo", 1)):
            agent = canter.train(algo, "CartPole-v1", run_dir=None, max_steps=600, torch_threads=threads, seed=3,
                                 sets=["target_reward=null"], **({"learning_starts": 200} if algo == "dqn" else {}))
            assert torch.get_num_threads() == 2 and blas_threads() == 2, algo
        assert (random.random(), np.random.random(), torch.rand(1).item()) == expected
        # the agent describes itself as a loaded one does
        assert agent.run_config.env == "CartPole-v1" and agent.run_config.seed == 3
        assert agent.metadata["algorithm"] == "ppo" and agent.metadata["config"]["hparams"]["n_steps"] > 0
        written = canter.train("a2c", "CartPole-v1", run_dir=tmp_path / "a2c", max_steps=500, seed=3)
        loaded = canter.load(tmp_path / "a2c")
        assert written.metadata["config"] == loaded.metadata["config"] and written.run_dir == tmp_path / "a2c"
    finally:
        torch.set_num_threads(old_torch)
        restore_blas_threads(old_blas)


def test_canter_eval_reproduces_an_evaluation_of_training(tmp_path, capsys):
    run_dir = tmp_path / "run"
    canter.train("a2c", "CartPole-v1", run_dir=run_dir, max_steps=6000, eval_every=2000, eval_episodes=6, seed=3,
                 sets=["target_reward=null"])
    evals = pq.read_table(run_dir / "evaluations.parquet").to_pydict()
    assert evals["step"][-1] == 6000 and read_metadata(run_dir / "checkpoints" / "last")["step"] == 6000
    k = len(evals["step"]) - 1  # the k-th evaluation of a run seeds with seed + 1_000_003 + 7919 k
    assert main(["eval", str(run_dir / "checkpoints" / "last"), "--episodes", "6", "--json",
                 "--seed", str(3 + 1_000_003 + 7919 * k)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["mean_return"] == pytest.approx(evals["mean_return"][-1], abs=1e-9)
    assert out["std_return"] == pytest.approx(evals["std_return"][-1], abs=1e-9)


def test_a_resumed_runs_console_clock_goes_on(tmp_path, capsys):
    run_dir = tmp_path / "run"
    import time

    run, gen, _ = _left_early(run_dir, hooks={"after_update": lambda trainer, losses: time.sleep(0.3)})
    run.close()
    wall = read_metadata(run_dir / "checkpoints" / "last")["trainer"]["wall_time"]
    capsys.readouterr()
    canter.resume(run_dir, quiet=False)
    first = next(line for line in capsys.readouterr().err.splitlines() if line.startswith("["))
    assert wall > 1.0 and float(first[1:first.index("s]")]) >= wall - 0.05  # the console shows tenths (1.6 for 1.6007)


def test_a_loop_left_at_its_last_record_finished_the_run(tmp_path):
    """Leaving the loop at the record that ends the run (``record.done``) is the run's end, not an
    interruption: a resume would take one more iteration past max_steps."""
    run_dir = tmp_path / "run"
    with canter.make_trainer("ppo", "CartPole-v1", run_dir=run_dir, max_steps=512, seed=1, **PPO) as run:
        for record in run():
            if record.done:
                break
    assert _summary(run_dir)["stop_reason"] == read_metadata(run_dir / "checkpoints" / "last")["stop_reason"] \
        == "max_steps"
    with pytest.raises(CanterError, match="already finished"):
        canter.resume(run_dir)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_that_exits_leaves_the_parents_open_run_alone(tmp_path):
    code = ("import os, sys, canter\n"
            f"run = canter.make_trainer('ppo', 'CartPole-v1', run_dir={str(tmp_path / 'run')!r}, max_steps=1024,"
            " seed=1, n_envs=2, n_steps=64, batch_size=64, n_epochs=2, tensorboard=False, sets=['target_reward=null'])\n"
            "gen = run()\n"
            "next(gen)\n"
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    sys.exit(0)\n"  # the child leaves through the interpreter's exit: the atexit hooks run
            "os.waitpid(pid, 0)\n"
            "print((run.dir / '.canter.lock').exists(), (run.dir / 'summary.json').exists())\n"
            "run.close()\n")
    proc = run_python(code, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "False"]  # the parent still holds its lock; the child saved nothing
    assert _summary(tmp_path / "run")["stop_reason"] == "interrupted"


def test_a_run_whose_directory_was_deleted_is_not_written_back(tmp_path):
    import shutil

    run_dir = tmp_path / "scratch" / "run"
    run, gen, _ = _left_early(run_dir, at=256, max_steps=1024)
    shutil.rmtree(tmp_path / "scratch")
    run.close()
    assert not (tmp_path / "scratch").exists()


def test_close_closes_the_envs_when_saving_fails(tmp_path, monkeypatch):
    run_dir = tmp_path / "run"
    run, gen, _ = _left_early(run_dir, at=256, max_steps=1024)
    closed = []
    monkeypatch.setattr(run.trainer, "close", lambda: closed.append(True))
    monkeypatch.setattr(run, "save_resumable", lambda **kw: (_ for _ in ()).throw(OSError(28, "No space left")))
    with pytest.raises(OSError):
        run.close()
    assert closed and not (run_dir / LOCK_NAME).exists()


def test_train_gives_numpys_blas_back_its_own_pool_size(tmp_path):
    """A caller that never limited OpenBLAS keeps its pool size after a run that gave BLAS its threads."""
    from canter.models.linear import available_cpus

    if available_cpus() < 2:
        pytest.skip("needs 2 CPUs")
    code = ("import canter\nfrom canter.models.linear import blas_pool_threads\n"
            "before = blas_pool_threads()\n"
            "canter.train('dqn', 'CartPole-v1', run_dir=None, max_steps=300, learning_starts=100, torch_threads=2,"
            " seed=0)\n"
            "print(before, blas_pool_threads())\n")
    proc = run_python(code, tmp_path)
    assert proc.returncode == 0, proc.stderr
    before, after = proc.stdout.split()
    assert after == before, proc.stdout


def test_canter_eval_on_another_env_does_not_need_the_runs_native_vectorization(tmp_path, capsys):
    import gymnasium as gym

    if "NoNativeCartPole-v0" not in gym.registry:
        gym.register("NoNativeCartPole-v0", entry_point="gymnasium.envs.classic_control.cartpole:CartPoleEnv",
                     max_episode_steps=200)
    run_dir = tmp_path / "run"
    canter.train("ppo", "CartPole-v1", run_dir=run_dir, max_steps=256, vectorization="native", **PPO)
    capsys.readouterr()
    assert main(["eval", str(run_dir), "--env", "NoNativeCartPole-v0", "--episodes", "2", "--json"]) == 0, \
        capsys.readouterr().err
    assert json.loads(capsys.readouterr().out)["episodes"] == 2


def test_close_from_a_callback_stops_the_run_after_its_iteration(tmp_path):
    """close() inside the running loop cannot close the generator: it stops the run as a first
    Ctrl-C does, without closing the envs the iteration under way steps (async envs would raise)."""
    run_dir, holder = tmp_path / "run", {}

    def after_update(trainer, losses):
        if trainer.step >= 256 and "closed" not in holder:
            holder["closed"] = trainer.step
            holder["run"].close()

    run = canter.make_trainer("ppo", "CartPole-v1", run_dir=run_dir, max_steps=2048, seed=1, vectorization="async",
                              hooks={"after_update": after_update}, **PPO)
    holder["run"] = run
    with run:
        steps = [record.step for record in run()]
    assert steps[-1] == holder["closed"] < 2048
    assert _summary(run_dir)["stop_reason"] == read_metadata(run_dir / "checkpoints" / "last")["stop_reason"] \
        == "interrupted"
    canter.resume(run_dir)
    assert _summary(run_dir)["stop_reason"] == "max_steps"


def test_a_new_run_whose_on_train_start_hook_raises_leaves_no_directory_that_refuses_a_retry(tmp_path):
    """Its 'last' was never saved (the user's hook runs first), so it could not be resumed, and the
    directory it left (config, history files, a summary saying 'interrupted') refused a second try."""
    def broken(trainer):
        raise RuntimeError("the user's hook")

    run_dir = tmp_path / "run"
    with pytest.raises(RuntimeError, match="the user's hook"):
        canter.train("ppo", "CartPole-v1", run_dir=run_dir, max_steps=64, hooks={"on_train_start": broken}, **PPO)
    assert not run_dir.exists() and not (tmp_path / LOCK_NAME).exists()
    canter.train("ppo", "CartPole-v1", run_dir=run_dir, max_steps=64, **PPO)  # the retry with the hook fixed
    assert _summary(run_dir)["stop_reason"] == "max_steps"


def test_a_hook_raising_mid_run_is_named_in_the_summary_and_the_run_resumes(tmp_path):
    """The summary of a run stopped by a hook's error said 'interrupted' as for a Ctrl-C, with no trace of
    the error; it now names it, and the run (saved at its last consistent state) resumes once fixed."""
    def broken(trainer, losses):
        if trainer.step >= 256:
            raise RuntimeError("the user's hook\nsecond line")

    run_dir = tmp_path / "run"
    with pytest.raises(RuntimeError, match="the user's hook"):
        canter.train("ppo", "CartPole-v1", run_dir=run_dir, max_steps=512, hooks={"after_update": broken}, **PPO)
    summary = _summary(run_dir)
    assert summary["stop_reason"] == "interrupted" and summary["error"] == "RuntimeError: the user's hook"
    canter.resume(run_dir)
    assert _summary(run_dir)["stop_reason"] == "max_steps" and _summary(run_dir)["error"] is None


def test_two_runs_made_for_one_empty_directory_do_not_overwrite_each_other(tmp_path):
    """make_trainer checks that run_dir is empty when it builds the Run; a second Run made for the same
    directory before the first wrote it then overwrote the first's config, summary, history and checkpoints."""
    run_dir = tmp_path / "run"
    first = canter.make_trainer("ppo", "CartPole-v1", run_dir=run_dir, max_steps=64, seed=1, **PPO)
    second = canter.make_trainer("ppo", "CartPole-v1", run_dir=run_dir, max_steps=64, seed=2, **PPO)
    for _ in first():
        pass
    first.close()
    written = {p.name: p.stat().st_mtime_ns for p in run_dir.rglob("*")}
    with pytest.raises(CanterError, match="no longer empty"):
        for _ in second():
            pass
    second.close()
    assert _summary(run_dir)["seed"] == 1 and {p.name: p.stat().st_mtime_ns for p in run_dir.rglob("*")} == written
    assert not (run_dir / LOCK_NAME).exists()


def test_trainers_made_in_the_same_second_with_run_dir_auto_get_directories_of_their_own(tmp_path, monkeypatch):
    """run_dir='auto' picked the first name not on disk, and a run writes its directory only when it starts:
    two trainers made in the same second got the same directory."""
    monkeypatch.chdir(tmp_path)
    first = canter.make_trainer("ppo", "CartPole-v1", run_dir="auto", max_steps=64, **PPO)
    second = canter.make_trainer("ppo", "CartPole-v1", run_dir="auto", max_steps=64, **PPO)
    first.close(), second.close()
    assert first.dir != second.dir



def test_a_run_that_cannot_save_its_checkpoints_says_so_in_its_summary(tmp_path, monkeypatch):
    """A full disk (or a read-only checkpoints folder) fails the periodic save and then the final 'last': the
    summary was not written (a resumed run kept the previous run's, 'max_steps' and no error). It now says
    'interrupted' with the error, the previous 'last' stays, and the run resumes once the disk has room."""
    import canter.run as run_module

    real, calls = run_module.save_checkpoint, []

    def full_disk(path, state, metadata):
        calls.append(path)
        if len(calls) > 1:  # the 'last' saved when training starts is written, nothing after
            raise OSError(28, "No space left on device", str(path))
        return real(path, state, metadata)

    run_dir = tmp_path / "run"
    monkeypatch.setattr(run_module, "save_checkpoint", full_disk)
    with pytest.raises(OSError, match="No space left"):
        canter.train("ppo", "CartPole-v1", run_dir=run_dir, max_steps=512, checkpoint_every=256, **PPO)
    summary = _summary(run_dir)
    assert summary["stop_reason"] == "interrupted" and summary["error"].startswith("OSError: [Errno 28] No space left")
    assert summary["steps"] >= 256 and read_metadata(run_dir / "checkpoints" / "last")["step"] == 0
    monkeypatch.setattr(run_module, "save_checkpoint", real)
    canter.resume(run_dir)
    assert _summary(run_dir)["stop_reason"] == "max_steps" and _summary(run_dir)["error"] is None


def test_save_resumable_after_the_loop_keeps_why_training_ended(tmp_path):
    """``run.save_resumable()`` after a finished loop saved ``last`` with stop_reason None: the finished run
    read as unfinished, and ``--resume`` trained one more iteration past its max_steps."""
    run = canter.make_trainer("ppo", "CartPole-v1", run_dir=tmp_path / "run", max_steps=128, seed=1, **PPO)
    with run:
        for _ in run():
            pass
        run.save_resumable()
    assert read_metadata(tmp_path / "run" / "checkpoints" / "last")["stop_reason"] == "max_steps"
    assert _summary(tmp_path / "run")["stop_reason"] == "max_steps"
    with pytest.raises(CanterError, match=r"already finished \(stop reason: max_steps\)"):
        canter.resume(tmp_path / "run")


def test_a_resumed_run_no_longer_says_it_finished_while_it_trains(tmp_path):
    """summary.json of a finished run said 'max_steps, 256 steps' all through a resume that extended it: a kill -9
    then left a run that trained on (its last resumable at a later step) which its summary called finished
    (measured: 'max_steps 2048' with last at 5120). Once the resumed run trains, it says 'interrupted' at the
    checkpoint's counters, as after a Ctrl-C there, until the run ends."""
    run_dir = tmp_path / "run"
    kw = dict(n_envs=2, n_steps=64, eval_episodes=1, eval_every=0, tensorboard=False, target_reward=None)
    canter.train("ppo", "CartPole-v1", run_dir=run_dir, max_steps=256, **kw)
    seen = []

    def read_summary(trainer, losses):
        seen.append(json.loads((run_dir / "summary.json").read_text()))

    canter.resume(run_dir, max_steps=512, hooks={"after_update": read_summary})
    assert (seen[0]["stop_reason"], seen[0]["steps"], seen[0]["resumes"]) == ("interrupted", 256, 1)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert (summary["stop_reason"], summary["steps"]) == ("max_steps", 512)
