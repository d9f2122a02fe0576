#!/usr/bin/env python
"""How fast DQN on CartPole (rl-zoo3's settings, ``bench_cartpole.py``'s) could possibly run on this
CPU at float32 with one torch thread: floating-point operations per env step, counted with
``torch.utils.flop_counter``, against the best matmul rate canter's kernels (``canter.models.linear``)
reach here.

Per 256 env steps: 256 acting forward passes (batch 1) and 128 gradient steps on batches of 64
(online forward + backward, target forward) through the 256-256 ReLU Q-network. The bound divides
Stable-Baselines3's measured seconds per env step (median of the ``dqn-sps`` rows in the raw
results of ``RESULTS.md``) by the time these operations alone take at the best rate, i.e. the
largest canter/SB3 env-steps/s ratio possible with zero overhead (no env, no Python, no optimizer).

    python benchmarks/cartpole_dqn_flops.py
"""
from __future__ import annotations

import json
import re
import statistics
import sys
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_cartpole import DQN, _canter_trainer  # noqa: E402
from offpolicy_flops import _flops, _time  # noqa: E402


def main() -> None:
    """Count, time, print one JSON line and a markdown table."""
    torch.set_num_threads(1)
    cfg = dict(DQN, max_steps=3000)
    trainer = _canter_trainer("dqn", cfg, 1, with_target=False, threads=1)
    for _ in trainer():
        pass
    algo, buf = trainer.algorithm, trainer.buffer
    steps = cfg["gradient_steps"]
    big = buf.sample(cfg["batch_size"] * steps)
    update = _flops(lambda: algo.learn_phase(big, steps)) / steps
    obs1 = big.obs[:1]
    with torch.no_grad():
        act = _flops(lambda: algo.act(obs1))
    per_step = update * steps / cfg["train_freq"] + act
    rates = {}
    from canter.models.linear import linear

    for m, k, n in ((64, 256, 256), (256, 256, 256), (2048, 256, 256)):
        a, w = torch.randn(m, k), torch.randn(n, k)  # canter's route: oneDNN on AMD CPUs, else MKL
        rates[f"{m}x{k}x{n}"] = 2 * m * k * n / _time(lambda: linear(a, w), 500)
    best = max(rates.values())
    raw = (HERE / "RESULTS.md").read_text()
    sb3 = [json.loads(line)["sps"] for line in re.findall(r'^\{"lib": "sb3", "task": "dqn-sps".*$', raw, re.M)]
    sb3_s = 1 / statistics.median(sb3)
    ideal_s = per_step / best
    res = {"mflop_per_update": update / 1e6, "mflop_per_env_step": per_step / 1e6,
           "matmul_gflops": {k: v / 1e9 for k, v in rates.items()}, "ideal_us_per_env_step": ideal_s * 1e6,
           "sb3_us_per_env_step": sb3_s * 1e6, "sb3_runs": len(sb3), "bound_ratio": sb3_s / ideal_s}
    print(json.dumps(res))
    print("\n| quantity | value |\n|---|---|")
    print(f"| MFLOP per gradient step (batch 64: online forward + backward, target forward) | {update / 1e6:.1f} |")
    print(f"| MFLOP per env step (half a gradient step + one acting forward) | {per_step / 1e6:.1f} |")
    print("| float32 matmul rate, one thread | " + ", ".join(f"{k}: {v / 1e9:.0f}" for k, v in rates.items())
          + " GFLOP/s |")
    print(f"| µs per env step at the best rate (zero overhead) | {ideal_s * 1e6:.0f} |")
    print(f"| SB3: measured µs per env step (median of {len(sb3)} runs) | {sb3_s * 1e6:.0f} |")
    print(f"| bound on canter/SB3 env-steps/s | {sb3_s / ideal_s:.2f} |")


if __name__ == "__main__":
    main()
