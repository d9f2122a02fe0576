"""The markdown report of ``bench_cartpole.py`` from its results."""
from __future__ import annotations

import argparse
import json
import os

from _report import fmt, ratio


def solved(results: list[dict], key: str) -> list[float | None]:
    """``key`` of each result, None where the run did not reach the target."""
    return [r[key] if r["solved"] else None for r in results]


def build_report(R: dict, seeds: list[int], args: argparse.Namespace, meta: dict) -> str:
    """The CartPole report (markdown) from the results of every task and seed."""
    from bench_cartpole import DQN_DEFAULT_THREADS, EVAL_ENVS, EVAL_EPISODES, TARGET

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
        lines.append(f"| {algo.upper()} | {cfg['max_steps']:,} steps | {fmt(a, 0)} | {fmt(b, 0)} | {ratio(a, b)} |")
    a2 = [r["sps"] for r in R[(c, f"dqn-sps-t{DQN_DEFAULT_THREADS}")]]
    if a2:
        b1 = [r["sps"] for r in R[(s, "dqn-sps")]]
        b2 = [r["sps"] for r in R.get((s, f"dqn-sps-t{DQN_DEFAULT_THREADS}"), [])]
        best = [max(x, y) for x, y in zip(b1, b2)] if b2 else b1  # SB3's faster setting, seed by seed
        lines.append(f"| DQN, canter at {DQN_DEFAULT_THREADS} threads (SB3: the faster of its 1- and"
                     f" {DQN_DEFAULT_THREADS}-thread runs of each seed) | {R['dqn_cfg']['max_steps']:,} steps"
                     f" | {fmt(a2, 0)} | {fmt(best, 0)} | {ratio(a2, best)} |")
        if b2:
            lines.append(f"| DQN, SB3 at {DQN_DEFAULT_THREADS} threads (reference; last column: SB3 at"
                         f" {DQN_DEFAULT_THREADS} threads / SB3 at 1) | {R['dqn_cfg']['max_steps']:,} steps | "
                         f"| {fmt(b2, 0)} | {ratio(b2, b1)} |")
    lines.append("")
    lines.append(f"## Time to a mean evaluation return >= {TARGET:g} (same hyperparameters)\n")
    lines.append("Total = process start (just before the subprocess is spawned) to the end of the training call;"
                 " it includes Python start-up, imports (also shown on their own), building envs and model,"
                 " training and the periodic evaluations.\n")
    lines.append("| algorithm | lib | total s | of which imports s | training call s | env steps used (transitions)"
                 " | solved |")
    lines.append("|---|---|---|---|---|---|---|")
    for algo in ("ppo", "dqn"):
        for lib, name in ((c, "canter"), (s, "SB3")):
            rs = R[(lib, f"{algo}-t2t")]
            lines.append(
                f"| {algo.upper()} | {name} | {fmt(solved(rs, 'total_s'))} | {fmt([r['import_s'] for r in rs], 2)}"
                f" | {fmt(solved(rs, 'train_call_s'))} | {fmt([r.get('transitions', r['steps']) for r in rs], 0)}"
                f" | {sum(r['solved'] for r in rs)}/{len(rs)} |")
        a, b = R[(c, f"{algo}-t2t")], R[(s, f"{algo}-t2t")]
        lines.append(f"| {algo.upper()} | **ratio canter/SB3** | {ratio(solved(a, 'total_s'), solved(b, 'total_s'))}"
                     f" | | {ratio(solved(a, 'train_call_s'), solved(b, 'train_call_s'))} | | |")
    lines.append("")
    lines.append("## End to end: whole process, canter's CLI preset vs an SB3 script with rl-zoo3's preset\n")
    lines.append("| lib | command | wall s (incl. Python start-up) | env steps used (transitions) | solved |")
    lines.append("|---|---|---|---|---|")
    ce, se = R[(c, "ppo-e2e")], R[(s, "ppo-e2e")]
    lines.append(f"| canter | `{ce[0]['command']}` "
                 f"| {fmt(solved(ce, 'e2e_s'))} | {fmt([r.get('transitions', r['steps']) for r in ce], 0)}"
                 f" | {sum(r['solved'] for r in ce)}/{len(ce)} |")
    lines.append(f"| SB3 | `python bench_cartpole.py --worker sb3 ppo-e2e` (PPO + EvalCallback stop at 475) "
                 f"| {fmt(solved(se, 'e2e_s'))} | {fmt([r['steps'] for r in se], 0)}"
                 f" | {sum(r['solved'] for r in se)}/{len(se)} |")
    lines.append(f"| **ratio canter/SB3** | | {ratio(solved(ce, 'e2e_s'), solved(se, 'e2e_s'))} | | |")
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
        " throughput and the steps-used columns leave out (`transitions` in the raw results; end to end: the run"
        " directory's steps less those resets); SB3's VecEnvs reset inside the ending step.\n"
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
