"""canter benchmark: grids, tables and figures, resuming, Ctrl-C and bad specs, on a tiny budget."""
import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from canter.cli import main
from canter.errors import CanterError
from canter.tools.rundata import load_run


# -- benchmark ---------------------------------------------------------------------------------
GRID = """
seeds: 2
set: {max_steps: 128, eval_episodes: 1, eval_every: 0, checkpoint_every: 0, tensorboard: false}
envs: [CartPole-v1, MountainCar-v0]
algos:
  ppo:
    set: {n_envs: 2, n_steps: 64, n_epochs: 2}
  dqn:
    set: {learning_starts: 100, buffer_size: 5000, train_freq: 4, gradient_steps: 1, target_update_interval: 100}
"""


@pytest.mark.parametrize("jobs", ["1", pytest.param("2", marks=pytest.mark.slow)])
def test_benchmark_grid_table_figure_and_resume(tmp_path, capsys, jobs):
    """The grid run, its table, CSV and figure, and a rerun's reuse. With --jobs 2 (slow: each spawned worker
    imports torch); test_benchmark_jobs_never_hands_the_pool_more_runs_than_workers covers that scheduling."""
    spec = tmp_path / "grid.yaml"
    spec.write_text(GRID)
    out = tmp_path / "bench"
    assert main(["benchmark", str(spec), "--out", str(out), "--jobs", jobs]) == 0
    assert "[8/8]" in capsys.readouterr().out
    with open(out / "results.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert [(r["algo"], r["env"]) for r in rows] == [
        ("ppo", "CartPole-v1"), ("ppo", "MountainCar-v0"), ("dqn", "CartPole-v1"), ("dqn", "MountainCar-v0")]
    for r in rows:
        runs = [load_run(out / "runs" / f"{r['algo']}-{r['env']}-seed{s}") for s in (0, 1)]
        finals = [run.summary["last_eval_return"] for run in runs]
        assert r["seeds"] == "2" and float(r["steps"]) == 128
        assert float(r["final_median"]) == pytest.approx(np.median(finals))
        assert float(r["final_iqm_low"]) <= float(r["final_iqm"]) <= float(r["final_iqm_high"])
        assert all(run.summary["stop_reason"] == "max_steps" for run in runs)
    for r in rows[1::2]:
        assert float(r["final_median"]) == -200.0  # 128 steps cannot solve MountainCar
    table = (out / "results.md").read_text()
    assert sum(line.startswith("| ppo") or line.startswith("| dqn") for line in table.splitlines()) == 4
    assert (out / "benchmark.png").stat().st_size > 10_000
    # a second call reuses the finished runs
    assert main(["benchmark", str(spec), "--out", str(out)]) == 0
    assert "[1/8]" not in capsys.readouterr().out
    with open(out / "results.csv") as fh:
        assert list(csv.DictReader(fh)) == rows
    # ... but not when the file now asks for something else
    spec.write_text(GRID.replace("max_steps: 128", "max_steps: 1024"))
    assert main(["benchmark", str(spec), "--out", str(out)]) == 2
    assert "different 'max_steps'" in capsys.readouterr().err
    # an unfinished cell that another live process is training into is neither deleted nor rerun
    spec.write_text(GRID)
    cell = out / "runs" / "ppo-CartPole-v1-seed0"
    (cell / "summary.json").unlink()
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        (cell / ".canter.lock").write_text(json.dumps({"pid": holder.pid, "token": "theirs"}))
        assert main(["benchmark", str(spec), "--out", str(out)]) == 2
        assert f"being written by process {holder.pid}" in capsys.readouterr().err
        assert (cell / "history.parquet").exists() and not (cell / "summary.json").exists()
    finally:
        holder.kill()
        holder.wait()
    assert main(["benchmark", str(spec), "--out", str(out)]) == 0  # its process is gone: the cell runs again
    assert (cell / "summary.json").exists() and not (cell / ".canter.lock").exists()


def test_benchmark_ctrl_c_stops_it_and_writes_no_results(tmp_path, capsys):
    """Ctrl-C stops the run under way (saved as interrupted, as canter train does) and the benchmark:
    the other runs do not start and no results table is written; run again, it continues."""
    import os
    import signal

    spec = tmp_path / "b.yaml"
    spec.write_text("seeds: 2\nset: {max_steps: 10000000, max_seconds: 4, eval_every: 0, n_envs: 2, n_steps: 64, "
                    "n_epochs: 1, tensorboard: false}\nenvs: [CartPole-v1]\nalgos: [ppo]\n")
    out = tmp_path / "out"
    old = signal.signal(signal.SIGALRM, lambda signum, frame: os.kill(os.getpid(), signal.SIGINT))
    signal.setitimer(signal.ITIMER_REAL, 1.5)  # a Ctrl-C 1.5 s in: during the first run
    try:
        assert main(["benchmark", str(spec), "--out", str(out)]) == 130
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert sorted(p.name for p in (out / "runs").iterdir()) == ["ppo-CartPole-v1-seed0"]
    assert json.loads((out / "runs" / "ppo-CartPole-v1-seed0" / "summary.json").read_text())["stop_reason"] == \
        "interrupted"
    assert not (out / "results.md").exists() and not (out / "results.csv").exists()
    assert "run the same command again" in capsys.readouterr().err


@pytest.mark.slow
def test_benchmark_jobs_ctrl_c_starts_no_further_run(tmp_path):
    """With --jobs, Ctrl-C (to the whole process group, as a terminal sends it) stops the running runs
    and starts no other: the pool is never handed more runs than it has workers. Slow (~6 s: a canter process
    and two spawned workers import torch); test_benchmark_jobs_never_hands_the_pool_more_runs_than_workers
    checks the same scheduling in-process."""
    import os
    import signal
    import time

    spec = tmp_path / "b.yaml"
    spec.write_text("seeds: 3\nset: {max_steps: 10000000, max_seconds: 40, eval_every: 0, n_envs: 2, n_steps: 64, "
                    "n_epochs: 1, tensorboard: false, target_reward: null}\nenvs: [CartPole-v1]\nalgos: [ppo]\n")
    out = tmp_path / "out"
    runs = [out / "runs" / f"ppo-CartPole-v1-seed{s}" for s in range(3)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, "-m", "canter", "benchmark", str(spec), "--out", str(out), "--jobs", "2",
                             "--quiet"], start_new_session=True, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 60
        while not all((r / "config.yaml").exists() for r in runs[:2]):  # both workers are training
            assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
            time.sleep(0.2)
        time.sleep(1.0)
        started = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    assert time.monotonic() - started < 30  # no 40-second run started after the Ctrl-C
    assert not runs[2].exists()
    for r in runs[:2]:
        assert json.loads((r / "summary.json").read_text())["stop_reason"] == "interrupted"


def test_benchmark_jobs_never_hands_the_pool_more_runs_than_workers(monkeypatch, capsys):
    """--jobs's scheduling (_execute) with a thread pool in place of the spawned processes (whose start, a torch
    import each, makes the --jobs tests slow) and a stand-in for run_cell: at most `jobs` runs are in the pool at a time, each with one torch thread (OMP_NUM_THREADS 1,
    put back after), every run is reported; an interrupted run (Ctrl-C) stops the benchmark and no
    further run is handed to the pool."""
    import concurrent.futures
    import os
    import pickle
    import threading
    import time

    from canter.tools import benchmark as bm

    cell = bm.Cell("ppo", "CartPole-v1", 0, {"n_steps": 64})  # what a spawned worker is sent: it pickles
    assert pickle.loads(pickle.dumps((bm.run_cell, cell))) == (bm.run_cell, cell)
    submitted, lock = [], threading.Lock()

    class ThreadPool(concurrent.futures.ThreadPoolExecutor):
        def __init__(self, max_workers, mp_context):
            assert mp_context.get_start_method() == "spawn"
            super().__init__(max_workers)
            self.jobs, self.futures = max_workers, []

        def submit(self, fn, cell, *args):
            assert sum(not f.done() for f in self.futures) < self.jobs  # a free worker for each run handed over
            submitted.append(cell.seed)
            self.futures.append(super().submit(fn, cell, *args))
            return self.futures[-1]

    def run_cell(cell, run_dir, threads):
        assert threads == 1 and os.environ["OMP_NUM_THREADS"] == "1"
        time.sleep(0.02 * (cell.seed % 3))  # runs finish out of order
        with lock:
            stop = "interrupted" if cell.seed == interrupted else "max_steps"
        return {"stop_reason": stop, "steps": 64, "last_eval_return": 1.0, "wall_seconds": 0.1}

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", ThreadPool)
    monkeypatch.setattr(bm, "run_cell", run_cell)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    cells = [bm.Cell("ppo", "CartPole-v1", seed, {}) for seed in range(5)]
    interrupted = None
    bm._execute(cells, Path("unused"), 2, False, 0, 5)
    assert sorted(submitted) == list(range(5)) and "OMP_NUM_THREADS" not in os.environ
    out = capsys.readouterr().out
    assert sorted(out.count(f"[{k}/5]") for k in range(1, 6)) == [1] * 5
    submitted.clear()
    interrupted = 0  # the first run is stopped by Ctrl-C (it finishes first) while the second is still running
    with pytest.raises(KeyboardInterrupt):
        bm._execute(cells, Path("unused"), 2, True, 0, 5)
    assert submitted == [0, 1] and "OMP_NUM_THREADS" not in os.environ
    assert "ppo CartPole-v1 seed 0: interrupted at 64 steps" in capsys.readouterr().out


def test_a_diverging_benchmark_run_is_a_result_not_the_end_of_the_benchmark(tmp_path):
    """A run the divergence guard stopped ended the whole benchmark with exit 2 (the grid's other runs never
    ran), while running the same command again reused that run as finished and wrote the table."""
    from canter.tools.benchmark import Cell, run_cell

    cell = Cell("dqn", "CartPole-v1", 0, {"lr": 1e30, "learning_starts": 32, "train_freq": 4, "buffer_size": 500,
                                          "n_envs": 1, "max_steps": 400, "eval_every": 0, "tensorboard": False})
    summary = run_cell(cell, str(tmp_path / cell.name), None)
    assert summary["stop_reason"] == "diverged" and "training diverged at step" in summary["diverged"]


def test_benchmark_jobs_worker_errors_reach_the_parent_as_they_are():
    """A --jobs worker's error is pickled to the parent: TrainingDiverged (a run diverging) and MissingExtraError
    could not be unpickled (their __init__ takes more than the message), so the parent got BrokenProcessPool
    and a traceback (exit 1) instead of the one-line error that --jobs 1 gives."""
    import pickle

    from canter.errors import MissingExtraError
    from canter.trainers.guard import TrainingDiverged

    for err in (TrainingDiverged("training diverged at step 80: non-finite loss", "loss", 80),
                MissingExtraError("--record-every", "video", "moviepy")):
        back = pickle.loads(pickle.dumps(err))
        assert type(back) is type(err) and str(back) == str(err) and vars(back) == vars(err)


def test_benchmark_bad_spec_is_refused_before_running(tmp_path, capsys):
    spec = tmp_path / "bad.yaml"
    for text, message in [("algos: [ppo, dqnn]\nenvs: [CartPole-v1]", "did you mean 'dqn'"),
                          ("algos: [dqn]\nenvs: [Pendulum-v1]", "Discrete action space"),
                          ("algos: [ppo]\nenvs: [CartPole-v1]\nseed: 3", "did you mean 'seeds'"),
                          ("algos: [ppo]\nenvs: [CartPole-v1]\nset: {lrr: 0.1}", "did you mean 'lr'"),
                          # these three were TypeError tracebacks (exit 1): env / algo reached resolve_config twice
                          ("algos: [ppo]\nenvs: [CartPole-v1]\nset: {env: Acrobot-v1}", "'env' cannot be set here"),
                          ("algos: {ppo: {set: {algo: dqn}}}\nenvs: [CartPole-v1]", "'algo' cannot be set here"),
                          ("algos: [ppo]\nenvs: [CartPole-v1]\nset: {hparams: 5}", "'hparams' must be a mapping"),
                          ("algos: [ppo]", "no envs"),
                          ("seeds: 1.5\nalgos: [ppo]\nenvs: [CartPole-v1]", "'seeds' must be a count >= 1")]:
        spec.write_text(text)
        assert main(["benchmark", str(spec), "--out", str(tmp_path / "out")]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_benchmark_seeds_in_exponent_form_are_whole_numbers_as_in_a_config_file(tmp_path):
    """``seeds: 1e1`` (a float in YAML, as ``max_steps: 1e6`` is in a config file, which takes it) was refused."""
    from canter.tools.benchmark import load_spec

    spec = tmp_path / "b.yaml"
    for seeds, expected in [("1e1", list(range(10))), ("[0, 1e0, 2.0e1]", [0, 1, 20]), ("2", [0, 1])]:
        spec.write_text(f"seeds: {seeds}\nalgos: [ppo]\nenvs: [CartPole-v1]\n")
        got = [c.seed for c in load_spec(spec)]
        assert got == expected and all(type(s) is int for s in got)
    for seeds in ("1.5", "[0, 1.5]", "0", "[-1e0]", "true"):
        spec.write_text(f"seeds: {seeds}\nalgos: [ppo]\nenvs: [CartPole-v1]\n")
        with pytest.raises(CanterError, match=r"^.*b\.yaml: 'seeds' must be a count >= 1 or a list of seeds >= 0, got"):
            load_spec(spec)


def test_benchmark_refuses_more_than_max_seeds_in_one_line(tmp_path, capsys):
    """A huge count was an OverflowError traceback (1e300, 10**30: range() past ssize_t) or built a grid of a
    billion cells (1e9); more than MAX_SEEDS seeds are now refused in one line (exit 2), as is a longer list."""
    from canter.tools.benchmark import MAX_SEEDS, load_spec

    spec = tmp_path / "b.yaml"
    for seeds, shown in [("1e300", "1e+300"), (str(10**30), str(10**30)), ("1e9", "1e+09"),
                         (str(MAX_SEEDS + 1), str(MAX_SEEDS + 1)), (str(list(range(MAX_SEEDS + 1))), "a list of 1001 seeds")]:
        spec.write_text(f"seeds: {seeds}\nalgos: [ppo]\nenvs: [CartPole-v1]\n")
        assert main(["benchmark", str(spec), "--out", str(tmp_path / "out")]) == 2
        err = capsys.readouterr().err
        assert err == f"canter: error: {spec}: 'seeds' must be at most {MAX_SEEDS} seeds (runs per algorithm and env), " \
                      f"got {shown}\n"
    assert not (tmp_path / "out").exists()
    spec.write_text(f"seeds: {MAX_SEEDS}\nalgos: [ppo]\nenvs: [CartPole-v1]\n")
    assert [c.seed for c in load_spec(spec)] == list(range(MAX_SEEDS))


def test_benchmark_refuses_a_hyperparameter_given_twice_in_one_set(tmp_path):
    """set: {lr: 0.1, hparams: {lr: 0.2}} ran every cell with lr 0.2 (the last spelling), dropping 0.1 silently."""
    from canter.tools.benchmark import load_spec

    spec = tmp_path / "b.yaml"
    spec.write_text("algos: [ppo]\nenvs: [CartPole-v1]\nset: {lr: 0.1, hparams: {lr: 0.2}}\n")
    with pytest.raises(CanterError, match=r"set: 'lr' and 'hparams: \{lr: ...\}' both set 'lr'; give it once"):
        load_spec(spec)
    spec.write_text("algos: {ppo: {set: {hparams.gamma: 0.9, gamma: 0.8}}}\nenvs: [CartPole-v1]\n")
    with pytest.raises(CanterError, match="'hparams.gamma' and 'gamma' both set 'gamma'"):
        load_spec(spec)
    spec.write_text("algos: {ppo: {set: {lr: 0.2}}}\nenvs: [CartPole-v1]\nset: {lr: 0.1}\n")  # layers override
    assert load_spec(spec)[0].overrides == {"lr": 0.2}


@pytest.mark.parametrize("name, content", [("summary.json", b"[1, 2]"), ("summary.json", b"\xff\xfe"),
                                           ("summary.json", b"{\"stop_reason\": "), ("config.yaml", b"- a\n- b\n"),
                                           ("config.yaml", b"algo: ppo\nenv: [CartPole\n")],
                         ids=["summary-list", "summary-binary", "summary-bad-json", "config-list", "config-bad-yaml"])
def test_benchmark_refuses_a_damaged_run_file_and_keeps_the_run(tmp_path, capsys, name, content):
    """A damaged summary.json of a grid run: a list or non-UTF-8 bytes were an AttributeError /
    UnicodeDecodeError traceback; bad JSON counted as unfinished, so the run directory was deleted and rerun.
    A finished run's damaged config.yaml (checked against the file) was an AttributeError / YAMLError traceback."""
    spec = tmp_path / "b.yaml"
    spec.write_text("seeds: 1\nalgos: [ppo]\nenvs: [CartPole-v1]\nset: {max_steps: 64}\n")
    run = tmp_path / "out" / "runs" / "ppo-CartPole-v1-seed0"
    run.mkdir(parents=True)
    (run / "summary.json").write_text(json.dumps({"stop_reason": "max_steps"}))
    (run / name).write_bytes(content)
    before = {p.name: p.read_bytes() for p in run.iterdir()}
    assert main(["benchmark", str(spec), "--out", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert name in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert {p.name: p.read_bytes() for p in run.iterdir()} == before


def test_shipped_classic_benchmark_is_valid():
    from pathlib import Path

    from canter.registry import lookup, names
    from canter.tools.benchmark import check_cells, load_spec

    cells = load_spec(Path(__file__).parent.parent / "benchmarks" / "classic.yaml")
    check_cells(cells)
    # every algorithm that learns from a classic-control env is covered (offline ones need a dataset,
    # which a shipped spec cannot assume; multi-agent ones, QMIX and MAPPO, need a multi-agent env)
    online = {n for n in names("algorithm") if lookup("algorithm", n).family != "offline"
              and not lookup("algorithm", n).multiagent_only}
    assert {c.algo for c in cells} == online


def test_a_run_that_never_evaluated_has_no_final_return_not_its_training_return(tmp_path):
    """A run that diverged before its first evaluation was given its rolling training return (stochastic actions,
    training episodes) as its 'final return' in results.md and results.csv, beside the other seeds' evaluation
    returns, while its progress line said 'final eval return n/a' (measured: PPO Pendulum lr 3.0, diverged at step
    1,536 after 6 episodes, row -1,416.7). It is n/a now, and left out of the statistics over seeds."""
    from canter.logging.history import HISTORY_COLUMNS, EVALUATION_COLUMNS, write_parquet
    from canter.tools.benchmark import Cell, table_rows

    cells = [Cell("ppo", "Pendulum-v1", seed, {}) for seed in (0, 1)]
    for cell, last_eval in zip(cells, (-150.0, None)):
        run = tmp_path / cell.name
        run.mkdir()
        (run / "config.yaml").write_text("algo: ppo\nenv: Pendulum-v1\ntarget_reward: -200\n")
        (run / "summary.json").write_text(json.dumps({
            "steps": 1536, "episodes": 6, "updates": 3, "wall_seconds": 1.0, "last_eval_return": last_eval,
            "stop_reason": "max_steps" if last_eval is not None else "diverged"}))
        write_parquet(run / "history.parquet", [{"step": 1536, "wall_time": 1.0, "episode_return": -1416.7,
                                                 "episode_length": 200, "rolling_return": -1416.7}], HISTORY_COLUMNS)
        rows = [] if last_eval is None else [{"step": 1536, "wall_time": 1.0, "mean_return": last_eval,
                                              "std_return": 0.0, "episodes": 2}]
        write_parquet(run / "evaluations.parquet", rows, EVALUATION_COLUMNS)
    assert load_run(tmp_path / cells[1].name).final_return() is None
    (row,) = table_rows(cells, tmp_path)
    assert row["seeds"] == 2 and row["scored"] == 1 and row["final_median"] == row["final_iqm"] == -150.0


def test_results_say_over_how_many_seeds_the_statistics_are_when_a_run_has_no_final_return():
    """A run without a final return (diverged before its first evaluation) is left out of the median, quartiles and
    IQM, but results.md and results.csv gave only 'seeds 3', as if the IQM and its CI were over all three."""
    from canter.tools.benchmark import to_csv, to_markdown

    row = {"algo": "ppo", "env": "Pendulum-v1", "seeds": 3, "scored": 2, "final_median": -150.0, "final_q25": -160.0,
           "final_q75": -140.0, "final_iqm": -150.0, "final_iqm_low": -160.0, "final_iqm_high": -140.0, "solved": 2,
           "target_reward": -200.0, "steps": 1e4, "wall_seconds": 1.0, "steps_per_second": 1e4}
    meta = {"file": "x.yaml", "jobs": 1, "seconds": 1.0}
    assert "| ppo | Pendulum-v1 | 3 (2 with a final return) | -150.0 [" in to_markdown([row], meta)
    assert "| ppo | Pendulum-v1 | 3 | -150.0 [" in to_markdown([{**row, "scored": 3}], meta)
    assert to_csv([row]).splitlines()[0].startswith("algo,env,seeds,scored,")


def test_results_md_shows_a_fractional_target_and_small_returns_as_they_are():
    """results.md rounded the target to a whole number and returns to one decimal: FrozenLake's target 0.75 read
    '1' (and -0.4 read '0'), so a row solved 3/3 showed a median of '0.8 [0.7, 0.8]' under a target of '1'."""
    from canter.tools.benchmark import to_markdown

    row = {"algo": "ppo", "env": "FrozenLake-v1", "seeds": 3, "final_median": 0.76, "final_q25": 0.755,
           "final_q75": 0.8, "final_iqm": 0.76, "final_iqm_low": 0.75, "final_iqm_high": 0.8, "solved": 3,
           "target_reward": 0.75, "steps": 1e5, "wall_seconds": 10.0, "steps_per_second": 1e4}
    big = {**row, "final_median": 475.25, "final_q25": 470.0, "final_q75": 500.0, "final_iqm": 480.04,
           "final_iqm_low": 470.0, "final_iqm_high": 500.0, "target_reward": 475.0}
    lines = to_markdown([row, {**row, "target_reward": -0.4, "solved": 0}, big],
                        {"file": "x.yaml", "jobs": 1, "seconds": 1.0}).splitlines()
    assert "| 0.76 [0.755, 0.8] | 0.76 [0.75, 0.8] | 3/3 | 0.75 |" in lines[-3]
    assert "| 0/3 | -0.4 |" in lines[-2]
    assert "| 475.2 [470.0, 500.0] | 480.0 [470.0, 500.0] | 3/3 | 475 |" in lines[-1]  # as before


def test_benchmark_refuses_an_out_holding_results_files_it_did_not_write(tmp_path, capsys):
    """--out DIR overwrote a results.md, results.csv or benchmark.png of one's own in DIR (--out . in a project)
    without a word; they are refused in one line before anything runs, and a benchmark's own are replaced."""
    spec = tmp_path / "grid.yaml"
    spec.write_text("seeds: 1\nset: {max_steps: 64, n_envs: 2, n_steps: 32, eval_episodes: 1, eval_every: 0, "
                    "checkpoint_every: 0, tensorboard: false}\nenvs: [CartPole-v1]\nalgos: [ppo]\n")
    out = tmp_path / "mine"
    out.mkdir()
    for name, text in [("results.csv", "my,data\n"), ("results.md", "# My notes\n")]:
        (out / name).write_text(text)
        assert main(["benchmark", str(spec), "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "which canter benchmark did not write" in err
        assert (out / name).read_text() == text and not (out / "runs").exists()
        (out / name).unlink()
    assert main(["benchmark", str(spec), "--out", str(out)]) == 0
    assert main(["benchmark", str(spec), "--out", str(out)]) == 0  # its own results: replaced
    assert (out / "results.md").read_text().startswith("# Benchmark: ")
    assert main(["benchmark", str(spec), "--out", str(spec)]) == 2
    assert "is a file, not a directory" in capsys.readouterr().err


def test_benchmark_never_deletes_a_folder_that_is_not_a_run_named_as_one_of_its_runs(tmp_path, capsys):
    """An unfinished run is deleted and run again; OUT/runs/ppo-CartPole-v1-seed0 holding files of one's own (no
    config.yaml) was deleted the same way, without a word."""
    spec = tmp_path / "grid.yaml"
    spec.write_text("seeds: 1\nset: {max_steps: 64, n_envs: 2, n_steps: 32, eval_episodes: 1, eval_every: 0, "
                    "checkpoint_every: 0, tensorboard: false}\nenvs: [CartPole-v1]\nalgos: [ppo]\n")
    mine = tmp_path / "out" / "runs" / "ppo-CartPole-v1-seed0"
    mine.mkdir(parents=True)
    (mine / "notes.txt").write_text("precious")
    assert main(["benchmark", str(spec), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a canter run directory" in err
    assert (mine / "notes.txt").read_text() == "precious"
