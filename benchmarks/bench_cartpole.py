#!/usr/bin/env python
"""canter vs Stable-Baselines3 on CartPole-v1 (PPO and DQN), side by side on one machine.

Every measurement runs in its own fresh Python subprocess (this same script in ``--worker``
mode), never two running at once, with ``torch.set_num_threads(1)`` in both libraries and the
same seed (plus DQN at 2 threads in both: canter's default for its 256-unit layers, and SB3's
other candidate; that row compares with SB3's faster setting). The throughput runs of one
task start together and take turns on the machine (:mod:`_interleave`), so that both libraries
are measured in the same minutes of this shared host; the others run one after another. See
benchmarks/README.md for what each column means.

    python benchmarks/bench_cartpole.py --quick                  # smoke check (tiny budgets)
    python benchmarks/bench_cartpole.py --seeds 1 --out benchmarks/RESULTS.md
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import (BenchParser, check_section_markers, one_line_errors, real_transitions, require_sb3,
                     run_dir_transitions,
                     sb3_progress_callback, sb3_timed_learn, seed_int, tagged_json, timed_loop, write_section)
from _cartpole_report import build_report
from _interleave import ProgressReporter, results_in_turns
from _report import cpu_model, loadavg, versions

# Only the standard library is imported at module level: the workers time their own imports.

ENV_ID = "CartPole-v1"
TARGET = 475.0
EVAL_EPISODES = 10
EVAL_ENVS = 5  # canter's default eval_envs; SB3's eval VecEnv gets the same number of copies
RESULT_TAG = "BENCH_RESULT "

#: canter's default thread count for DQN's 256-unit layers on 4+ CPUs (canter.algorithms.base.threads_for; the run gives
#: them to OpenBLAS, which multiplies in DQN's hand-derived update, and keeps torch at one)
DQN_DEFAULT_THREADS = 2

# rl-zoo3's CartPole-v1 hyperparameters (identical in both libraries).
PPO = dict(n_envs=8, n_steps=32, batch_size=256, n_epochs=20, gamma=0.98, gae_lambda=0.8, ent_coef=0.0,
           lr=1e-3, clip_range=0.2, max_steps=100_000, eval_every=8192)
DQN = dict(n_envs=1, lr=2.3e-3, batch_size=64, buffer_size=100_000, learning_starts=1000, gamma=0.99,
           target_update_interval=10, train_freq=256, gradient_steps=128, exploration_fraction=0.16,
           exploration_final_eps=0.04, net_arch=[256, 256], max_steps=50_000, eval_every=5000)


# ----------------------------------------------------------------------------------------------
# workers (run in a fresh subprocess; print one RESULT_TAG line of JSON)
# ----------------------------------------------------------------------------------------------
def _emit(result: dict) -> None:
    print(RESULT_TAG + json.dumps(result), flush=True)


def _canter_trainer(algo: str, cfg: dict, seed: int, with_target: bool, threads: int):
    import canter

    common = dict(seed=seed, max_steps=cfg["max_steps"], n_envs=cfg["n_envs"], torch_threads=threads,
                  eval_episodes=EVAL_EPISODES, eval_envs=EVAL_ENVS)
    if with_target:
        common.update(eval_every=cfg["eval_every"], target_reward=TARGET)
        sets = []
    else:
        # make_trainer drops keyword overrides that are None, so target_reward=None would keep the
        # preset's 475; ``--set target_reward=null`` really clears it.
        common.update(eval_every=0)
        sets = ["target_reward=null"]
    if algo == "ppo":
        hp = dict(n_steps=cfg["n_steps"], batch_size=cfg["batch_size"], n_epochs=cfg["n_epochs"],
                  gamma=cfg["gamma"], gae_lambda=cfg["gae_lambda"], ent_coef=cfg["ent_coef"], lr=cfg["lr"],
                  lr_schedule="linear", clip_range=cfg["clip_range"], clip_schedule="linear",
                  net_arch=[64, 64], activation="tanh", ortho_init=True, shared_trunk=False)
    else:
        hp = {k: cfg[k] for k in ("lr", "batch_size", "buffer_size", "learning_starts", "gamma",
                                  "target_update_interval", "train_freq", "gradient_steps",
                                  "exploration_fraction", "exploration_final_eps", "net_arch")}
    trainer = canter.make_trainer(algo, ENV_ID, sets=sets, hparams=hp, **common)
    assert trainer.run.torch_threads == threads
    assert (trainer.run.target_reward is None) != with_target, trainer.run.target_reward
    return trainer


def _sb3_model(algo: str, cfg: dict, seed: int):
    from stable_baselines3 import DQN as SB3DQN
    from stable_baselines3 import PPO as SB3PPO
    from stable_baselines3.common.env_util import make_vec_env

    env = make_vec_env(ENV_ID, n_envs=cfg["n_envs"], seed=seed)  # DummyVecEnv, SB3's standard
    if algo == "ppo":
        lr0, clip0 = cfg["lr"], cfg["clip_range"]
        return SB3PPO(
            "MlpPolicy", env, n_steps=cfg["n_steps"], batch_size=cfg["batch_size"], n_epochs=cfg["n_epochs"],
            gamma=cfg["gamma"], gae_lambda=cfg["gae_lambda"], ent_coef=cfg["ent_coef"],
            learning_rate=lambda progress_remaining: progress_remaining * lr0,
            clip_range=lambda progress_remaining: progress_remaining * clip0,
            seed=seed, device="cpu", verbose=0,
        )
    return SB3DQN(
        "MlpPolicy", env, learning_rate=cfg["lr"], batch_size=cfg["batch_size"], buffer_size=cfg["buffer_size"],
        learning_starts=cfg["learning_starts"], gamma=cfg["gamma"],
        target_update_interval=cfg["target_update_interval"], train_freq=cfg["train_freq"],
        gradient_steps=cfg["gradient_steps"], exploration_fraction=cfg["exploration_fraction"],
        exploration_final_eps=cfg["exploration_final_eps"], policy_kwargs=dict(net_arch=cfg["net_arch"]),
        seed=seed, device="cpu", verbose=0,
    )


def _sb3_eval_callback(cfg: dict, seed: int):
    from stable_baselines3.common.callbacks import BaseCallback, EvalCallback, StopTrainingOnRewardThreshold
    from stable_baselines3.common.env_util import make_vec_env

    class CountEvaluations(BaseCallback):
        def _on_step(self) -> bool:
            return True  # n_calls = number of evaluations

    eval_env = make_vec_env(ENV_ID, n_envs=EVAL_ENVS, seed=seed + 1_000_003)
    stop = StopTrainingOnRewardThreshold(reward_threshold=TARGET, verbose=0)
    # eval_freq counts VecEnv.step calls, so divide the env-step interval by n_envs
    return EvalCallback(eval_env, callback_on_new_best=stop, callback_after_eval=CountEvaluations(),
                        n_eval_episodes=EVAL_EPISODES, eval_freq=max(1, cfg["eval_every"] // cfg["n_envs"]),
                        deterministic=True, verbose=0)


def _sb3_evaluations(callback, best: float | None) -> int:
    # EvalCallback skips callback_after_eval once StopTrainingOnRewardThreshold has said stop,
    # so the evaluation that reached the target is not in the counter.
    return callback.callback.n_calls + int(best is not None and best >= TARGET)


def worker(lib: str, task: str, seed: int, cfg: dict, launch: float, threads: int = 1) -> None:
    """One measurement. ``launch`` is the parent's time.time() just before it started this process."""
    t_script = time.time()  # interpreter is up, nothing heavy imported yet
    progress = ProgressReporter()  # the fraction of the budget done, for interleaved runs (else a no-op)
    import torch

    if lib == "canter":
        import canter  # noqa: F401
    else:
        import stable_baselines3  # noqa: F401
    torch.set_num_threads(threads)
    t_imported = time.time()
    algo, mode = task.split("-")  # ppo-sps, ppo-t2t, dqn-sps, dqn-t2t, ppo-e2e
    res: dict = {"lib": lib, "task": task, "seed": seed, "startup_s": t_script - launch,
                 "import_s": t_imported - t_script}

    if lib == "canter":
        from canter.models.linear import blas_pool_threads

        trainer = _canter_trainer(algo, cfg, seed, with_target=mode != "sps", threads=threads)
        timed = timed_loop(trainer, progress.update)  # evaluations timed, then subtracted
        last = timed.pop("last")
        res.update(steps=trainer.step, transitions=real_transitions(trainer), **timed, evaluations=trainer.evaluations,
                   best_eval=trainer.best_eval_return, stop_reason=last.stop_reason,
                   threads=torch.get_num_threads(), blas_threads=blas_pool_threads())
        trainer.env.close()
        trainer.eval_env.close()
    else:
        sps = mode == "sps"
        callback = sb3_progress_callback(progress.update, cfg["max_steps"]) if sps else _sb3_eval_callback(cfg, seed)
        model = _sb3_model(algo, cfg, seed)
        timed = sb3_timed_learn(model, cfg["max_steps"], callback)
        best = None if sps or callback.best_mean_reward == float("-inf") else callback.best_mean_reward
        callback = None if sps else callback
        res.update(steps=int(model.num_timesteps), **timed, eval_s=None, eval_mono=[],
                   evaluations=None if callback is None else _sb3_evaluations(callback, best),
                   best_eval=None if best is None else float(best), threads=torch.get_num_threads())
    t_end = time.time()
    res["train_call_s"] = t_end - t_imported  # build envs + model, then train
    res["total_s"] = t_end - launch  # process start -> end of the training call
    res["solved"] = res["best_eval"] is not None and res["best_eval"] >= TARGET
    if mode == "sps":
        # canter evaluates once after the budget even with eval_every=0; that time is subtracted
        res["train_only_s"] = res["loop_s"] - (res["eval_s"] or 0.0)
        # env steps that were transitions (canter: less its reset-only steps; SB3: every step)
        res["sps"] = res.get("transitions", res["steps"]) / res["train_only_s"]
    _emit(res)


# ----------------------------------------------------------------------------------------------
# orchestration
# ----------------------------------------------------------------------------------------------
def _child_env() -> dict[str, str]:
    """The environment for measured processes: bytecode caching on, as after ``pip install``
    (both libraries then start from compiled ``.pyc`` files; an editable checkout run with
    PYTHONDONTWRITEBYTECODE=1 would recompile canter's sources in every process)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _run(cmd: list[str], timeout: float = 1800) -> tuple[float, subprocess.CompletedProcess]:
    launch = time.time()
    t0 = time.perf_counter()
    proc = subprocess.run(cmd + ["--launch", repr(launch)] if "--worker" in cmd else cmd,
                          capture_output=True, text=True, timeout=timeout, env=_child_env())
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"command failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-3000:]}")
    return wall, proc


def _worker_cmd(lib: str, task: str, seed: int, cfg: dict, threads: int = 1) -> list[str]:
    return [sys.executable, os.path.abspath(__file__), "--worker", lib, task, "--seed", str(seed),
            "--cfg", json.dumps(cfg), "--threads", str(threads)]


def run_worker(lib: str, task: str, seed: int, cfg: dict, threads: int = 1) -> dict:
    """Run one worker task in a fresh subprocess; its result line plus the process's wall seconds."""
    wall, proc = _run(_worker_cmd(lib, task, seed, cfg, threads))
    res = tagged_json(proc.stdout, RESULT_TAG)
    res["process_wall_s"] = wall
    return res


def run_throughput(members: list[tuple[str, int]], task: str, seed: int, cfg: dict) -> list[dict]:
    """Throughput of each ``(lib, threads)`` member on ``task`` (``ppo-sps`` / ``dqn-sps``), all
    measured in the same minutes by running them in turns (:mod:`_interleave`): env steps (canter:
    transitions) per second the training loop ran, its evaluation left out."""
    launch = time.time()
    results = results_in_turns([_worker_cmd(lib, task, seed, cfg, threads) + ["--launch", repr(launch)]
                                for lib, threads in members], RESULT_TAG)
    for res in results:
        res["wall_sps"] = res.pop("sps")  # its loop's wall clock also ran while it was held stopped
        res["train_only_s"] = res.pop("active_s")
        res["sps"] = res.get("transitions", res["steps"]) / res["train_only_s"]
    return results


def canter_command() -> list[str]:
    """The installed ``canter`` console script next to this interpreter (not a pyenv/asdf shim,
    whose own start-up would be charged to canter), else ``python -m canter``."""
    exe = Path(sys.executable).parent / "canter"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "canter"]


def run_e2e(lib: str, seed: int, cfg: dict, quick: bool) -> dict:
    """Whole process, Python start-up included: canter's CLI preset vs an SB3 script with rl-zoo3's preset."""
    if lib == "sb3":
        res = run_worker("sb3", "ppo-e2e", seed, cfg)
        res["e2e_s"] = res["process_wall_s"]
        return res
    with tempfile.TemporaryDirectory(prefix="bench-canter-") as tmp:
        run_dir = Path(tmp) / "run"
        cmd = canter_command() + ["train", "ppo", "--env", ENV_ID, "--target-reward", str(int(TARGET)), "--quiet",
                                  "--run-dir", str(run_dir), "--seed", str(seed)]
        if quick:
            cmd += ["--max-steps", str(cfg["max_steps"]), "--eval-every", str(cfg["eval_every"])]
        wall, _ = _run(cmd)
        summary = json.loads((run_dir / "summary.json").read_text())
        transitions = run_dir_transitions(run_dir)  # as SB3 counts its steps
    return {"lib": "canter", "task": "ppo-e2e", "seed": seed, "e2e_s": wall, "steps": summary["steps"],
            "transitions": transitions,
            "best_eval": summary["best_eval_return"], "solved": bool(summary["solved"]),
            "command": " ".join(["canter"] + cmd[len(canter_command()):]).replace(str(run_dir), "<tmp>")}


@one_line_errors
def main(argv: list[str] | None = None) -> int:
    """Command line: run the tasks over ``--seeds`` and print (or write) the report."""
    p = BenchParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", type=seed_int, nargs="+", default=[1], help="seeds (median and spread over them)")
    p.add_argument("--quick", action="store_true", help="tiny budgets, for checking that the script runs")
    p.add_argument("--out", help="write the markdown report here (e.g. benchmarks/RESULTS.md)")
    p.add_argument("--only", nargs="+", choices=("ppo-sps", "ppo-t2t", "dqn-sps", "dqn-t2t", "ppo-e2e"),
                   help=argparse.SUPPRESS)
    # internal: worker mode
    p.add_argument("--worker", nargs=2, metavar=("LIB", "TASK"), help=argparse.SUPPRESS)
    p.add_argument("--seed", type=seed_int, default=1, help=argparse.SUPPRESS)
    p.add_argument("--cfg", help=argparse.SUPPRESS)
    p.add_argument("--launch", type=float, help=argparse.SUPPRESS)
    p.add_argument("--threads", type=int, default=1, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    require_sb3()

    if args.worker:
        lib, task = args.worker
        cfg = json.loads(args.cfg) if args.cfg else (PPO if task.startswith("ppo") else DQN)
        worker(lib, task, args.seed, cfg, args.launch if args.launch is not None else time.time(), args.threads)
        return 0

    # compile canter's (possibly editable) sources once, as pip does at install time
    import importlib.util

    pkg_dir = importlib.util.find_spec("canter").submodule_search_locations[0]
    subprocess.run([sys.executable, "-m", "compileall", "-q", pkg_dir], check=True, env=_child_env())
    ppo_cfg, dqn_cfg = dict(PPO), dict(DQN)
    if args.quick:
        ppo_cfg.update(max_steps=2048, eval_every=1024)
        dqn_cfg.update(max_steps=2048, eval_every=1024)
    R: dict = {"ppo_cfg": ppo_cfg, "dqn_cfg": dqn_cfg}
    meta = {"date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"), "cpu": cpu_model(),
            "load_before": loadavg(), "versions": versions(),
            "command": "python benchmarks/bench_cartpole.py " + " ".join(
                (["--quick"] if args.quick else []) + ["--seeds", *map(str, args.seeds)]
                + (["--out", args.out] if args.out else []))}
    if args.out and not args.only:  # before the runs: a file whose section cannot be written is refused now
        check_section_markers(args.out, START, END)
    start = time.perf_counter()
    # (task, lib, threads): every measurement at one torch thread, plus DQN at 2 threads in both libraries
    # (canter's default for 256-unit layers, canter.algorithms.base.threads_for; SB3's other candidate)
    # throughput: the members of a task in turns, in one stretch of time; the rest one after another
    tasks = [("ppo-sps", [("canter", 1), ("sb3", 1)])]
    tasks += [(task, [(lib, 1)]) for task in ("ppo-t2t",) for lib in ("canter", "sb3")]
    tasks += [("dqn-sps", [("canter", 1), ("canter", DQN_DEFAULT_THREADS), ("sb3", 1), ("sb3", DQN_DEFAULT_THREADS)])]
    tasks += [(task, [(lib, 1)]) for task in ("dqn-t2t", "ppo-e2e") for lib in ("canter", "sb3")]
    for seed in args.seeds:
        for task, members in tasks:
            keys = [(lib, task if threads == 1 else f"{task}-t{threads}") for lib, threads in members]
            for key in keys:
                R.setdefault(key, [])
            if args.only and task not in args.only:
                continue
            cfg = ppo_cfg if task.startswith("ppo") else dqn_cfg
            t = time.perf_counter()
            if task.endswith("-sps"):
                results = run_throughput(members, task, seed, cfg)
            elif task == "ppo-e2e":
                results = [run_e2e(members[0][0], seed, cfg, args.quick)]
            else:
                results = [run_worker(members[0][0], task, seed, cfg)]
            for (lib, key), res in zip(keys, results):
                R[(lib, key)].append(res)
                detail = (f"{res['sps']:,.0f} steps/s" if "sps" in res else
                          f"solved={res['solved']} steps={res['steps']:,} best={res['best_eval']}")
                print(f"[seed {seed}] {key:11s} {lib:6s} {detail}  ({time.perf_counter() - t:.1f}s)",
                      file=sys.stderr, flush=True)
    if args.only:
        return 0
    meta["elapsed"] = time.perf_counter() - start
    meta["load_after"] = loadavg()
    report = build_report(R, args.seeds, args, meta)
    print(report)
    if args.out:
        write_section(args.out, report, START, END)
        print(f"wrote {args.out}", file=sys.stderr)
    return 0


START, END = "<!-- bench_cartpole: start -->", "<!-- bench_cartpole: end -->"



if __name__ == "__main__":
    raise SystemExit(main())
