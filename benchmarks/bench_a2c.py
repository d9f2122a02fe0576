#!/usr/bin/env python
"""canter vs Stable-Baselines3: A2C on CartPole-v1 with rl-zoo3's settings, env-steps/s side by side.

Every measurement is its own fresh Python subprocess (this script in ``--worker`` mode), run one
after another, canter and SB3 alternating, with one torch thread and the same seed in both.

    python benchmarks/bench_a2c.py --quick                           # smoke check
    python benchmarks/bench_a2c.py --seeds 1 2 3 --out benchmarks/RESULTS.md

``--out`` replaces only this benchmark's section of the file (between its markers).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _common import (BenchParser, check_section_markers, one_line_errors, positive_int, real_transitions,
                     replace_section, require_sb3, seed_int, tagged_json, time_training)
from _report import cpu_model, fmt, loadavg, ratio, versions

ENV_ID = "CartPole-v1"
RESULT_TAG = "BENCH_RESULT "
START, END = "<!-- bench_a2c:start -->", "<!-- bench_a2c:end -->"
# rl-zoo3's A2C CartPole-v1 entry (8 envs, ent_coef 0) on top of SB3's A2C defaults, spelled out.
A2C = dict(n_envs=8, n_steps=5, lr=7e-4, gamma=0.99, gae_lambda=1.0, ent_coef=0.0, vf_coef=0.5, max_grad_norm=0.5,
           rms_alpha=0.99, rms_eps=1e-5, max_steps=200_000)


def worker(lib: str, seed: int, cfg: dict) -> None:
    """Train for ``cfg['max_steps']`` env steps without evaluation; print the throughput."""
    import torch

    torch.set_num_threads(1)
    if lib == "canter":
        import canter

        hp = dict(n_steps=cfg["n_steps"], lr=cfg["lr"], lr_schedule="constant", gamma=cfg["gamma"],
                  gae_lambda=cfg["gae_lambda"], ent_coef=cfg["ent_coef"], vf_coef=cfg["vf_coef"],
                  max_grad_norm=cfg["max_grad_norm"], optimizer="rmsprop", rms_alpha=cfg["rms_alpha"],
                  optimizer_eps=cfg["rms_eps"], normalize_advantage=False, net_arch=[64, 64], activation="tanh",
                  ortho_init=True, shared_trunk=False, normalize_obs=False, normalize_reward=False)
        trainer = canter.make_trainer("a2c", ENV_ID, seed=seed, n_envs=cfg["n_envs"], max_steps=cfg["max_steps"],
                                      torch_threads=1, eval_every=0, eval_episodes=1, sets=["target_reward=null"],
                                      hparams=hp)
        loop_s = time_training(trainer)
        steps, transitions = trainer.step, real_transitions(trainer)  # less its reset-only steps
        trainer.close()
    else:
        from stable_baselines3 import A2C as SB3A2C
        from stable_baselines3.common.env_util import make_vec_env

        env = make_vec_env(ENV_ID, n_envs=cfg["n_envs"], seed=seed)
        model = SB3A2C("MlpPolicy", env, learning_rate=cfg["lr"], n_steps=cfg["n_steps"], gamma=cfg["gamma"],
                       gae_lambda=cfg["gae_lambda"], ent_coef=cfg["ent_coef"], vf_coef=cfg["vf_coef"],
                       max_grad_norm=cfg["max_grad_norm"], rms_prop_eps=cfg["rms_eps"], use_rms_prop=True,
                       normalize_advantage=False, seed=seed, device="cpu", verbose=0)
        t0 = time.perf_counter()
        model.learn(total_timesteps=cfg["max_steps"])
        loop_s = time.perf_counter() - t0
        steps = transitions = int(model.num_timesteps)
    print(RESULT_TAG + json.dumps({"lib": lib, "seed": seed, "steps": steps, "transitions": transitions,
                                   "loop_s": loop_s, "sps": transitions / loop_s,
                                   "threads": torch.get_num_threads()}), flush=True)


def run_worker(lib: str, seed: int, cfg: dict) -> dict:
    """Run :func:`worker` in a fresh subprocess and return its result line."""
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", lib, "--seed", str(seed), "--cfg", json.dumps(cfg)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"worker failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-3000:]}")
    return tagged_json(proc.stdout, RESULT_TAG)


def build_section(results: dict, cfg: dict, seeds: list[int], meta: dict, quick: bool) -> str:
    """The A2C section of RESULTS.md from the per-seed results of both libraries."""
    a = [r["sps"] for r in results["canter"]]
    b = [r["sps"] for r in results["sb3"]]
    q = " (QUICK smoke run: numbers are meaningless)" if quick else ""
    lines = [START, f"## A2C vs SB3 (CartPole-v1, rl-zoo3 settings){q}\n",
             f"Seeds: {' '.join(map(str, seeds))}; median (min–max) over seeds; ratio = canter / SB3 per seed, then"
             " median (above 1: canter is faster).\n",
             "| algorithm | budget | canter env-steps/s | SB3 env-steps/s | ratio canter/SB3 |", "|---|---|---|---|---|",
             f"| A2C | {cfg['max_steps']:,} steps | {fmt(a, 0)} | {fmt(b, 0)} | {ratio(a, b)} |", "",
             f"- Settings (rl-zoo3's CartPole-v1 entry on SB3's A2C defaults, identical in both): {cfg['n_envs']} envs,"
             f" n_steps {cfg['n_steps']}, RMSprop lr {cfg['lr']} (alpha {cfg['rms_alpha']}, eps {cfg['rms_eps']}),"
             f" gamma {cfg['gamma']}, n-step returns (GAE lambda {cfg['gae_lambda']}), ent_coef {cfg['ent_coef']},"
             f" vf_coef {cfg['vf_coef']}, grad clip {cfg['max_grad_norm']}, separate 64-64 tanh actor and critic,"
             " orthogonal init, no advantage normalisation.",
             "- Throughput: env steps / seconds of the training loop (SB3: `model.learn()`; canter: iterating"
             " `trainer()` built with `eval_every=0` and no target; the one evaluation canter runs after the budget is"
             " timed and subtracted). Model/env construction is excluded. SB3 uses `make_vec_env` (DummyVecEnv);"
             " canter uses gymnasium's native CartPoleVectorEnv. canter logs one record every 25 iterations (the"
             " preset's `log_every`), SB3 every 100 (its default `log_interval`), both to nothing. Env steps are"
             " transitions: canter's reset-only steps after each episode's end (NEXT_STEP autoreset) are left out.",
             f"- Reproduce: `{meta['command']}`; {meta['date']}; CPU {meta['cpu']} ({os.cpu_count()} cores visible),"
             f" load average before/after {meta['load_before']} / {meta['load_after']} (shared machine); "
             + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()) + ".",
             "", "<details><summary>Raw per-run results (JSON)</summary>\n", "```json"]
    lines += [json.dumps({k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()})
              for lib in ("canter", "sb3") for r in results[lib]]
    lines += ["```\n</details>", END]
    return "\n".join(lines) + "\n"


@one_line_errors
def main(argv: list[str] | None = None) -> int:
    """Command line: measure both libraries over ``--seeds`` and print (or write) the section."""
    p = BenchParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", type=seed_int, nargs="+", default=[1])
    p.add_argument("--steps", type=positive_int, default=A2C["max_steps"], help="env steps per measurement")
    p.add_argument("--quick", action="store_true", help="tiny budget, for checking that the script runs")
    p.add_argument("--out", help="update this file's A2C section (e.g. benchmarks/RESULTS.md)")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--seed", type=seed_int, default=1, help=argparse.SUPPRESS)
    p.add_argument("--cfg", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    require_sb3()
    if args.worker:
        worker(args.worker, args.seed, json.loads(args.cfg))
        return 0
    if args.out:  # before the runs: a file whose section cannot be written is refused now
        check_section_markers(args.out, START, END)
    cfg = dict(A2C, max_steps=4000 if args.quick else args.steps)
    meta = {"date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"), "cpu": cpu_model(),
            "load_before": loadavg(), "versions": versions(),
            "command": "python benchmarks/bench_a2c.py " + " ".join(
                (["--quick"] if args.quick else []) + ["--seeds", *map(str, args.seeds)]
                + ([] if args.steps == A2C["max_steps"] else ["--steps", str(args.steps)])
                + (["--out", args.out] if args.out else []))}
    results: dict[str, list[dict]] = {"canter": [], "sb3": []}
    for seed in args.seeds:
        for lib in ("canter", "sb3"):
            t = time.perf_counter()
            res = run_worker(lib, seed, cfg)
            results[lib].append(res)
            print(f"[seed {seed}] {lib:6s} {res['sps']:,.0f} steps/s ({time.perf_counter() - t:.1f}s)", file=sys.stderr,
                  flush=True)
    meta["load_after"] = loadavg()
    section = build_section(results, cfg, args.seeds, meta, args.quick)
    print(section)
    if args.out:
        replace_section(Path(args.out), section, START, END)
        print(f"updated {args.out}", file=sys.stderr)
    a = statistics.median(r["sps"] for r in results["canter"])
    b = statistics.median(r["sps"] for r in results["sb3"])
    print(f"median ratio of medians: {a / b:.2f}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
