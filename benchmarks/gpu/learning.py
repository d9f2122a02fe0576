"""Learning checks on a GPU: DQN on CartPole-v1, SAC and PPO on Pendulum-v1, each with its preset and
device=cuda, until the target evaluation return or the preset's budget; prints one row per run and writes
them to $OUT/learn.json. Run after benchmarks/gpu/check.sh (which installs gymnasium into /tmp/gw):
``PYTHONPATH=$PWD:/tmp/gw python3 benchmarks/gpu/learning.py``."""
import json
import os
import tempfile
import time

import canter

RUNS = [("dqn", "CartPole-v1", 475), ("sac", "Pendulum-v1", -200), ("ppo", "Pendulum-v1", -300)]


def main() -> None:
    """Train each of RUNS on cuda with its preset and report whether it reached its target."""
    rows = []
    for algo, env, target in RUNS:
        start = time.time()
        with tempfile.TemporaryDirectory() as tmp:
            canter.train(algo, env=env, target_reward=target, seed=0, device="cuda", tensorboard=False,
                         run_dir=f"{tmp}/run", quiet=True)
            with open(f"{tmp}/run/summary.json") as f:
                summary = json.load(f)
        row = dict(algo=algo, env=env, target=target, solved=summary["solved"], best=summary["best_eval_return"],
                   steps=summary["steps"], wall=round(time.time() - start, 1))
        print(row, flush=True)
        rows.append(row)
    with open(os.path.join(os.environ.get("OUT", "/tmp"), "learn.json"), "w") as f:
        json.dump(rows, f)


if __name__ == "__main__":
    main()
