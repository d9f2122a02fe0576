#!/usr/bin/env python
"""How fast PPO on Pong could possibly run on this CPU: floating-point operations per env step
(counted with ``torch.utils.flop_counter``) against the best convolution rate measured here.

PPO with rl-zoo3's Atari settings (``bench_atari.py``'s): per rollout of 8 envs x 128 steps, 128
acting forward passes of the Nature CNN on 8 frame stacks, then 4 epochs x 4 minibatches of 256
forward + backward passes. The bound divides Stable-Baselines3's measured seconds per env step
(median of ``results_atari.jsonl``'s CPU jobs at the standard budget, as its report) by the time canter's arithmetic alone would take at the best
rate this machine reaches on the same network (a forward pass at batch 256, the most efficient
part), i.e. the largest canter/SB3 frames-per-second ratio possible with zero overhead.

    python benchmarks/atari_flops.py          # 2 torch threads, as bench_atari.py
"""
from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import input_error, read_jsonl  # noqa: E402
from bench_atari import ENV_ID, JSONL, PPO, THREADS, standard_cpu_jobs  # noqa: E402
from offpolicy_flops import _flops, _time  # noqa: E402


def sb3_seconds_per_env_step(path: Path) -> float:
    """SB3's PPO seconds per env step (4 frames): the median over the jobs in ``path`` that the report compares,
    not a ``--steps`` smoke job's or one off the CPU."""
    rows = [r for r in standard_cpu_jobs(read_jsonl(path, ("lib", "algo", "fps"))) if r["lib"] == "sb3" and r["algo"] == "ppo"]
    if not rows:
        input_error(f"no SB3 PPO jobs at the standard budget on the CPU in {path}")
    return 4 / statistics.median(r["fps"] for r in rows)


def main() -> None:
    """Count, time and print one JSON line and a markdown table."""
    import canter

    torch.set_num_threads(THREADS)
    rollout = PPO["n_envs"] * 128
    hp = {k: v for k, v in PPO.items() if k != "n_envs"}
    trainer = canter.make_trainer("ppo", ENV_ID, seed=1, max_steps=10 * rollout, n_envs=PPO["n_envs"],
                                  torch_threads=THREADS, eval_every=0, eval_episodes=1, eval_envs=1,
                                  sets=["target_reward=null"], hparams=hp)
    algo = trainer.algorithm
    batches: list = []
    learn = algo.learn
    algo.learn = lambda batch: batches.append(batch) or learn(batch)  # keep one rollout batch
    timings = []
    it = iter(trainer())
    for _ in range(3):  # warm-up + two timed iterations (collection + update)
        t = time.perf_counter()
        next(it)
        timings.append(time.perf_counter() - t)
    algo.learn = learn
    batch = batches[-1]
    update_flops = _flops(lambda: learn(batch))
    obs8 = batch.obs[: PPO["n_envs"]]
    with torch.no_grad():
        act_flops = _flops(lambda: algo.act(obs8))
    per_step = (update_flops + 128 * act_flops) / rollout
    mb = batch.obs[:256]
    model = algo.model
    with torch.no_grad():
        fwd_flops = _flops(lambda: model.action_value(mb))
        fwd_s = _time(lambda: model.action_value(mb), 10)
    best_rate = fwd_flops / fwd_s
    canter_s = statistics.median(timings[1:]) / rollout
    sb3_s = sb3_seconds_per_env_step(JSONL)
    ideal_s = per_step / best_rate
    res = {"gflop_per_env_step": per_step / 1e9, "update_gflop_per_rollout": update_flops / 1e9,
           "act_mflop_per_call": act_flops / 1e6, "best_rate_gflops": best_rate / 1e9,
           "canter_ms_per_env_step": canter_s * 1e3, "canter_gflops_achieved": per_step / canter_s / 1e9,
           "ideal_ms_per_env_step": ideal_s * 1e3, "sb3_ms_per_env_step": sb3_s * 1e3, "bound_ratio": sb3_s / ideal_s,
           "threads": THREADS}
    print(json.dumps(res))
    print("\n| quantity | value |\n|---|---|")
    print(f"| GFLOP per env step (update share + acting) | {res['gflop_per_env_step']:.3f} |")
    print(f"| best rate here: Nature CNN forward, batch 256, {THREADS} threads | {res['best_rate_gflops']:.1f} GFLOP/s |")
    print(f"| canter: measured ms per env step (collection + update) | {res['canter_ms_per_env_step']:.2f} "
          f"({res['canter_gflops_achieved']:.1f} GFLOP/s achieved) |")
    print(f"| ms per env step at the best rate (zero overhead) | {res['ideal_ms_per_env_step']:.2f} |")
    print(f"| SB3: measured ms per env step (median of results_atari.jsonl) | {res['sb3_ms_per_env_step']:.2f} |")
    print(f"| bound on canter/SB3 frames per second | {res['bound_ratio']:.2f} |")


if __name__ == "__main__":
    main()
