#!/usr/bin/env python
"""Where the time of one SAC / TD3 gradient step goes, canter vs Stable-Baselines3 (Pendulum-v1,
the speed benchmark's hyperparameters): floating-point operations of one update counted with
``torch.utils.flop_counter``, seconds per update, and the float32 matmul rate of this CPU.

    python benchmarks/offpolicy_flops.py            # one torch thread, float32 (highest precision)

Each result line is printed and appended (``kind: flops``) to ``benchmarks/offpolicy_results.jsonl``;
``bench_offpolicy.py report`` puts them under the speed table.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import torch
from torch.utils.flop_counter import FlopCounterMode

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_offpolicy import SPEED, _append, _meta  # noqa: E402

WARM, REPS = 400, 300


def _time(fn, reps: int = REPS) -> float:
    fn()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t0) / reps


def _flops(fn) -> int:
    """Floating-point operations of ``fn()`` by torch's counter. canter's oneDNN route for large
    products (``torch.ops.mkldnn._linear_pointwise``) is not in the counter's table, so it is
    switched off while counting: the same products then run, and are counted, as aten mm/addmm."""
    from canter.models import linear

    before = os.environ.get("CANTER_ONEDNN")
    os.environ["CANTER_ONEDNN"] = "0"
    linear.onednn_available.cache_clear()
    try:
        with FlopCounterMode(display=False) as counter:
            fn()
    finally:
        if before is None:
            os.environ.pop("CANTER_ONEDNN")
        else:
            os.environ["CANTER_ONEDNN"] = before
        linear.onednn_available.cache_clear()
    return counter.get_total_flops()


def canter_update(algo: str):
    """A function doing one canter update of ``algo`` on Pendulum, after warming up its trainer and replay buffer."""
    import canter

    hp = dict(SPEED[algo], **({"action_noise": "normal"} if algo == "td3" else {}))
    trainer = canter.make_trainer(algo, "Pendulum-v1", seed=1, max_steps=WARM + 10, eval_every=0, eval_episodes=1,
                                  torch_threads=1, sets=["target_reward=null"], hparams=hp)
    for rec in trainer():
        if rec.step >= WARM:
            break
    agent, buf = trainer.agent, trainer.buffer

    def step() -> None:
        agent.learn(agent.prepare_replay_batch(buf.sample(256)))
    return step


def sb3_update(algo: str):
    """The same for SB3: a function doing one gradient step of a warmed-up model."""
    import numpy as np
    from stable_baselines3 import SAC, TD3
    from stable_baselines3.common.noise import NormalActionNoise

    cfg = SPEED[algo]
    common = dict(learning_rate=cfg["lr"], buffer_size=cfg["buffer_size"], batch_size=cfg["batch_size"],
                  gamma=cfg["gamma"], tau=cfg["tau"], train_freq=cfg["train_freq"], gradient_steps=1,
                  learning_starts=cfg["learning_starts"], policy_kwargs=dict(net_arch=cfg["net_arch"]), seed=1,
                  device="cpu", verbose=0)
    if algo == "sac":
        model = SAC("MlpPolicy", "Pendulum-v1", **common)
    else:
        model = TD3("MlpPolicy", "Pendulum-v1", action_noise=NormalActionNoise(np.zeros(1), 0.1 * np.ones(1)),
                    **common)
    model.learn(WARM)
    return lambda: model.train(gradient_steps=1, batch_size=cfg["batch_size"])


def main() -> None:
    """Count FLOPs per update of both libraries and print the bound they put on the speed ratio."""
    torch.set_num_threads(1)
    a, b = torch.randn(256, 256), torch.randn(256, 256)
    gemm = 2 * 256**3 / _time(lambda: a @ b, 2000)
    meta = _meta()
    for algo in ("sac", "td3"):
        for lib, make in (("canter", canter_update), ("sb3", sb3_update)):
            fn = make(algo)
            # TD3 updates its actor every second step: count and time two updates, report per update
            flops = (_flops(fn) + _flops(fn)) / 2
            sec = _time(fn)
            res = {"kind": "flops", "algo": algo, "lib": lib, "mflop_per_update": flops / 1e6,
                   "ms_per_update": sec * 1e3, "gflops_achieved": flops / sec / 1e9, "sgemm_256_gflops": gemm / 1e9,
                   "ms_at_sgemm_rate": flops / gemm * 1e3}
            print(json.dumps(res), flush=True)
            _append({**res, **meta})


if __name__ == "__main__":
    main()
