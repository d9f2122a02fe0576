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
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import (real_transitions, require_sb3, sb3_progress_callback, sb3_timed_learn, tagged_json,
                     timed_loop, write_section)
from _interleave import ProgressReporter, results_in_turns

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
    return {"lib": "canter", "task": "ppo-e2e", "seed": seed, "e2e_s": wall, "steps": summary["steps"],
            "best_eval": summary["best_eval_return"], "solved": bool(summary["solved"]),
            "command": " ".join(["canter"] + cmd[len(canter_command()):]).replace(str(run_dir), "<tmp>")}


def cpu_model() -> str:
    """The CPU's name with its family and model numbers: the cloud hosts this runs on share one name
    ("AMD EPYC") across generations whose small float32 products differ by ~1.6x."""
    from canter.utils import cpu_info

    name = cpu_info("model name") or platform.processor() or "unknown"
    family, model = cpu_info("cpu family"), cpu_info("model")
    if family and model:
        avx512 = "avx512f" in (cpu_info("flags") or "").split()
        name += f" (family {family}, model {model}{', AVX-512' if avx512 else ''})"
    return name


def loadavg() -> str:
    """The 1, 5 and 15 minute load averages (``n/a`` where /proc is missing)."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def versions() -> dict:
    """Versions of the libraries compared, read in a fresh interpreter, and Python's."""
    code = ("import json, torch, gymnasium, stable_baselines3, canter, numpy;"
            "print(json.dumps({'torch': torch.__version__, 'stable-baselines3': stable_baselines3.__version__,"
            "'gymnasium': gymnasium.__version__, 'canter': canter.__version__, 'numpy': numpy.__version__}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    v = json.loads(out.strip().splitlines()[-1])
    v["python"] = platform.python_version()
    return v


def _fmt(values: list[float | None], digits: int = 1) -> str:
    vals = [v for v in values if v is not None]
    if not vals:
        return "n/a"
    med = statistics.median(vals)
    text = f"{med:,.{digits}f}"
    if len(vals) > 1:
        text += f" ({min(vals):,.{digits}f}–{max(vals):,.{digits}f})"
    if len(vals) < len(values):
        text += f" [{len(values) - len(vals)} unsolved]"
    return text


def _ratio(a: list[float | None], b: list[float | None]) -> str:
    pairs = [(x, y) for x, y in zip(a, b) if x is not None and y]
    if not pairs:
        return "n/a"
    r = [x / y for x, y in pairs]
    text = f"{statistics.median(r):.2f}"
    if len(r) > 1:
        text += f" ({min(r):.2f}–{max(r):.2f})"
    return text


def _solved(results: list[dict], key: str) -> list[float | None]:
    return [r[key] if r["solved"] else None for r in results]


def build_report(R: dict, seeds: list[int], args: argparse.Namespace, meta: dict) -> str:
    """The CartPole report (markdown) from the results of every task and seed."""
    c, s = "canter", "sb3"
    lines = []
    q = " (QUICK smoke run: tiny budgets, targets not expected; numbers are meaningless)" if args.quick else ""
    lines.append(f"# canter vs Stable-Baselines3 on CartPole-v1{q}\n")
    lines.append(f"Seeds: {' '.join(map(str, seeds))}. Cells are the median over seeds, with (min–max) when there is"
                 " more than one seed. Ratio = canter / SB3 of that column's quantity, per seed, then median: for"
                 " steps/s above 1 means canter is faster; for seconds below 1 means canter is faster.\n")
    lines.append("## Throughput (pure training, no evaluation during the run)\n")
    lines.append("| algorithm | budget | canter env-steps/s | SB3 env-steps/s | ratio canter/SB3 |")
    lines.append("|---|---|---|---|---|")
    for algo, cfg in (("ppo", R["ppo_cfg"]), ("dqn", R["dqn_cfg"])):
        a = [r["sps"] for r in R[(c, f"{algo}-sps")]]
        b = [r["sps"] for r in R[(s, f"{algo}-sps")]]
        lines.append(f"| {algo.upper()} | {cfg['max_steps']:,} steps | {_fmt(a, 0)} | {_fmt(b, 0)} | {_ratio(a, b)} |")
    a2 = [r["sps"] for r in R[(c, f"dqn-sps-t{DQN_DEFAULT_THREADS}")]]
    if a2:
        b1 = [r["sps"] for r in R[(s, "dqn-sps")]]
        b2 = [r["sps"] for r in R.get((s, f"dqn-sps-t{DQN_DEFAULT_THREADS}"), [])]
        best = [max(x, y) for x, y in zip(b1, b2)] if b2 else b1  # SB3's faster setting, seed by seed
        lines.append(f"| DQN, canter at {DQN_DEFAULT_THREADS} threads (SB3: the faster of its 1- and"
                     f" {DQN_DEFAULT_THREADS}-thread runs of each seed) | {R['dqn_cfg']['max_steps']:,} steps"
                     f" | {_fmt(a2, 0)} | {_fmt(best, 0)} | {_ratio(a2, best)} |")
        if b2:
            lines.append(f"| DQN, SB3 at {DQN_DEFAULT_THREADS} threads (reference; last column: SB3 at"
                         f" {DQN_DEFAULT_THREADS} threads / SB3 at 1) | {R['dqn_cfg']['max_steps']:,} steps | "
                         f"| {_fmt(b2, 0)} | {_ratio(b2, b1)} |")
    lines.append("")
    lines.append(f"## Time to a mean evaluation return >= {TARGET:g} (same hyperparameters)\n")
    lines.append("Total = process start (just before the subprocess is spawned) to the end of the training call;"
                 " it includes Python start-up, imports (also shown on their own), building envs and model,"
                 " training and the periodic evaluations.\n")
    lines.append("| algorithm | lib | total s | of which imports s | training call s | steps used | solved |")
    lines.append("|---|---|---|---|---|---|---|")
    for algo in ("ppo", "dqn"):
        for lib, name in ((c, "canter"), (s, "SB3")):
            rs = R[(lib, f"{algo}-t2t")]
            lines.append(
                f"| {algo.upper()} | {name} | {_fmt(_solved(rs, 'total_s'))} | {_fmt([r['import_s'] for r in rs], 2)}"
                f" | {_fmt(_solved(rs, 'train_call_s'))} | {_fmt([r['steps'] for r in rs], 0)}"
                f" | {sum(r['solved'] for r in rs)}/{len(rs)} |")
        a, b = R[(c, f"{algo}-t2t")], R[(s, f"{algo}-t2t")]
        lines.append(f"| {algo.upper()} | **ratio canter/SB3** | {_ratio(_solved(a, 'total_s'), _solved(b, 'total_s'))}"
                     f" | | {_ratio(_solved(a, 'train_call_s'), _solved(b, 'train_call_s'))} | | |")
    lines.append("")
    lines.append("## End to end: whole process, canter's CLI preset vs an SB3 script with rl-zoo3's preset\n")
    lines.append("| lib | command | wall s (incl. Python start-up) | steps used | solved |")
    lines.append("|---|---|---|---|---|")
    ce, se = R[(c, "ppo-e2e")], R[(s, "ppo-e2e")]
    lines.append(f"| canter | `{ce[0]['command']}` "
                 f"| {_fmt(_solved(ce, 'e2e_s'))} | {_fmt([r['steps'] for r in ce], 0)}"
                 f" | {sum(r['solved'] for r in ce)}/{len(ce)} |")
    lines.append(f"| SB3 | `python bench_cartpole.py --worker sb3 ppo-e2e` (PPO + EvalCallback stop at 475) "
                 f"| {_fmt(_solved(se, 'e2e_s'))} | {_fmt([r['steps'] for r in se], 0)}"
                 f" | {sum(r['solved'] for r in se)}/{len(se)} |")
    lines.append(f"| **ratio canter/SB3** | | {_ratio(_solved(ce, 'e2e_s'), _solved(se, 'e2e_s'))} | | |")
    lines.append("")
    lines.append("## How it was measured\n")
    lines.append(
        "- Each cell is a fresh `python` subprocess; both libraries call"
        " `torch.set_num_threads(1)` (canter via `torch_threads=1`), same seed, CPU only. One extra row runs"
        f" canter's DQN at {DQN_DEFAULT_THREADS} threads, its default for 256-unit layers on 4+ CPUs (given to NumPy's"
        " OpenBLAS, which does that update's products, with torch at one thread), against SB3's faster setting"
        f" for the same seed: SB3's DQN also runs at {DQN_DEFAULT_THREADS} torch threads, in the same turns.\n"
        f"- PPO (rl-zoo3): 8 envs, n_steps 32, batch 256, 20 epochs, gamma 0.98, GAE 0.8, ent 0, linear LR from 1e-3,"
        " linear clip from 0.2, separate 64-64 tanh actor/critic with orthogonal init."
        " SB3: `make_vec_env` (DummyVecEnv); canter: gymnasium's native CartPoleVectorEnv.\n"
        "- DQN (rl-zoo3): 1 env, lr 2.3e-3, batch 64, buffer 100k, learning_starts 1000, gamma 0.99, target update"
        " every 10 steps, train_freq 256, 128 gradient steps, exploration 0.16 -> 0.04, net [256, 256] ReLU.\n"
        "- Throughput: env steps / seconds of the training loop (SB3: `model.learn()`; canter: iterating"
        " `trainer()`, built with `eval_every=0` and `target_reward` cleared). canter still evaluates once after"
        " the budget; that evaluation is left out. The processes of one task (PPO: canter and SB3; DQN: each"
        " library at 1 and at 2 threads) start together and take turns, one running while the others are held"
        " stopped (SIGSTOP/SIGCONT), the faster ones for 0.25 s and the slower ones proportionally longer so all"
        " finish together (`benchmarks/_interleave.py`); each one's seconds are the parts of its turns inside"
        " its training loop. So every library samples the same minutes of this shared host, whose speed drifts"
        " by up to ~2x from one minute to the next (measured one after another, the ratio moved with it). Model/env"
        " construction is excluded for both. Env steps are transitions: canter's NEXT_STEP autoreset spends one"
        " vector step resetting an env after each episode's end, which its step counter includes and the"
        " throughput leaves out (`transitions` in the raw results); SB3's VecEnvs reset inside the ending step.\n"
        f"- Time to target: {EVAL_EPISODES} deterministic episodes on a separate {EVAL_ENVS}-copy eval env, every 8192 env steps"
        " (PPO) / 5000 (DQN). SB3: `EvalCallback` + `StopTrainingOnRewardThreshold`; canter: `eval_every`,"
        " `target_reward=475`. SB3 PPO evaluates before the update of the rollout that crosses 8,192 env steps,"
        " canter after it (so at an evaluation canter has taken one more PPO update, or one more 128-step DQN"
        " phase, than SB3); SB3 DQN evaluates at env step 5,000, canter after the 256-step collection that crosses it."
        " These runs, and the end-to-end ones, run one after the other per seed (canter, then SB3), not in turns,"
        " so the host's drift moves them more than the throughput rows. With one seed, time to target is coarse: it jumps by a whole evaluation interval"
        " (8,192 / 5,000 steps) when the policy misses 475 by a little, so prefer `--seeds 1 2 3 ...`.\n"
        "- End to end: `subprocess` wall time of the whole command, each library with its own CartPole preset, so"
        " the settings differ: canter's (`canter/configs/ppo/CartPole-v1.yaml`, tuned with Optuna for wall time)"
        " has 16 envs, 10 epochs, constant lr 1.66e-3, gamma 0.99, GAE 0.95 and evaluates every 4,096 steps on"
        " 10 envs; rl-zoo3's has 8 envs, 20 epochs and (here) evaluates every 8,192 steps on 5 envs. The ratio"
        " measures the whole user experience, preset included; the time-to-target rows above compare the"
        " libraries at equal settings. canter's CLI also writes its run directory"
        " (config, parquet history, TensorBoard events, checkpoints); the SB3 script writes nothing. The canter"
        " console script is the one installed next to the interpreter, not a pyenv shim.\n"
    )
    lines.append("## Environment\n")
    lines.append(f"- Reproduce: `{meta['command']}`")
    lines.append(f"- Date: {meta['date']}")
    lines.append(f"- CPU: {meta['cpu']} ({os.cpu_count()} logical cores visible); load average before/after:"
                 f" {meta['load_before']} / {meta['load_after']} (the machine was shared)")
    lines.append("- Versions: " + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()))
    lines.append(f"- Benchmark wall time: {meta['elapsed']:.0f} s")
    lines.append("")
    lines.append("<details><summary>Raw per-run results (JSON)</summary>\n")
    lines.append("```json")
    for key, rs in R.items():
        if isinstance(key, tuple):
            for r in rs:
                lines.append(json.dumps({k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()}))
    lines.append("```\n</details>")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Command line: run the tasks over ``--seeds`` and print (or write) the report."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", type=int, nargs="+", default=[1], help="seeds (median and spread over them)")
    p.add_argument("--quick", action="store_true", help="tiny budgets, for checking that the script runs")
    p.add_argument("--out", help="write the markdown report here (e.g. benchmarks/RESULTS.md)")
    p.add_argument("--only", nargs="+", choices=("ppo-sps", "ppo-t2t", "dqn-sps", "dqn-t2t", "ppo-e2e"),
                   help=argparse.SUPPRESS)
    # internal: worker mode
    p.add_argument("--worker", nargs=2, metavar=("LIB", "TASK"), help=argparse.SUPPRESS)
    p.add_argument("--seed", type=int, default=1, help=argparse.SUPPRESS)
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
